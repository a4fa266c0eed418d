"""The composition root: settings, database, knowledge store, plugins, services, routes — wired
here only. Serve with ``python -m app.serve`` (uvicorn with the service's bounds: ``app.serve``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar, Request
from litestar.config.app import AppConfig
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
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
from app.domain.shared.advisor import BOOK, Advisor, report_failure
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
from app.web.auth import KeyUsage, KeyVerifier, Lookup, Principal, document_security
from app.web.bodies import StrictJsonRequest
from app.web.caching import KnownEtags, plugins_fingerprint
from app.web.degraded import DATABASE_EXCEPTION_HANDLERS
from app.web.dependencies import Dependencies
from app.web.edge import Edge
from app.web.known_keys import ActiveKeys, KnownKeys
from app.web.logs import configure_logging, flush_logs
from app.web.negotiation import JSON, negotiate, require_json_body
from app.web.offload import WorkerPool
from app.web.problems import EXCEPTION_HANDLERS, PROBLEM_TYPES
from app.web.rate_limits import body_charge, rate_limiter

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

    def __init__(self, lifespans: Sequence[Callable[[Litestar], AbstractAsyncContextManager[None]]]) -> None:
        self.lifespans = lifespans

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.lifespan.extend(self.lifespans)
        return app_config


class Parts:
    """The service's long-lived parts, made once per app by ``create_app`` in the order they need each
    other — tracing and the dependencies' states, the knowledge store, the API keys, what answers (the
    price books, the advisor, the storage state, the recommendation writer, the watches), the bounds (the
    worker pool, the rate limiter, the metrics listener) — and the hooks and lifespans that use them."""

    def __init__(self, settings: Settings, host: OptionHost, tracer_provider: TracerProvider | None) -> None:
        self.settings, self.host = settings, host
        host.on_failure = report_failure  # a plugin's defect: logged with its traceback and counted
        self.db = database_config(settings)
        self.own_provider = None if tracer_provider else tracing.tracer_provider(settings)
        self.provider = tracer_provider or self.own_provider
        self.tracer = tracing.tracer(self.provider)
        self.gauges = metrics.KnowledgeGauges()
        self.dependencies = Dependencies()
        self.dependencies.watch(
            "database", "answers from the last knowledge snapshot; what needs the database answers 503"
        )
        heap.tune(settings.gc_young_threshold)
        self.store = KnowledgeStore(
            self.db.create_session_maker(),
            settings.knowledge_refresh_seconds,
            listen_dsn=listener_dsn(settings.database_url),  # PostgreSQL: a new version is announced at once
            tracer=self.tracer,
            on_state=self.knowledge_state,
            on_load=self.knowledge_loaded,
        )
        self._keys()
        self._answering()
        self._bounds()

    def _keys(self) -> None:
        """Authentication's key lookup (with the keys known valid) and the writer of their last uses."""
        db = self.db
        self.key_verifier = KeyVerifier(
            key_lookup(db.create_session_maker()),
            self.settings.api_key_cache_seconds,
            known=KnownKeys(active_keys(db.create_session_maker())),  # tells a valid key's first request from a guess
        )
        self.key_usage = KeyUsage(key_usage_writer(db.create_session_maker()))

    def _answering(self) -> None:
        """What answers: the organisations' price books, the advisor, the storage state, the recommendation
        writer and the watch dispatcher."""
        settings, db = self.settings, self.db
        self.books = Books(db.create_session_maker(), settings.knowledge_refresh_seconds)
        self.advisor = Advisor(self.host, self.store.get, tracer=self.tracer, books=self.books)
        # a full disk or read-only database: set by a failed write, cleared by a write (app.kb.storage_state)
        self.storage = StorageState(
            write_probe(db.create_session_maker()), settings.storage_probe_seconds, on_change=metrics.storage_state
        )
        self.writer = RecommendationWriter(
            db.create_session_maker(),
            tracer=self.tracer,
            on_queue=metrics.writer_queue,
            on_commit=metrics.writer_commit,
            queue_limit=settings.writer_queue_limit,
            storage=self.storage,
        )
        # checks watches and sends their deliveries (app.domain.procurement.watches_dispatch)
        self.watches = WatchDispatcher(
            settings, db.create_session_maker(), self.store.get, self.books, DecisionService(self.advisor)
        )

    def _bounds(self) -> None:
        """The worker pool, the rate limiter (None when RATE_LIMIT=off), the metrics listener (None without
        METRICS_BIND) and the request metrics."""
        settings = self.settings
        self.worker_pool = WorkerPool(
            settings.worker_pool_size, settings.worker_pool_queue, settings.worker_pool_per_key
        )
        self.limiter = rate_limiter(settings, self.key_verifier.standing, self.dependencies)
        self.metrics_listener = (
            metrics.MetricsListener(*settings.metrics_bind, settings.prometheus_multiproc_dir)
            if (settings.metrics_bind)
            else None
        )
        self.request_metrics = metrics.request_metrics()

    def knowledge_state(self) -> None:
        """The store's figures as metrics: after each poll, and at each scrape."""
        self.gauges.state(self.store.version, self.store.last_read_at, self.store.degraded)
        self.dependencies.mark("database", not self.store.degraded, "the knowledge poll cannot read the database")
        metrics.storage_state(self.storage.state)

    def knowledge_loaded(self, _version: str, trigger: str) -> None:
        """A new knowledge version loaded: counted, and the watches checked against it at once."""
        self.gauges.loaded(trigger)
        self.watches.wake()

    @asynccontextmanager
    async def knowledge_lifespan(self, app: Litestar) -> AsyncIterator[None]:
        """The knowledge poll and the storage probe, while the app serves."""
        if (
            self.settings.gc_freeze
        ):  # the long-lived objects, before any snapshot: a swap then freezes nothing (app.kb.heap)
            heap.settle()
        await self.store.start()
        self.storage.start()
        try:
            yield
        finally:
            await self.storage.stop()
            await self.store.stop()

    @asynccontextmanager
    async def observability_lifespan(self, app: Litestar) -> AsyncIterator[None]:
        """The metrics listener while the app serves; at its end the spans, metrics and log lines still held."""
        if self.metrics_listener is not None:
            self.metrics_listener.start()
        try:
            yield
        finally:
            if self.metrics_listener is not None:
                self.metrics_listener.stop()
            if self.own_provider is not None:
                self.own_provider.shutdown()  # sends the spans still buffered
            metrics.process_exit(self.settings.prometheus_multiproc_dir)
            flush_logs()  # the lines still queued, written before the worker goes

    @asynccontextmanager
    async def resources_lifespan(self, app: Litestar) -> AsyncIterator[None]:
        """At the app's end: the rate limiter closed, the worker pool shut down, the last key uses written."""
        try:
            yield
        finally:
            if self.limiter is not None:
                await self.limiter.close()
            self.worker_pool.shutdown()
            await self.key_usage.drain()  # the last uses still queued

    async def price_with_book(self, request: Request[Any, Any, Any]) -> None:
        """The request's answers are priced on its organisation's private book, if it has one (app.kb.books)."""
        user = request.scope.get("user")
        org = getattr(user, "org", None)
        BOOK.set(None if org is None else await self.books.current(org))

    async def before_request(self, request: Request[Any, Any, Any]) -> None:
        """Every request's checks before its handler: a JSON body, the cost of its body charged (the edge
        charged the others), an acceptable ``Accept``, its organisation's price book. (A catalog read's
        304 for an ETag this worker answered is the edge's: ``app.web.edge``.)"""
        self.request_metrics.started(request.scope)  # in progress from here to the edge's end of the request
        await require_json_body(request)
        if self.limiter is not None and (owed := body_charge(request.scope)) is not None:
            await self.limiter.charge_request(request, owed.cost)  # the body's cost, against its key
        require_acceptable(request)
        await self.price_with_book(request)


