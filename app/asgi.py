"""The composition root: settings, database, knowledge store, plugins, services, routes — wired
here only. Serve with ``python -m app.serve`` (uvicorn with the service's bounds: ``app.serve``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar, Request, Response
from litestar.config.app import AppConfig
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import OpenAPI
from litestar.plugins import InitPluginProtocol, PluginProtocol
from litestar.plugins.pydantic import PydanticPlugin
from opentelemetry.sdk.trace import TracerProvider
from sqlalchemy.ext.asyncio import AsyncSession

from app import __version__
from app.domain.audit.controller import AuditController
from app.domain.capacity.controller import CapacityController
from app.domain.capacity.service import CapacityService
from app.domain.catalog.controller import CatalogController
from app.domain.catalog.service import CatalogService
from app.domain.decisions.controller import DecisionController
from app.domain.decisions.service import DecisionService
from app.domain.explorer import controller as explorer
from app.domain.health.controller import HealthController
from app.domain.health.probe import SharedCheck
from app.domain.insights.controller import InsightsController
from app.domain.insights.service import InsightService
from app.domain.planning.controller import PlanningController
from app.domain.procurement import drift_controller
from app.domain.procurement.prices_controller import PriceBookController
from app.domain.procurement.watches_controller import WatchController
from app.domain.procurement.watches_dispatch import WatchDispatcher
from app.domain.shared.engine import BOOK, Engine
from app.host.manager import OptionHost, create_option_host
from app.kb import heap, keys
from app.kb.books import Books
from app.kb.db import database_config, migration_head, migration_revisions
from app.kb.notify import listener_dsn
from app.kb.repositories import AuditEventRepository, KnowledgeVersionRepository, RecommendationRepository
from app.kb.storage_state import StorageState, write_probe
from app.kb.store import KnowledgeStore
from app.kb.writer import RecommendationWriter
from app.openapi import docs_ui
from app.openapi.document import answered_media, complete_openapi, document_option_fields, document_when_asked
from app.openapi.generators import document_for_generators
from app.settings import Settings
from app.web import metrics, tracing
from app.web.allow import allow_every_method
from app.web.auth import ApiKeyMiddleware, KeyUsage, KeyVerifier, Lookup, Principal, document_security
from app.web.bodies import StrictJsonRequest
from app.web.caching import KnownEtags, known_not_modified, plugins_fingerprint
from app.web.degraded import DATABASE_EXCEPTION_HANDLERS
from app.web.dependencies import Dependencies
from app.web.edge import Edge
from app.web.known_keys import ActiveKeys, KnownKeys
from app.web.logs import configure_logging, flush_logs
from app.web.negotiation import JSON, negotiate, require_json_body
from app.web.offload import WorkerPool
from app.web.problems import EXCEPTION_HANDLERS, PROBLEM_TYPES
from app.web.public import PUBLIC_PATHS
from app.web.rate_limits import rate_limiter

#: response headers a browser page may read (CORS_ORIGINS)
EXPOSED_HEADERS = [
    "ETag",
    "Location",
    "Retry-After",
    "X-Request-ID",
    "X-Knowledge-Source",
    "RateLimit-Policy",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Content-Language",
    "Content-Disposition",
    "Deprecation",
    "Link",
]


def key_lookup(session_maker: Callable[[], AsyncSession]) -> Lookup:
    """Authentication's view of the ``api_keys`` table: a key's principal, or None when it is
    unknown or revoked."""

    async def lookup(key: str) -> Principal | None:
        async with session_maker() as session:
            row = await keys.find(session, key)
        if row is None or row.revoked_at is not None:
            return None
        expires_at = row.expires_at
        if expires_at is not None and expires_at.tzinfo is None:  # SQLite: naive, UTC
            expires_at = expires_at.replace(tzinfo=dt.UTC)
        return Principal(
            id=row.id,
            name=row.name,
            key_prefix=row.key_prefix,
            scopes=frozenset(row.scopes),
            expires_at=expires_at,
            org=row.org,
        )

    return lookup


def active_keys(session_maker: Callable[[], AsyncSession]) -> Callable[[], Awaitable[ActiveKeys]]:
    """The active keys' hashes for ``KnownKeys``: one query, in a session of its own."""

    async def load() -> ActiveKeys:
        async with session_maker() as session:
            return await keys.active_hashes(session)

    return load


