"""The composition root: settings, database, knowledge store, plugins, routes — wired here only.

Serve with ``uvicorn --factory app.asgi:create_app``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from advanced_alchemy.extensions.litestar import (
    AsyncSessionConfig,
    EngineConfig,
    SQLAlchemyAsyncConfig,
    SQLAlchemyPlugin,
)
from alembic.config import Config
from alembic.script import ScriptDirectory
from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.enums import ScopeType
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin, SwaggerRenderPlugin
from litestar.plugins.pydantic import PydanticPlugin
from litestar.types import ASGIApp, Receive, Scope, Send
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError

from app import __version__
from app.api.auth import PUBLIC_PATHS, ApiKeyMiddleware, KeyVerifier, db_lookup, document_security
from app.api.caching import plugins_fingerprint
from app.api.degraded import DATABASE_EXCEPTION_HANDLERS, knowledge_source_hook
from app.api.errors import EXCEPTION_HANDLERS, request_id, require_json_body, send_request_id
from app.api.health import HealthController
from app.api.openapi import complete_openapi
from app.api.rate_limits import rate_limit_config
from app.api.v1.audit import AuditController
from app.api.v1.catalog import CatalogController
from app.api.v1.decisions import DecisionController
from app.api.v1.insights import InsightsController
from app.api.v1.planning import PlanningController
from app.kb.store import KnowledgeStore
from app.kb.writer import RecommendationWriter
from app.plugin_manager import OptionHost, create_option_host
from app.services import Advisor
from app.settings import PROJECT_ROOT, Settings


def request_id_middleware(app: ASGIApp) -> ASGIApp:
    """Fix the request id (honouring a sane ``X-Request-ID``) before the handler runs; ``send_request_id`` echoes it."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            request_id(scope)
        await app(scope, receive, send)

    return middleware


def sqlite_pragmas(connection: Any, _record: Any) -> None:
    """Write-ahead logging: readers never wait for the writer, and a commit costs no fsync of the
    main file; a writer waits up to 5 s for another instead of failing at once."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def sqlite_still_there(path: Path) -> Any:
    """A pooled SQLite connection keeps using its file even after the file is moved or deleted;
    refuse such a connection at checkout, so that the pool reconnects by path — and fails, which
    puts the service in degraded mode, while the file is gone."""

    def checkout(_connection: Any, _record: Any, _proxy: Any) -> None:
        if not path.exists():
            raise DisconnectionError(f"the database file {path} is gone")

    return checkout


def migration_head() -> str | None:
    return ScriptDirectory.from_config(Config(str(PROJECT_ROOT / "alembic.ini"))).get_current_head()


def create_app(settings: Settings | None = None, option_host: OptionHost | None = None) -> Litestar:
    settings = settings or Settings.from_env()
    host = option_host or create_option_host()
    db = SQLAlchemyAsyncConfig(
        connection_string=settings.async_database_url,
        engine_config=EngineConfig(**settings.engine_options),
        session_config=AsyncSessionConfig(expire_on_commit=False),
        before_send_handler="autocommit",
        create_all=False,
        set_default_exception_handler=False,
    )
    if settings.async_database_url.startswith("sqlite"):
        engine = db.get_engine().sync_engine
        event.listen(engine, "connect", sqlite_pragmas)
        if settings.sqlite_path is not None:
            event.listen(engine, "checkout", sqlite_still_there(settings.sqlite_path))
    store = KnowledgeStore(db.create_session_maker(), settings.knowledge_refresh_seconds)
    key_verifier = KeyVerifier(db_lookup(db.create_session_maker()), settings.api_key_cache_seconds)
    advisor = Advisor(host, store.get)
    limits = rate_limit_config(settings)  # None when RATE_LIMIT=off

    @asynccontextmanager
    async def knowledge_lifespan(app: Litestar) -> AsyncIterator[None]:
        await store.start()
        try:
            yield
        finally:
            await store.stop()

    writer = RecommendationWriter(db.create_session_maker())

    def provide_writer() -> RecommendationWriter:
        return writer

    def provide_advisor() -> Advisor:
        return advisor

    state: dict[str, Any] = {
        "settings": settings,
        "knowledge_store": store,
        "advisor": advisor,
        "key_verifier": key_verifier,
        "migration_head": migration_head(),
        "plugins_fingerprint": plugins_fingerprint(
            (key, o.plugin_name, o.plugin_version) for key, o in host.options.items()
        ),
    }
    app = Litestar(
        route_handlers=[
            HealthController,
            CatalogController,
            DecisionController,
            InsightsController,
            PlanningController,
            AuditController,
        ],
        # strict validation of every pydantic input: ``false`` is not a number, ``"8"`` is not an int
        plugins=[SQLAlchemyPlugin(config=db), PydanticPlugin(validate_strict=True)],
        dependencies={
            "advisor": Provide(provide_advisor, sync_to_thread=False),
            "recommendation_writer": Provide(provide_writer, sync_to_thread=False),
        },
        exception_handlers={**EXCEPTION_HANDLERS, **DATABASE_EXCEPTION_HANDLERS},
        middleware=[
            request_id_middleware,
            *([limits.middleware] if limits else []),  # before auth: floods never reach the key lookup
            DefineMiddleware(ApiKeyMiddleware, verifier=key_verifier, exclude=PUBLIC_PATHS),
        ],
        before_send=[send_request_id, knowledge_source_hook(store)],
        before_request=require_json_body,
        lifespan=[knowledge_lifespan, *([limits.lifespan] if limits else [])],
        state=State(state),
        request_max_body_size=settings.max_body_bytes,
        cors_config=CORSConfig(allow_origins=[]),
        openapi_config=OpenAPIConfig(
            title="compute-advisor",
            version=__version__,
            description="Where large-model training should run — own GPU cluster, rented GPU instances or an "
            "AI compute platform — compared on cost, efficiency, stability and usability, with every figure "
            "traceable to the knowledge base.",
            path="/docs",
            render_plugins=[ScalarRenderPlugin(), SwaggerRenderPlugin(path="/swagger")],
        ),
        debug=settings.debug,
    )
    complete_openapi(app.openapi_schema)
    document_security(app, app.openapi_schema)
    return app
