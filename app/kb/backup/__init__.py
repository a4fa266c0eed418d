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

Before either touches the database, the backup is restored into a staging copy and verified there
(``app.kb.backup.verify``); a refusal leaves the database as it was. See ``restore``.

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
import dataclasses
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from sqlalchemy import text
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
from app.kb.backup.postgres import (
    pg_archive_tables,
    pg_backup,
    pg_check_rows,
    pg_database_schema,
    pg_other_connections,
    pg_restore,
    pg_staging_database,
    pg_tables,
)
from app.kb.backup.sqlite import (
    sqlite_backup,
    sqlite_check_file,
    sqlite_check_staged_rows,
    sqlite_in_use,
    sqlite_settle,
    sqlite_stage,
    sqlite_staged_schema,
    sqlite_swap,
)
from app.kb.backup.verify import Schema, compare
from app.kb.db import alembic_config, file_identity, migration_head, migration_revisions, require_database, transaction
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


async def _expected_schema(settings: Settings, revision: str) -> Schema:
    """What the migrations create at ``revision``: an empty staging database migrated with Alembic."""
    if revision not in migration_revisions():
        raise BackupError(
            f"the backup is at migration {revision}, which this release's migrations do not know (a newer "
            "release wrote it): restore it with that release"
        )
    if settings.sqlite_path is not None:
        with tempfile.TemporaryDirectory(prefix="compute-advisor-expected-") as tmp:
            expected = Path(tmp) / "expected.db"
            staging = dataclasses.replace(settings, database_url=f"sqlite:///{expected}")
            await asyncio.to_thread(command.upgrade, alembic_config(staging), revision)
            return await asyncio.to_thread(sqlite_staged_schema, expected)
    # PostgreSQL: migrated, then dumped and restored like a backup — pg_restore writes some definitions
    # back in another (equivalent) spelling, e.g. the casts of a CHECK's ``IN`` list
    async with pg_staging_database(settings, "expected") as staging:
        await asyncio.to_thread(command.upgrade, alembic_config(staging), revision)
        with tempfile.TemporaryDirectory(prefix="compute-advisor-expected-") as tmp:
            dumped = Path(tmp) / "expected.backup"
            await pg_backup(staging, dumped)
            async with pg_staging_database(settings, "expected") as restored:
                await pg_restore(restored, dumped)
                return await pg_database_schema(restored)


async def _record_restore(
    staged: Settings, path: Path, kind: Kind, previous: str | None, actor: str
) -> tuple[int, Contents]:
    """The restore's audit event, written into the staged copy and read back: (its id, what the copy holds)."""
    found = await database_contents(staged)
    try:
        async with transaction(staged) as session:
            event = await audit.record(
                session,
                actor=actor,
                action="database.restore",
                subject=path.name,
                before=previous,
                after=found.knowledge_version,
                detail={"file": str(path.resolve()), "kind": kind, "bytes": path.stat().st_size, **found.counts},
            )
            event_id = event.id
    except (DBAPIError, sqlite3.Error, OSError) as exc:
        raise BackupError(f"the restore cannot be recorded in the backup's audit trail: {exc}") from exc
    if not await _audited(staged, event_id):
        raise BackupError("the restore's audit event cannot be read back from the staged copy")
    return event_id, await database_contents(staged)


async def _audited(settings: Settings, event_id: int) -> bool:
    async with transaction(settings) as session:
        found = await session.execute(text("SELECT action FROM audit_events WHERE id = :id"), {"id": event_id})
        return found.scalar() == "database.restore"


async def _verify(staged: Settings, revision: str, expected: Schema) -> None:
    """Refuse a staged copy whose schema or rows are not what the migrations and the service make (or
    that cannot be read at all)."""
    try:
        if staged.sqlite_path is not None:
            compare(await asyncio.to_thread(sqlite_staged_schema, staged.sqlite_path), expected, revision)
            await asyncio.to_thread(sqlite_check_staged_rows, staged.sqlite_path)
        else:
            compare(await pg_database_schema(staged), expected, revision)
            await pg_check_rows(staged)
    except (DBAPIError, sqlite3.Error) as exc:
        raise BackupError(f"the backup cannot be verified: {type(exc).__name__}: {exc}") from exc


