"""Backups of the whole database — knowledge base, API keys, audit trail, stored recommendations — and
their restore, on SQLite and PostgreSQL.

- **SQLite**: a backup is an SQLite database file, written with SQLite's online backup API in one
  read transaction, so it is consistent while the service serves and writes (write-ahead logging
  lets readers and the writer go on). The file stands alone (rollback-journal mode, no ``-wal``) and
  can be opened with any ``sqlite3``. A restore copies it *into* the database through SQLite, under
  SQLite's own locks, so a running service sees the restored data at its next query; the file is
  never moved over a database in use (SQLite pairs a file with its ``-wal`` and ``-shm`` by name).
- **PostgreSQL**: a backup is ``pg_dump --format=custom`` of one exported snapshot, from which the
  contents reported are read too. A restore is ``pg_restore --clean --if-exists --single-transaction``
  into the database ``DATABASE_URL`` names: all of it or nothing.

A file's kind is told by its first bytes (``SQLite format 3`` or ``PGDMP``); a restore into the other
kind of database is refused. "In use" means another connection has the database open: for SQLite,
another process holds the shared-memory lock every connection to a WAL database holds; for
PostgreSQL, another client session on the database in ``pg_stat_activity``.

Raw ``sqlite3`` connections are used for the online backup API, which SQLAlchemy does not expose;
everything else goes through ``app.kb.db``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from app.kb import audit
from app.kb.backup.common import (
    COUNTED,
    FORMAT_NAMES,
    KIND_NAMES,
    MAGIC,
    BackupError,
    Contents,
    Kind,
    database_contents,
    read_contents,
)
from app.kb.backup.postgres import pg_archive_tables, pg_backup, pg_other_connections, pg_restore, pg_tables
from app.kb.backup.sqlite import sqlite_backup, sqlite_check_file, sqlite_in_use, sqlite_restore
from app.kb.db import file_identity, migration_head, require_database, transaction
from app.settings import Settings

__all__ = [
    "COUNTED",
    "MAGIC",
    "BackupError",
    "Contents",
    "Kind",
    "Outcome",
    "backup",
    "in_use",
    "kind_of",
    "kind_of_file",
    "read_contents",
    "restore",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished backup or restore: the backup file, its kind and size, how long the copy took, and what
    the backup (or the restored database) holds."""

    path: Path
    kind: Kind
    size_bytes: int
    seconds: float
    contents: Contents
    #: restore only: the newest knowledge version the database held before, if it could be read
    previous_version: str | None = None
    #: restore only: the other connections closed by ``--force`` (PostgreSQL)
    closed_connections: int = 0
    #: restore only: an ``audit_events`` row was added for the restore
    audited: bool = False
    #: restore only: ``-wal``/``-shm`` files of a database no longer at the path, moved aside
    moved_aside: tuple[Path, ...] = ()


def kind_of(settings: Settings) -> Kind:
    """The kind of database ``DATABASE_URL`` names."""
    if settings.sqlite_path is not None:
        return "sqlite"
    if settings.async_database_url.startswith("postgresql"):
        return "postgresql"
    raise BackupError(f"backup and restore work on an SQLite file or PostgreSQL, not {settings.database_url!r}")


def kind_of_file(path: Path) -> Kind | None:
    """The kind of database a backup file restores into, by its first bytes; None for anything else."""
    with path.open("rb") as f:
        head = f.read(16)
    return next((kind for kind, magic in MAGIC.items() if head.startswith(magic)), None)


async def backup(settings: Settings, out: Path, *, overwrite: bool = False) -> Outcome:
    """Back up the database ``settings`` name into the file ``out`` (written whole, then renamed into place)."""
    kind = kind_of(settings)
    require_database(settings)
    if out.exists() and not overwrite:
        raise BackupError(f"{out} exists: choose another name, or pass --force to replace it")
    if not out.parent.is_dir():
        raise BackupError(f"the directory {out.parent} does not exist")
    if settings.sqlite_path is not None and file_identity(out) == file_identity(settings.sqlite_path):
        raise BackupError(f"{out} is the database itself")
    started = time.perf_counter()
    if settings.sqlite_path is not None:
        found = await asyncio.to_thread(sqlite_backup, settings.sqlite_path, out)
    else:
        found = await pg_backup(settings, out)
    return Outcome(out, kind, out.stat().st_size, time.perf_counter() - started, found)