def key_usage_writer(session_maker: Callable[[], AsyncSession]) -> Callable[[dict[int, dt.datetime]], Awaitable[None]]:
    """How ``KeyUsage`` writes ``last_used_at``: one short transaction per batch."""

    async def write(used: dict[int, dt.datetime]) -> None:
        async with session_maker() as session, session.begin():
            await keys.mark_used(session, used)

    return write


async def provide_knowledge_versions(db_session: NamedDependency[AsyncSession]) -> KnowledgeVersionRepository:
    return KnowledgeVersionRepository(session=db_session)


async def provide_recommendations(db_session: NamedDependency[AsyncSession]) -> RecommendationRepository:
    return RecommendationRepository(session=db_session)


async def provide_audit_events(db_session: NamedDependency[AsyncSession]) -> AuditEventRepository:
    return AuditEventRepository(session=db_session)


def singleton(value: Any) -> Provide:
    """A dependency that is the same object for every request (services built once per app)."""
    return Provide(lambda: value, use_cache=True, sync_to_thread=False)


class LifespansAfter(InitPluginProtocol):
    """Adds lifespans after those of the plugins registered before it (entered after, exited before)."""

    def __init__(self, lifespans: list[Callable[[Litestar], AbstractAsyncContextManager[None]]]) -> None:
        self.lifespans = lifespans

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.extend(self.lifespans)
        return app_config


