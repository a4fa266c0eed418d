"""PostgreSQL backups: ``pg_dump`` custom format of one exported snapshot, ``pg_restore`` in one transaction."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import secrets
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.kb.backup.common import BackupError, Contents, contents, fsync, partial
from app.kb.backup.verify import Schema, check_rows, pg_schema
from app.kb.db import database_config, transaction
from app.settings import Settings

log = logging.getLogger(__name__)


def pg_tool(name: str) -> str:
    """The path of ``pg_dump`` or ``pg_restore``, or a clear refusal when it is not installed."""
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} is not on PATH: install the PostgreSQL client tools of the server's major version "
            f"(e.g. `apt-get install postgresql-client`) and run the command again"
        )
    return found


def libpq_target(settings: Settings) -> tuple[str, dict[str, str]]:
    """The database as ``pg_dump``/``pg_restore`` take it: a URI without the password, which goes in
    ``PGPASSWORD`` instead (never on a command line other users can read)."""
    url = make_url(settings.database_url)
    env = {"PGPASSWORD": url.password} if url.password else {}
    uri = url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    return uri, env


async def _run(argv: list[str], env: dict[str, str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        said = (err or out).decode(errors="replace").strip()
        raise BackupError(f"{Path(argv[0]).name} failed (exit status {proc.returncode}): {said}")


async def pg_backup(settings: Settings, out: Path) -> Contents:
    """``pg_dump`` of one exported snapshot into ``out``; the contents reported are read in that snapshot."""
    tool = pg_tool("pg_dump")
    uri, env = libpq_target(settings)
    tmp = partial(out, "partial")
    try:
        async with transaction(settings) as session:
            await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
            snapshot = str(await session.scalar(text("SELECT pg_export_snapshot()")))
            found = await contents(session)
            argv = [tool, "--format=custom", f"--snapshot={snapshot}", "--no-password", f"--file={tmp}"]
            await _run([*argv, f"--dbname={uri}"], env)
        fsync(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return found


async def pg_archive_tables(path: Path) -> set[str]:
    """The tables of schema ``public`` a pg_dump archive holds (from ``pg_restore --list``)."""
    proc = await asyncio.create_subprocess_exec(
        pg_tool("pg_restore"), "--list", str(path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise BackupError(f"{path} cannot be read as a pg_dump archive: {err.decode(errors='replace').strip()}")
    tables = set()
    for line in out.decode().splitlines():
        # "215; 1259 16390 TABLE public recommendations postgres" (not "TABLE DATA …")
        words = line.split()
        if not line.startswith(";") and len(words) >= 6 and words[3] == "TABLE" and words[4] == "public":
            tables.add(words[5])
    if "alembic_version" not in tables:
        raise BackupError(f"{path} is not a compute-advisor backup: it has no migration revision (alembic_version)")
    return tables


#: the other client sessions on this database; ``backend_type`` is NULL for other roles' sessions when
#: the role may not see their details, and background processes have no user
OTHER_SESSIONS = (
    "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND usesysid IS NOT NULL AND coalesce(backend_type, 'client backend') = 'client backend'"
)


async def pg_other_connections(settings: Settings, *, close: bool = False) -> int:
    """How many other client sessions are connected to the database (and, with ``close``, closed)."""
    async with transaction(settings) as session:
        if close:
            terminate = f"SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) {OTHER_SESSIONS}"
            return int(await session.scalar(text(terminate)) or 0)
        return int(await session.scalar(text(f"SELECT count(*) {OTHER_SESSIONS}")) or 0)


async def pg_tables(settings: Settings) -> set[str]:
    async with transaction(settings) as session:
        rows = await session.scalars(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
        return set(rows)


async def pg_restore(settings: Settings, path: Path) -> None:
    """``pg_restore`` of the archive ``path`` into the database, in one transaction."""
    uri, env = libpq_target(settings)
    argv = [pg_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--no-privileges"]
    argv += ["--single-transaction", "--exit-on-error", "--no-password", f"--dbname={uri}", str(path)]
    await _run(argv, env)


def pg_elsewhere(settings: Settings, database: str) -> Settings:
    """``settings`` naming another database on the same server (a staging database)."""
    url = make_url(settings.database_url).set(database=database).render_as_string(hide_password=False)
    return dataclasses.replace(settings, database_url=url)


@contextlib.asynccontextmanager
async def pg_staging_database(settings: Settings, what: str) -> AsyncIterator[Settings]:
    """A new, empty database on the server of ``settings`` for as long as the block runs, then dropped."""
    name = f"ca_{what}_{os.getpid()}_{secrets.token_hex(4)}"
    engine = database_config(settings).get_engine().execution_options(isolation_level="AUTOCOMMIT")
    try:
        try:
            async with engine.connect() as conn:
                await conn.execute(text(f'CREATE DATABASE "{name}"'))
        except DBAPIError as exc:
            raise BackupError(
                f"a staging database cannot be created ({exc.orig}): a restore is verified in a staging "
                "database first, so the role restoring needs CREATEDB"
            ) from exc
        try:
            yield pg_elsewhere(settings, name)
        finally:
            # on a connection of its own: a forced restore ends every other session on the database,
            # the pooled one that created the staging database among them
            await engine.dispose()
            try:
                async with engine.connect() as conn:
                    await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            except DBAPIError as exc:
                log.warning("the staging database %s could not be dropped (drop it by hand): %s", name, exc.orig)
    finally:
        await engine.dispose()


async def pg_database_schema(settings: Settings) -> Schema:
    """The objects of the database ``settings`` name (``app.kb.backup.verify.pg_schema``)."""
    async with transaction(settings) as session:
        return await session.run_sync(lambda s: pg_schema(s.connection()))


async def pg_check_rows(settings: Settings) -> None:
    """Refuse rows the service never writes (``app.kb.backup.verify.check_rows``)."""
    async with transaction(settings) as session:

        def run(s: Session) -> None:
            conn = s.connection()
            check_rows(lambda sql: conn.execute(text(sql)).all(), inspect(conn).get_table_names())

        await session.run_sync(run)
