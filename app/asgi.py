"""The composition root: settings, database, knowledge store, plugins, routes — wired here only.

Serve with ``uvicorn --factory app.asgi:create_app``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from advanced_alchemy.extensions.litestar import AsyncSessionConfig, SQLAlchemyAsyncConfig, SQLAlchemyPlugin
from alembic.config import Config
from alembic.script import ScriptDirectory
from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.datastructures import MutableScopeHeaders, State
from litestar.di import Provide
from litestar.enums import ScopeType
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin, SwaggerRenderPlugin
from litestar.plugins.pydantic import PydanticPlugin
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app import __version__
from app.api.errors import EXCEPTION_HANDLERS
from app.api.health import HealthController
from app.api.v1.catalog import CatalogController
from app.api.v1.decisions import DecisionController
from app.kb.store import KnowledgeStore
from app.plugin_manager import OptionHost, create_option_host
from app.services import Advisor
from app.settings import PROJECT_ROOT, Settings

REQUEST_ID_HEADER = "x-request-id"


def request_id_middleware(app: ASGIApp) -> ASGIApp:
    """Honour a sane ``X-Request-ID`` or make one; echo it back and keep it for logs and problems."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        given = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-request-id"), "")
        rid = given if 0 < len(given) <= 128 and given.isprintable() else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableScopeHeaders.from_message(message)[REQUEST_ID_HEADER] = rid
            await send(message)

        await app(scope, receive, send_with_id)

    return middleware


def migration_head() -> str | None:
    return ScriptDirectory.from_config(Config(str(PROJECT_ROOT / "alembic.ini"))).get_current_head()


def create_app(settings: Settings | None = None, option_host: OptionHost | None = None) -> Litestar:
    settings = settings or Settings.from_env()
    host = option_host or create_option_host()
    db = SQLAlchemyAsyncConfig(
        connection_string=settings.async_database_url,
        session_config=AsyncSessionConfig(expire_on_commit=False),
        before_send_handler="autocommit",
        create_all=False,
        set_default_exception_handler=False,
    )
    store = KnowledgeStore(db.create_session_maker(), settings.knowledge_refresh_seconds)
    advisor = Advisor(host, store.get)

    @asynccontextmanager
    async def knowledge_lifespan(app: Litestar) -> AsyncIterator[None]:
        await store.start()
        try:
            yield
        finally:
            await store.stop()

    def provide_advisor() -> Advisor:
        return advisor

    state: dict[str, Any] = {
        "settings": settings,
        "knowledge_store": store,
        "advisor": advisor,
        "migration_head": migration_head(),
    }
    return Litestar(
        route_handlers=[HealthController, CatalogController, DecisionController],
        # strict validation of every pydantic input: ``false`` is not a number, ``"8"`` is not an int
        plugins=[SQLAlchemyPlugin(config=db), PydanticPlugin(validate_strict=True)],
        dependencies={"advisor": Provide(provide_advisor, sync_to_thread=False)},
        exception_handlers=EXCEPTION_HANDLERS,
        middleware=[request_id_middleware],
        lifespan=[knowledge_lifespan],
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