def create_app(
    settings: Settings | None = None,
    option_host: OptionHost | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Litestar:
    """The service. ``tracer_provider``: spans go there (tests hand in one with an in-memory exporter);
    else to what the ``OTEL_*`` variables configure, or nowhere."""
    settings = settings or Settings.from_env()
    configure_logging(settings, queued=True)  # lines written off the request path
    host = option_host or create_option_host()
    db = database_config(settings)
    own_provider = None if tracer_provider else tracing.tracer_provider(settings)
    provider = tracer_provider or own_provider
    tracer = tracing.tracer(provider)
    gauges = metrics.KnowledgeGauges()

    dependencies = Dependencies()
    dependencies.watch("database", "answers from the last knowledge snapshot; what needs the database answers 503")

    def knowledge_state() -> None:  # the store's figures as metrics: after each poll, and at each scrape
        gauges.state(store.version, store.last_read_at, store.degraded)
        dependencies.mark("database", not store.degraded, "the knowledge poll cannot read the database")
        metrics.storage_state(storage.state)

    heap.tune(settings.gc_young_threshold)

    def knowledge_loaded(_version: str, trigger: str) -> None:
        gauges.loaded(trigger)
        watches.wake()  # watches are checked against the new version at once

    store = KnowledgeStore(
        db.create_session_maker(),
        settings.knowledge_refresh_seconds,
        listen_dsn=listener_dsn(settings.database_url),  # PostgreSQL: a new version is announced at once
        tracer=tracer,
        on_state=knowledge_state,
        on_load=knowledge_loaded,
    )
    key_verifier = KeyVerifier(
        key_lookup(db.create_session_maker()),
        settings.api_key_cache_seconds,
        known=KnownKeys(active_keys(db.create_session_maker())),  # tells a valid key's first request from a guess
    )
    key_usage = KeyUsage(key_usage_writer(db.create_session_maker()))
    books = Books(db.create_session_maker(), settings.knowledge_refresh_seconds)
    engine = Engine(host, store.get, tracer=tracer, books=books)
    # a full disk or read-only database: set by a failed write, cleared by a write (app.kb.storage_state)
    storage = StorageState(
        write_probe(db.create_session_maker()), settings.storage_probe_seconds, on_change=metrics.storage_state
    )
    writer = RecommendationWriter(
        db.create_session_maker(),
        tracer=tracer,
        on_queue=metrics.writer_queue,
        on_commit=metrics.writer_commit,
        queue_limit=settings.writer_queue_limit,
        storage=storage,
    )
    # checks watches and sends their deliveries (app.domain.procurement.watches_dispatch)
    watches = WatchDispatcher(settings, db.create_session_maker(), store.get, books, DecisionService(engine))
    worker_pool = WorkerPool(settings.worker_pool_size, settings.worker_pool_queue, settings.worker_pool_per_key)
    limiter = rate_limiter(settings, key_verifier.standing, dependencies)  # None when RATE_LIMIT=off
    metrics_listener = (
        metrics.MetricsListener(*settings.metrics_bind, settings.prometheus_multiproc_dir)
        if (settings.metrics_bind)
        else None
    )

    @asynccontextmanager
    async def knowledge_lifespan(app: Litestar) -> AsyncIterator[None]:
        if settings.gc_freeze:  # the long-lived objects, before any snapshot: a swap then freezes nothing (app.kb.heap)
            heap.settle()
        await store.start()
        storage.start()
        try:
            yield
        finally:
            await storage.stop()
            await store.stop()

    @asynccontextmanager
    async def observability_lifespan(app: Litestar) -> AsyncIterator[None]:
        if metrics_listener is not None:
            metrics_listener.start()
        try:
            yield
        finally:
            if metrics_listener is not None:
                metrics_listener.stop()
            if own_provider is not None:
                own_provider.shutdown()  # sends the spans still buffered
            metrics.process_exit(settings.prometheus_multiproc_dir)
            flush_logs()  # the lines still queued, written before the worker goes

    @asynccontextmanager
    async def resources_lifespan(app: Litestar) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if limiter is not None:
                await limiter.close()
            worker_pool.shutdown()
            await key_usage.drain()  # the last uses still queued

    request_metrics = metrics.request_metrics()

    def require_acceptable(request: Request[Any, Any, Any]) -> None:
        """An API operation that answers only JSON refuses an ``Accept`` without it (406; a malformed one:
        400) before any work, once charged; those that answer more negotiate in their handler (``answered_media``)."""
        path, handler = request.scope["path"], request.route_handler
        if "accept" in request.headers and path.startswith("/v1/") and answered_media(handler.operation_id) is None:  # type: ignore[arg-type]
            negotiate(request, [JSON])

    async def price_with_book(request: Request[Any, Any, Any]) -> None:
        """The request's answers are priced on its organisation's private book, if it has one (app.kb.books)."""
        user = request.scope.get("user")
        org = getattr(user, "org", None)
        BOOK.set(None if org is None else await books.current(org))

    async def before_request(request: Request[Any, Any, Any]) -> Response[None] | None:
        request_metrics.started(request.scope)  # in progress from here to the edge's end of the request
        await require_json_body(request)
        if limiter is not None:
            await limiter.charge_request(request)  # the request's cost, against its key
        require_acceptable(request)
        await price_with_book(request)
        return known_not_modified(request.scope)  # a catalog read's 304 without its handler, or None

    plugins: list[PluginProtocol] = [SQLAlchemyPlugin(config=db), PydanticPlugin(validate_strict=True)]
    if provider is not None:
        plugins.append(tracing.tracing_plugin(provider))
    # last: lifespans exit in reverse, so ours (the knowledge poll, the writer's users, the worker pool,
    # the last-use writes) end before the SQLAlchemy plugin's disposes of the engine they use
    plugins.append(LifespansAfter([observability_lifespan, knowledge_lifespan, watches.lifespan, resources_lifespan]))

    app = Litestar(
        route_handlers=[
            HealthController,
            CatalogController,
            DecisionController,
            InsightsController,
            PlanningController,
            CapacityController,
            AuditController,
            PriceBookController,
            WatchController,
            drift_controller.DriftController,
            metrics.metrics_controller(settings.prometheus_multiproc_dir, before_scrape=knowledge_state),
            docs_ui.assets_router(),
            explorer.ExplorerController,
            explorer.assets_router(),
        ],
        # strict validation of every pydantic input: ``false`` is not a number, ``"8"`` is not an int
        plugins=plugins,
        dependencies={
            "engine": singleton(engine),
            "catalog": singleton(CatalogService(engine)),
            "decisions": singleton(DecisionService(engine, daily_quota=settings.recommendation_daily_quota)),
            "insights": singleton(InsightService(engine)),
            "capacity": singleton(CapacityService(engine)),
            "knowledge_versions": Provide(provide_knowledge_versions),
            "recommendations": Provide(provide_recommendations),
            "audit_events_repository": Provide(provide_audit_events),
        },
        exception_handlers={**EXCEPTION_HANDLERS, **DATABASE_EXCEPTION_HANDLERS},
        middleware=[
            *([tracing.name_request_span] if provider is not None else []),
            *([limiter.middleware] if limiter else []),  # before auth: floods never reach the key lookup
            DefineMiddleware(ApiKeyMiddleware, verifier=key_verifier, exclude=PUBLIC_PATHS, usage=key_usage),
        ],
        before_request=before_request,
        state=State(
            {
                "knowledge_store": store,
                "storage_state": storage,  # a full disk, a read-only database (app.web.degraded, /health/ready)
                "key_verifier": key_verifier,  # /health/ready shows its details to a caller with a key
                "readiness_check": SharedCheck(db.create_session_maker()),  # one database check in flight
                "dependencies": dependencies,
                "engine": engine,
                "books": books,  # the organisations' private price books (app.kb.books)
                "watches": watches,  # the watch dispatcher: its allow-list and versions (app.domain.procurement)
                "key_usage": key_usage,
                # shared by many handlers, read from the state (app.web.offload.worker_pool): not
                # dependencies, which a handler taking two resolves in a task group of their own
                "worker_pool": worker_pool,
                "recommendation_writer": writer,
                "known_etags": KnownEtags(),  # catalog reads answered 200 (app.web.caching)
                "migration_head": migration_head(),
                "migration_revisions": migration_revisions(),
                "plugins_fingerprint": plugins_fingerprint(
                    (key, o.plugin_name, o.plugin_version) for key, o in host.options.items()
                ),
            }
        ),
        request_class=StrictJsonRequest,  # hostile bodies are 400s (app.web.bodies)
        request_max_body_size=settings.max_body_bytes,
        # no CORS layer at all unless origins are configured (it would only pass every request through)
        cors_config=(
            CORSConfig(allow_origins=list(settings.cors_origins), expose_headers=EXPOSED_HEADERS)
            if settings.cors_origins
            else None
        ),
        logging_config=None,  # app.web.logs configures logging, for the service and the CLI alike
        openapi_config=OpenAPIConfig(
            title="compute-advisor",
            version=__version__,
            description="Where large-model training should run — own GPU cluster, rented GPU instances or an "
            "AI compute platform — compared on cost, efficiency, stability and usability, with every figure "
            "traceable to the knowledge base.",
            path="/docs",
            render_plugins=docs_ui.render_plugins(),
        ),
        debug=settings.debug,
    )
    allow_every_method(app)  # OPTIONS names every method of a path whose handlers were registered apart

    def finish_document(document: OpenAPI) -> None:
        complete_openapi(document)
        document_option_fields(document, host.profile_fields)
        document_security(app, document)
        document_for_generators(document, PROBLEM_TYPES)

    document_when_asked(app, finish_document)  # built at its first reader, not at every start
    # outermost, around Litestar's router and exception handling (app.web.edge): 404s and 405s, and the
    # 401/403/429 raised inside, get their headers, their metrics and their log line too
    app.asgi_handler = Edge(
        app.asgi_handler, knowledge_version=lambda: store.version, knowledge_source=store.source_header
    )
    return app
