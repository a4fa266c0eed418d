"""The one database wiring: the service and the CLI build their engines and sessions here.

``database_config`` gives advanced-alchemy's ``SQLAlchemyAsyncConfig`` for a ``Settings``: the app
hands it to Litestar's ``SQLAlchemyPlugin``, the CLI asks it for an engine and a session maker, so
both talk to the database the same way (driver, engine options, SQLite pragmas). ``alembic_config``
points Alembic at the same URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from advanced_alchemy.extensions.litestar import AsyncSessionConfig, EngineConfig, SQLAlchemyAsyncConfig
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncSession

from app.settings import PROJECT_ROOT, Settings


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


def database_config(settings: Settings) -> SQLAlchemyAsyncConfig:
    """advanced-alchemy's configuration of the database ``settings`` name (engine built lazily)."""
    config = SQLAlchemyAsyncConfig(
        connection_string=settings.async_database_url,
        engine_config=EngineConfig(**settings.engine_options),
        session_config=AsyncSessionConfig(expire_on_commit=False),
        before_send_handler="autocommit",
        create_all=False,
        set_default_exception_handler=False,
    )
    if settings.async_database_url.startswith("sqlite"):
        engine = config.get_engine().sync_engine
        event.listen(engine, "connect", sqlite_pragmas)
        if settings.sqlite_path is not None:
            event.listen(engine, "checkout", sqlite_still_there(settings.sqlite_path))
    return config


@asynccontextmanager
async def transaction(settings: Settings) -> AsyncIterator[AsyncSession]:
    """A session in one transaction on a short-lived engine (the CLI's unit of work): committed when
    the block ends, rolled back when it raises; the engine is disposed either way."""
    config = database_config(settings)
    try:
        async with config.create_session_maker()() as session, session.begin():
            yield session
    finally:
        await config.get_engine().dispose()


def alembic_config(settings: Settings) -> Config:
    """Alembic's configuration for the database ``settings`` name."""
    cfg = Config(str(PROJECT_ROOT / "alembic.ini"))
    cfg.set_main_option("sqlalchemy.url", settings.async_database_url.replace("%", "%%"))
    cfg.attributes["configure_logger"] = False  # keep app.lib.logs's configuration, not alembic.ini's
    return cfg


def migration_revisions() -> frozenset[str]:
    """Every revision this code's migrations know: a database at a revision outside them was migrated
    by a newer release (the old code still serves during a rolling upgrade)."""
    script = ScriptDirectory.from_config(Config(str(PROJECT_ROOT / "alembic.ini")))
    return frozenset(r.revision for r in script.walk_revisions())


def migration_head() -> str | None:
    """The newest migration's revision: what ``/health/ready`` expects the database to be at."""
    return ScriptDirectory.from_config(Config(str(PROJECT_ROOT / "alembic.ini"))).get_current_head()