async def in_use(settings: Settings) -> str | None:
    """Why the database counts as in use (another connection has it open), or None when it does not."""
    if settings.sqlite_path is not None:
        if sqlite_in_use(settings.sqlite_path):
            return "another process has the database open (a running service, a sqlite3 shell, …)"
        return None
    others = await pg_other_connections(settings)
    return f"{others} other connection(s) to the database (pg_stat_activity)" if others else None


FORCE_MEANS: dict[Kind, str] = {
    "sqlite": "the backup is written into the database through SQLite, and a running service serves the restored "
    "data from its next query",
    "postgresql": "the other connections are closed first, and a running service reconnects",
}


async def _current_version(settings: Settings) -> str | None:
    with contextlib.suppress(Exception):
        return (await database_contents(settings)).knowledge_version
    return None


async def restore(settings: Settings, path: Path, *, force: bool = False, actor: str = "unknown") -> Outcome:
    """Restore the backup ``path`` into the database ``settings`` name, then read back what it holds.

    Refused (``BackupError``, nothing written) when the file is not a backup of this kind of database,
    when the database is in use and ``force`` is not given, and on PostgreSQL when the database holds
    tables the backup does not (they would outlive the restore). At the migration head, the restore is
    recorded in the restored audit trail (``database.restore``).
    """
    kind = kind_of(settings)
    if not path.is_file():
        raise BackupError(f"{path} is not a file")
    found_kind = kind_of_file(path)
    if found_kind is None:
        raise BackupError(f"{path} is neither an SQLite database file nor a pg_dump custom-format archive")
    if found_kind != kind:
        raise BackupError(
            f"{path} is {KIND_NAMES[found_kind]} backup ({FORMAT_NAMES[found_kind]}), but DATABASE_URL names "
            f"{KIND_NAMES[kind]} database: it restores only into {KIND_NAMES[found_kind]} database"
        )
    target = settings.sqlite_path
    exists = target is None or target.exists()
    if target is not None:
        sqlite_check_file(path)
        if exists and file_identity(target) == file_identity(path):
            raise BackupError(f"{path} is the database itself")
    else:
        extra = await pg_tables(settings) - await pg_archive_tables(path)
        if extra:
            raise BackupError(
                f"the database holds tables the backup does not ({', '.join(sorted(extra))}): restore into an "
                "empty database, or first bring the schema back to the backup's revision with "
                "`compute-advisor migrate REVISION`"
            )
    busy = await in_use(settings) if exists else None
    if busy and not force:
        raise BackupError(f"the database is in use: {busy}. Stop it, or pass --force ({FORCE_MEANS[kind]})")
    previous = await _current_version(settings) if exists else None
    closed = 0
    moved: tuple[Path, ...] = ()
    started = time.perf_counter()
    if target is not None:
        moved = await asyncio.to_thread(sqlite_restore, path, target)
    else:
        if busy:
            try:
                closed = await pg_other_connections(settings, close=True)
            except DBAPIError as exc:  # e.g. not allowed to end other roles' sessions
                raise BackupError(
                    f"the other connections cannot be closed ({exc.orig}): stop what uses the database, or "
                    "restore as a role allowed to end them (a superuser, or a member of pg_signal_backend)"
                ) from exc
        await pg_restore(settings, path)
        if busy:  # sessions opened during the restore may hold statements prepared on the old tables
            with contextlib.suppress(DBAPIError):
                closed += await pg_other_connections(settings, close=True)
    seconds = time.perf_counter() - started
    found = await database_contents(settings)
    audited = found.revision is not None and found.revision == migration_head()
    if audited:
        async with transaction(settings) as session:
            await audit.record(
                session,
                actor=actor,
                action="database.restore",
                subject=path.name,
                before=previous,
                after=found.knowledge_version,
                detail={"file": str(path.resolve()), "kind": kind, "bytes": path.stat().st_size, **found.counts},
            )
        found = await database_contents(settings)
    return Outcome(path, kind, path.stat().st_size, seconds, found, previous, closed, audited, moved)