def require_acceptable(request: Request[Any, Any, Any]) -> None:
    """An API operation that answers only JSON refuses an ``Accept`` without it (406; a malformed one:
    400) before any work, once charged; those that answer more negotiate in their handler (``answered_media``)."""
    path, handler = request.scope["path"], request.route_handler
    if "accept" in request.headers and path.startswith("/v1/") and answered_media(handler.operation_id) is None:  # type: ignore[arg-type]
        negotiate(request, [JSON])


def create_app(
    settings: Settings | None = None,
    option_host: OptionHost | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Litestar:
    """The service. ``tracer_provider``: spans go there (tests hand in one with an in-memory exporter);
    else to what the ``OTEL_*`` variables configure, or nowhere."""
    settings = settings or Settings.from_env()
    configure_logging(settings, queued=True)  # lines written off the request path
    parts = Parts(settings, option_host or create_option_host(), tracer_provider)
    plugins = _plugins(parts)
    app = Litestar(
        route_handlers=_route_handlers(parts),
        plugins=plugins,
        dependencies=_dependencies(parts),
        exception_handlers={**EXCEPTION_HANDLERS, **DATABASE_EXCEPTION_HANDLERS},
        middleware=_middleware(parts),
        before_request=parts.before_request,
        state=_state(parts),
        request_class=StrictJsonRequest,  # hostile bodies are 400s (app.web.bodies)
        request_max_body_size=settings.max_body_bytes,
        cors_config=_cors(settings),
        logging_config=None,  # app.web.logs configures logging, for the service and the CLI alike
        openapi_config=_openapi_config(),
        debug=settings.debug,
    )
    allow_every_method(app)  # OPTIONS names every method of a path whose handlers were registered apart
    document_when_asked(app, _document_finisher(app, parts.host))  # built at its first reader, not at every start
    # outermost, around Litestar's router and exception handling (app.web.edge): the key and the limit
    # before any route runs; 404s and 405s get their headers, their metrics and their log line too
    store = parts.store
    app.asgi_handler = Edge(
        app,
        knowledge_version=lambda: store.version,
        knowledge_source=store.source_header,
        verifier=parts.key_verifier,
        usage=parts.key_usage,
        limiter=parts.limiter,
    )
    return app


def _plugins(parts: Parts) -> list[PluginProtocol]:
    """The database's, strict pydantic validation, tracing's (when on), and the parts' lifespans."""
    # strict validation of every pydantic input: ``false`` is not a number, ``"8"`` is not an int
    plugins: list[PluginProtocol] = [SQLAlchemyPlugin(config=parts.db), PydanticPlugin(validate_strict=True)]
    if parts.provider is not None:
        plugins.append(tracing.tracing_plugin(parts.provider))
    # last: lifespans exit in reverse, so ours (the knowledge poll, the writer's users, the worker pool,
    # the last-use writes) end before the SQLAlchemy plugin's disposes of the engine they use
    ours = [parts.observability_lifespan, parts.knowledge_lifespan, parts.watches.lifespan, parts.resources_lifespan]
    plugins.append(LifespansAfter(ours))
    return plugins


def _route_handlers(parts: Parts) -> list[Any]:
    """Every feature's controller, the metrics, the documentation's assets and the explorer."""
    return [
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
        metrics.metrics_controller(parts.settings.prometheus_multiproc_dir, before_scrape=parts.knowledge_state),
        docs_ui.assets_router(),
        explorer.ExplorerController,
        explorer.assets_router(),
    ]


def _dependencies(parts: Parts) -> dict[str, Provide]:
    """The services, made once, and the repositories, made per request in its database session."""
    advisor = parts.advisor
    return {
        "advisor": singleton(advisor),
        "catalog": singleton(CatalogService(advisor)),
        "decisions": singleton(DecisionService(advisor, daily_quota=parts.settings.recommendation_daily_quota)),
        "insights": singleton(InsightService(advisor)),
        "capacity": singleton(CapacityService(advisor)),
        "knowledge_versions": Provide(provide_knowledge_versions),
        "recommendations": Provide(provide_recommendations),
        "audit_events_repository": Provide(provide_audit_events),
    }


def _middleware(parts: Parts) -> list[Any]:
    """Tracing's request span name (when on). Authentication and the rate limit are the edge's
    (``app.web.edge``, made by ``create_app``), in front of the router."""
    return [tracing.name_request_span] if parts.provider is not None else []


def _state(parts: Parts) -> State:
    """What handlers and the web layer read from the app's state."""
    return State(
        {
            "knowledge_store": parts.store,
            "storage_state": parts.storage,  # a full disk, a read-only database (app.web.degraded, /health/ready)
            "key_verifier": parts.key_verifier,  # /health/ready shows its details to a caller with a key
            "readiness_check": SharedCheck(parts.db.create_session_maker()),  # one database check in flight
            "dependencies": parts.dependencies,
            "advisor": parts.advisor,
            "books": parts.books,  # the organisations' private price books (app.kb.books)
            "watches": parts.watches,  # the watch dispatcher: its allow-list and versions (app.domain.procurement)
            "key_usage": parts.key_usage,
            # shared by many handlers, read from the state (app.web.offload.worker_pool): not
            # dependencies, which a handler taking two resolves in a task group of their own
            "worker_pool": parts.worker_pool,
            "recommendation_writer": parts.writer,
            "known_etags": KnownEtags(),  # catalog reads answered 200 (app.web.caching)
            "migration_head": migration_head(),
            "migration_revisions": migration_revisions(),
            "plugins_fingerprint": plugins_fingerprint(
                (key, o.plugin_name, o.plugin_version) for key, o in parts.host.options.items()
            ),
        }
    )


def _cors(settings: Settings) -> CORSConfig | None:
    """No CORS layer at all unless origins are configured (it would only pass every request through)."""
    if not settings.cors_origins:
        return None
    return CORSConfig(allow_origins=list(settings.cors_origins), expose_headers=EXPOSED_HEADERS)


def _openapi_config() -> OpenAPIConfig:
    """The OpenAPI document's title, version and description, served at /docs."""
    return OpenAPIConfig(
        title="compute-advisor",
        version=__version__,
        description="Where large-model training should run — own GPU cluster, rented GPU instances or an "
        "AI compute platform — compared on cost, efficiency, stability and usability, with every figure "
        "traceable to the knowledge base.",
        path="/docs",
        render_plugins=docs_ui.render_plugins(),
    )


def _document_finisher(app: Litestar, host: OptionHost) -> Callable[[OpenAPI], None]:
    """What completes the OpenAPI document when it is first built: the options' fields, security, and what
    client generators need."""

    def finish_document(document: OpenAPI) -> None:
        complete_openapi(document)
        document_option_fields(document, host.profile_fields)
        document_security(app, document)
        document_for_generators(document, PROBLEM_TYPES)

    return finish_document
