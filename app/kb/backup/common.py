"""What SQLite and PostgreSQL backups share: the kinds of backup file, refusals, and what a database holds."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb.db import transaction
from app.kb.models import version_label
from app.settings import Settings

Kind = Literal["sqlite", "postgresql"]
#: a backup file's first bytes, by the kind of database it restores into
MAGIC: dict[Kind, bytes] = {"sqlite": b"SQLite format 3\x00", "postgresql": b"PGDMP"}
FORMAT_NAMES: dict[Kind, str] = {"sqlite": "an SQLite database file", "postgresql": "a pg_dump custom-format archive"}
#: the kinds as sentences name them, with their article
KIND_NAMES: dict[Kind, str] = {"sqlite": "an SQLite", "postgresql": "a PostgreSQL"}
COUNTED = ("recommendations", "api_keys", "audit_events")


class BackupError(Exception):
    """A backup or restore refused or failed before anything was written."""


@dataclass(frozen=True, slots=True)
class Contents:
    """What a database or a backup holds: its migration, newest knowledge version and row counts."""

    revision: str | None
    knowledge_version: str | None
    counts: dict[str, int]


def read_contents(query: Callable[[str], Sequence[Any] | None], tables: Collection[str]) -> Contents:
    """``Contents`` through ``query`` (one row of an SQL statement, or None) on a database with ``tables``."""

    def one(sql: str) -> Any:
        row = query(sql)
        return None if row is None else row[0]

    revision = one("SELECT version_num FROM alembic_version") if "alembic_version" in tables else None
    version = None
    if "knowledge_versions" in tables:
        newest = query("SELECT id, content_hash FROM knowledge_versions ORDER BY id DESC LIMIT 1")
        version = None if newest is None else version_label(int(newest[0]), str(newest[1]))
    counts = {t: int(one(f"SELECT count(*) FROM {t}")) for t in COUNTED if t in tables}
    return Contents(None if revision is None else str(revision), version, counts)


def _contents_of(conn: Connection) -> Contents:
    return read_contents(lambda sql: conn.execute(text(sql)).first(), set(inspect(conn).get_table_names()))


async def contents(session: AsyncSession) -> Contents:
    """What the database of ``session`` holds."""
    return await session.run_sync(lambda s: _contents_of(s.connection()))


async def database_contents(settings: Settings) -> Contents:
    async with transaction(settings) as session:
        return await contents(session)


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def partial(path: Path, what: str) -> Path:
    """A new, empty file next to ``path`` (mode 0600: a backup holds the whole database)."""
    tmp = path.with_name(f".{path.name}.{what}-{os.getpid()}")
    tmp.unlink(missing_ok=True)  # left by an earlier run that was killed
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    return tmp
