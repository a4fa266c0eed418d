"""The one database wiring: the service and the CLI build their engines and sessions here.

``database_config`` gives advanced-alchemy's ``SQLAlchemyAsyncConfig`` for a ``Settings``: the app
hands it to Litestar's ``SQLAlchemyPlugin``, the CLI asks it for an engine and a session maker, so
both talk to the database the same way (driver, engine options, SQLite pragmas, the check that an
SQLite file is still the one a connection opened). Neither ever creates a database: an SQLite file is
opened only if it exists. ``alembic_config`` points Alembic at the same database by its plain URL, so
``compute-advisor migrate`` is what creates one.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
from advanced_alchemy.extensions.litestar import AsyncSessionConfig, EngineConfig, SQLAlchemyAsyncConfig
from advanced_alchemy.utils.serialization import encode_json
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncSession

from app.settings import PROJECT_ROOT, Settings


def sqlite_pragmas(synchronous: str = "FULL") -> Any:
    """The pragmas of each new SQLite connection. Write-ahead logging: readers never wait for the
    writer; a writer waits up to 5 s for another instead of failing at once. ``synchronous=FULL``
    (``SQLITE_SYNCHRONOUS``): each commit fsyncs the log, so a 201 survives a power loss or an OS
    crash; ``NORMAL`` skips that fsync (a commit is then durable against a crash of the process only).
    """

    def on_connect(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA busy_timeout=5000")
        cursor.close()

    return on_connect


#: where a pooled SQLite connection keeps the identity of the file it opened
_OPENED = "compute_advisor_file_identity"
_BEFORE = "compute_advisor_file_identity_before"


def file_identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` as the operating system knows it — (device, inode) — or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def sqlite_url(path: Path) -> str:
    """The service's URL of an existing SQLite file: an SQLite URI with ``mode=rw``, which opens the file
    read-write but never creates it (a missing file is an outage, not a new empty database).

    The path is percent-encoded for SQLite's URI parser and once more for SQLAlchemy's URL parser, so
    that a ``?``, ``#``, ``%`` or space in a directory name reaches SQLite intact.
    """
    encoded = quote(quote(str(path), safe="/"), safe="/")
    return f"sqlite+aiosqlite:///file:{encoded}?mode=rw&uri=true"


def connection_url(settings: Settings) -> str:
    """The URL the service and the CLI connect with: the async driver's, and for an SQLite file on
    disk one that opens the existing file only. (Alembic keeps the plain URL: ``migrate`` creates.)"""
    path = settings.sqlite_path
    return sqlite_url(path) if path is not None else settings.async_database_url


def sqlite_still_there(path: Path) -> Any:
    """Checkout check of a pooled SQLite connection: is the file at ``path`` still the one it opened?

    A connection keeps using the file it opened even after that file is moved, deleted or replaced.
    At checkout the identity recorded when the connection was opened (device, inode) is compared with
    the path's current one; a connection whose file is gone or replaced (a restored backup, a swapped
    volume) is refused, and the pool opens a new one by path: the new file, or — when there is no
    file — an error, which puts the service in degraded mode.
    """

    def checkout(_connection: Any, record: Any, _proxy: Any) -> None:
        now = file_identity(path)
        if now is None:
            raise DisconnectionError(f"the database file {path} is gone")
        if record.info.get(_OPENED) != now:
            raise DisconnectionError(f"the database file {path} was replaced")

    return checkout


def sqlite_track_identity(engine: Engine, path: Path) -> None:
    """Record the identity of the file each new connection opens, and check it at every checkout.

    The identity is read just before and just after SQLite opens the file; if they differ the file
    was swapped while it was being opened, and the attempt fails like any failed connection (the next
    one opens the new file).
    """

    def before(_dialect: Any, record: Any, _cargs: Any, _cparams: Any) -> None:
        record.info[_BEFORE] = file_identity(path)

    def after(_connection: Any, record: Any) -> None:
        opened = file_identity(path)
        if opened is None or record.info.pop(_BEFORE, None) != opened:
            raise sqlite3.OperationalError(f"the database file {path} changed while it was being opened")
        record.info[_OPENED] = opened

    event.listen(engine, "do_connect", before)
    event.listen(engine, "connect", after)
    event.listen(engine, "checkout", sqlite_still_there(path))


def json_text(value: Any) -> str:
    """A JSON column's text: a document already encoded (``msgspec.Raw``: a stored recommendation, the
    bytes its 201 answer sends) as it is, anything else by advanced-alchemy's encoder."""
    if isinstance(value, msgspec.Raw):
        return bytes(value).decode()
    return encode_json(value)


def database_config(settings: Settings) -> SQLAlchemyAsyncConfig:
    """advanced-alchemy's configuration of the database ``settings`` name (engine built lazily)."""
    config = SQLAlchemyAsyncConfig(
        connection_string=connection_url(settings),
        engine_config=EngineConfig(json_serializer=json_text, **settings.engine_options),
        session_config=AsyncSessionConfig(expire_on_commit=False),
        before_send_handler="autocommit",
        create_all=False,
        set_default_exception_handler=False,
    )
    if settings.async_database_url.startswith("sqlite"):
        engine = config.get_engine().sync_engine
        event.listen(engine, "connect", sqlite_pragmas(settings.sqlite_synchronous))
        if settings.sqlite_path is not None:
            sqlite_track_identity(engine, settings.sqlite_path)
    return config


class DatabaseMissing(Exception):
    """The SQLite file ``DATABASE_URL`` names does not exist (and only ``migrate`` or ``restore`` make one)."""


def require_database(settings: Settings) -> None:
    """Raise ``DatabaseMissing`` when ``settings`` name an SQLite file that is not there."""
    path = settings.sqlite_path
    if path is not None and not path.exists():
        raise DatabaseMissing(
            f"no database at {path}: create it with `compute-advisor migrate`, or restore a backup with "
            "`compute-advisor restore FILE`"
        )


@asynccontextmanager
async def transaction(settings: Settings) -> AsyncIterator[AsyncSession]:
    """A session in one transaction on a short-lived engine (the CLI's unit of work): committed when
    the block ends, rolled back when it raises; the engine is disposed either way. A missing SQLite
    file is ``DatabaseMissing``, never a new empty database."""
    require_database(settings)
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
    cfg.attributes["configure_logger"] = False  # keep app.web.logs's configuration, not alembic.ini's
    return cfg


def migration_revisions() -> frozenset[str]:
    """Every revision this code's migrations know: a database at a revision outside them was migrated
    by a newer release (the old code still serves during a rolling upgrade)."""
    script = ScriptDirectory.from_config(Config(str(PROJECT_ROOT / "alembic.ini")))
    return frozenset(r.revision for r in script.walk_revisions())


def migration_head() -> str | None:
    """The newest migration's revision: what ``/health/ready`` expects the database to be at."""
    return ScriptDirectory.from_config(Config(str(PROJECT_ROOT / "alembic.ini"))).get_current_head()