async def restore(settings: Settings, path: Path, *, force: bool = False, actor: str = "unknown") -> Outcome:
    """Restore the backup ``path`` into the database ``settings`` name, then read back what it holds.

    The backup is first restored into a staging copy — a file next to the SQLite database, a staging
    PostgreSQL database — and verified there (``app.kb.backup.verify``: the schema the migrations create
    at its revision, nothing more or less; API keys and audit events as the service writes them). At the
    migration head the restore's audit event (``database.restore``) is written into the staged copy and
    read back. Only then is the copy swapped in, in one step: SQLite copies the verified file into the
    database in one write transaction (or renames it into place when there is none); PostgreSQL
    restores a dump of the verified staging database with ``pg_restore --single-transaction``.

    Refused (``BackupError``, the database untouched) when the file is not a backup of this kind of
    database or fails the verification, when the database is in use and ``force`` is not given, and on
    PostgreSQL when the database holds tables the backup does not (they would outlive the restore).
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
        revision = sqlite_check_file(path).revision
        if exists and file_identity(target) == file_identity(path):
            raise BackupError(f"{path} is the database itself")
    else:
        await pg_archive_tables(path)  # refuses an archive without a migration revision
        revision = None
    busy = await in_use(settings) if exists else None
    if busy and not force:
        raise BackupError(f"the database is in use: {busy}. Stop it, or pass --force ({FORCE_MEANS[kind]})")
    previous = await _current_version(settings) if exists else None
    started = time.perf_counter()
    if target is not None:
        assert revision is not None  # sqlite_check_file refuses a file without one
        expected = await _expected_schema(settings, revision)
        staged_file = await asyncio.to_thread(sqlite_stage, path, target)
        try:
            staged = dataclasses.replace(settings, database_url=f"sqlite:///{staged_file}")
            await _verify(staged, revision, expected)
            event_id = None
            if revision == migration_head():
                event_id, _ = await _record_restore(staged, path, kind, previous, actor)
            await asyncio.to_thread(sqlite_settle, staged_file)
            moved = await asyncio.to_thread(sqlite_swap, staged_file, target)
        finally:
            staged_file.unlink(missing_ok=True)
        closed = 0
    else:
        moved = ()
        event_id, closed = await _pg_restore_verified(settings, path, kind, previous, actor, busy is not None)
    seconds = time.perf_counter() - started
    found = await database_contents(settings)
    audited = event_id is not None and await _audited(settings, event_id)
    return Outcome(path, kind, path.stat().st_size, seconds, found, previous, closed, audited, moved)


async def _pg_restore_verified(
    settings: Settings, path: Path, kind: Kind, previous: str | None, actor: str, busy: bool
) -> tuple[int | None, int]:
    """PostgreSQL: the archive restored into a staging database and verified there, its audit event
    written there; then a dump of that staging database restored into the database in one transaction.
    (The event id, the other connections closed.)"""
    async with pg_staging_database(settings, "restore") as staged:
        await pg_restore(staged, path)
        revision = (await database_contents(staged)).revision
        if revision is None:
            raise BackupError(f"{path} is not a compute-advisor backup: it has no migration revision (alembic_version)")
        await _verify(staged, revision, await _expected_schema(settings, revision))
        extra = await pg_tables(settings) - await pg_tables(staged)
        if extra:
            raise BackupError(
                f"the database holds tables the backup does not ({', '.join(sorted(extra))}): restore into an "
                "empty database, or first bring the schema back to the backup's revision with "
                "`compute-advisor migrate REVISION`"
            )
        event_id = None
        if revision == migration_head():
            event_id, _ = await _record_restore(staged, path, kind, previous, actor)
        with tempfile.TemporaryDirectory(prefix="compute-advisor-restore-") as tmp:
            verified = Path(tmp) / "verified.backup"
            await pg_backup(staged, verified)
            closed = 0
            if busy:
                try:
                    closed = await pg_other_connections(settings, close=True)
                except DBAPIError as exc:  # e.g. not allowed to end other roles' sessions
                    raise BackupError(
                        f"the other connections cannot be closed ({exc.orig}): stop what uses the database, or "
                        "restore as a role allowed to end them (a superuser, or a member of pg_signal_backend)"
                    ) from exc
            await pg_restore(settings, verified)
            if busy:  # sessions opened during the restore may hold statements prepared on the old tables
                with contextlib.suppress(DBAPIError):
                    closed += await pg_other_connections(settings, close=True)
    return event_id, closed
