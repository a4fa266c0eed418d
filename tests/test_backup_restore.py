"""``backup`` and ``restore`` on SQLite and PostgreSQL, and a database never created by the service.

Round trip (knowledge base, API keys, audit trail, stored recommendations byte for byte); refusals
(the other kind of backup, a file that is no backup, a database in use without ``--force``, an
existing output file, tables the backup does not know, no ``pg_dump``); an older schema restored
says to migrate; the service and the CLI open an existing SQLite file only, and notice a file
replaced under a pooled connection. Served and under load: tests/test_recovery_served.py.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import asyncpg
import pytest
from alembic import command
from conftest import SME_PROFILE, Databases, create_key, load_seeds, make_client, require_backend
from sqlalchemy import text

from app.cli import main
from app.kb.db import alembic_config, database_config, migration_head
from app.settings import Settings

PROFILES = [{**SME_PROFILE, "gpus": g} for g in (8, 16, 64)]


def require_backup_tools(backend: str) -> None:
    """PostgreSQL backups need ``pg_dump`` and ``pg_restore``: skip without them, or fail under
    REQUIRE_POSTGRES=1 (CI)."""
    require_backend(backend)
    missing = [tool for tool in ("pg_dump", "pg_restore") if backend == "postgresql" and not shutil.which(tool)]
    if missing:
        reason = f"{' and '.join(missing)} not on PATH (the PostgreSQL client tools)"
        if os.environ.get("REQUIRE_POSTGRES") == "1":
            pytest.fail(f"REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)


def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str]:
    """``compute-advisor argv…`` against the database ``url``: exit status, and stdout and stderr together."""
    monkeypatch.setenv("DATABASE_URL", url)
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def fresh_target(databases: Databases, backend: str, tmp_path: Path) -> str:
    """Where a restore goes: a path with no file (SQLite), an empty database (PostgreSQL)."""
    if backend == "sqlite":
        (tmp_path / "restored").mkdir(exist_ok=True)
        return f"sqlite:///{tmp_path / 'restored' / 'compute-advisor.db'}"
    return databases.new(backend)


def scalar(url: str, sql: str) -> object:
    async def run() -> object:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.connect() as conn:
                return (await conn.execute(text(sql))).scalar()
        finally:
            await engine.dispose()

    return asyncio.run(run())


@pytest.fixture
def served_db(databases: Databases, backend: str) -> tuple[str, str, dict[str, bytes]]:
    """A database with seeds, an admin key, three stored recommendations: (url, key, id -> the 201 body)."""
    require_backup_tools(backend)
    url = databases.seeded(backend)
    _, key = create_key(url, ["admin"], name="backup test")
    stored: dict[str, bytes] = {}
    with make_client(url, api_key=key) as c:
        for profile in PROFILES:
            r = c.post("/v1/recommendations", json=profile)
            assert r.status_code == 201, r.text
            stored[r.json()["id"]] = r.content
    return url, key, stored


def test_a_backup_restored_into_a_fresh_database_holds_everything(
    served_db: tuple[str, str, dict[str, bytes]],
    databases: Databases,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, key, stored = served_db
    out = tmp_path / "compute-advisor.backup"
    code, said = cli(monkeypatch, capsys, url, "backup", "--out", str(out))
    assert code == 0, said
    assert out.stat().st_mode & 0o777 == 0o600
    assert out.read_bytes().startswith(b"SQLite format 3\x00" if backend == "sqlite" else b"PGDMP")
    version = str(scalar(url, "SELECT id || '-' || substr(content_hash, 1, 12) FROM knowledge_versions"))
    assert f"knowledge version: kv{version}" in said
    assert f"migration: {migration_head()} (at the head)" in said
    assert "rows: 3 recommendations, 1 api keys, 2 audit events" in said, said

    target = fresh_target(databases, backend, tmp_path)
    code, said = cli(monkeypatch, capsys, target, "restore", str(out))
    assert code == 0, said
    assert f"knowledge version: kv{version}" in said and f"migration: {migration_head()} (at the head)" in said
    assert "knowledge version before the restore: none" in said
    assert "recorded in the audit trail (database.restore)" in said

    with make_client(target, api_key=key) as c:  # the key itself comes back with the backup
        for rec_id, body in stored.items():
            got = c.get(f"/v1/recommendations/{rec_id}")
            assert got.status_code == 200, got.text
            assert got.content == body
        assert c.get("/v1/knowledge-version").json()["version"] == f"kv{version}"
        events = c.get("/v1/audit").json()["items"]
    assert [e["action"] for e in events] == ["database.restore", "key.create", "seeds.load"]
    assert events[0]["subject"] == out.name and events[0]["knowledge_version_after"] == f"kv{version}"
    assert events[0]["detail"]["recommendations"] == 3


def test_restore_refuses_the_other_kind_of_backup_and_files_that_are_no_backup(
    databases: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_url = databases.migrated("sqlite")
    sqlite_backup = tmp_path / "sqlite.backup"
    assert cli(monkeypatch, capsys, sqlite_url, "backup", "--out", str(sqlite_backup))[0] == 0

    junk = tmp_path / "junk"
    junk.write_text("not a backup")
    code, said = cli(monkeypatch, capsys, sqlite_url, "restore", str(junk))
    assert code == 2 and "neither an SQLite database file nor a pg_dump" in said and "nothing was written" in said
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    code, said = cli(monkeypatch, capsys, sqlite_url, "restore", str(foreign))
    assert code == 2 and "not a compute-advisor backup" in said

    require_backup_tools("postgresql")
    pg_url = databases.migrated("postgresql")
    pg_backup = tmp_path / "pg.backup"
    assert cli(monkeypatch, capsys, pg_url, "backup", "--out", str(pg_backup))[0] == 0
    code, said = cli(monkeypatch, capsys, pg_url, "restore", str(sqlite_backup))
    assert code == 2, said
    assert "is an SQLite backup" in said and "names a PostgreSQL database" in said
    code, said = cli(monkeypatch, capsys, sqlite_url, "restore", str(pg_backup))
    assert code == 2, said
    assert "is a PostgreSQL backup (a pg_dump custom-format archive)" in said and "names an SQLite database" in said


def _hold_open(url: str) -> subprocess.Popen[str]:
    """Another process with the SQLite database open, as a running service has it."""
    path = Settings(database_url=url).sqlite_path
    code = (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(path)!r}); c.execute('PRAGMA journal_mode=WAL')\n"
        "c.execute('SELECT count(*) FROM alembic_version').fetchall(); print('open', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    return proc


def test_restore_refuses_a_database_in_use_unless_forced(
    served_db: tuple[str, str, dict[str, bytes]],
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, key, stored = served_db
    out = tmp_path / "backup"
    assert cli(monkeypatch, capsys, url, "backup", "--out", str(out))[0] == 0
    with make_client(url, api_key=key) as c:
        later = c.post("/v1/recommendations", json=SME_PROFILE).json()["id"]

    if backend == "sqlite":
        holder = _hold_open(url)
        try:
            code, said = cli(monkeypatch, capsys, url, "restore", str(out))
            assert code == 2, said
            assert "in use: another process has the database open" in said and "--force" in said
            assert scalar(url, f"SELECT count(*) FROM recommendations WHERE id = '{later}'") == 1  # untouched
            code, said = cli(monkeypatch, capsys, url, "restore", "--force", str(out))
            assert code == 0, said
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)
    else:
        other = asyncio.new_event_loop()
        conn = other.run_until_complete(asyncpg.connect(url.replace("postgresql://", "postgres://")))
        try:
            code, said = cli(monkeypatch, capsys, url, "restore", str(out))
            assert code == 2, said
            # this connection, and any the app above left in its pool
            assert re.search(r"in use: \d+ other connection\(s\) to the database \(pg_stat_activity\)", said), said
            assert scalar(url, f"SELECT count(*) FROM recommendations WHERE id = '{later}'") == 1
            code, said = cli(monkeypatch, capsys, url, "restore", "--force", str(out))
            assert code == 0, said
            assert re.search(r"closed \d+ other connection\(s\)", said), said
            # the staging databases are dropped even though the forced restore ended the session that made them
            staging = f"SELECT count(*) FROM pg_database WHERE datname LIKE 'ca\\_%\\_{os.getpid()}\\_%'"
            assert scalar(url, staging) == 0
            assert conn.is_closed() or other.run_until_complete(_dead(conn))
        finally:
            other.run_until_complete(conn.close(timeout=5))
            other.close()
    assert scalar(url, f"SELECT count(*) FROM recommendations WHERE id = '{later}'") == 0  # made after the backup
    assert scalar(url, "SELECT count(*) FROM recommendations") == len(stored)


async def _dead(conn: asyncpg.Connection) -> bool:
    try:
        await conn.fetchval("SELECT 1")
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        return True
    return False


def test_backup_refuses_an_existing_file_unless_forced(
    databases: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = databases.migrated("sqlite")
    out = tmp_path / "backup.db"
    out.write_text("an earlier file")
    code, said = cli(monkeypatch, capsys, url, "backup", "--out", str(out))
    assert code == 2 and "exists" in said and out.read_text() == "an earlier file"
    assert cli(monkeypatch, capsys, url, "backup", "--out", str(out), "--force")[0] == 0
    assert out.read_bytes().startswith(b"SQLite format 3\x00")
    code, said = cli(monkeypatch, capsys, url, "backup", "--out", str(tmp_path / "no such dir" / "b.db"))
    assert code == 2 and "does not exist" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.db"]  # no partial file left behind


def test_postgresql_refusals_without_pg_dump_and_with_unknown_tables(
    databases: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_backup_tools("postgresql")
    url = databases.migrated("postgresql")
    out = tmp_path / "pg.backup"
    assert cli(monkeypatch, capsys, url, "backup", "--out", str(out))[0] == 0

    target = databases.migrated("postgresql")
    asyncio.run(_execute(target, "CREATE TABLE reports_from_the_future (id integer)"))
    code, said = cli(monkeypatch, capsys, target, "restore", str(out))
    assert code == 2, said
    assert "tables the backup does not (reports_from_the_future)" in said and "compute-advisor migrate" in said

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, said = cli(monkeypatch, capsys, url, "backup", "--out", str(tmp_path / "again.backup"))
    assert code == 2 and "pg_dump is not on PATH" in said and "nothing was written" in said
    assert not (tmp_path / "again.backup").exists()


async def _execute(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url.replace("postgresql://", "postgres://"))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def test_a_backup_of_an_older_schema_is_restored_and_says_to_migrate(
    databases: Databases,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_backup_tools(backend)
    url = databases.new(backend)
    command.upgrade(alembic_config(Settings(database_url=url)), "0001")
    out = tmp_path / "old.backup"
    code, said = cli(monkeypatch, capsys, url, "backup", "--out", str(out))
    assert code == 0 and f"migration: 0001 (NOT the head {migration_head()})" in said
    target = fresh_target(databases, backend, tmp_path)
    code, said = cli(monkeypatch, capsys, target, "restore", str(out))
    assert code == 1, said
    assert "migration: 0001" in said and "compute-advisor migrate" in said
    assert "recorded in the audit trail" not in said
    assert cli(monkeypatch, capsys, target, "migrate")[0] == 0
    assert scalar(target, "SELECT version_num FROM alembic_version") == migration_head()


# ---- the service never creates a database; a replaced file is noticed ----------------------------


def test_neither_the_service_nor_the_cli_creates_a_missing_sqlite_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "data" / "compute-advisor.db"
    path.parent.mkdir()
    url = f"sqlite:///{path}"
    with make_client(url, api_key=None) as c:
        ready = c.get("/health/ready")
        assert ready.status_code == 503, ready.text
        assert ready.json()["checks"]["database"].startswith("unreachable")
        assert not path.exists()
        code, said = cli(monkeypatch, capsys, url, "knowledge", "version")
        assert code == 2 and f"no database at {path}" in said and "compute-advisor migrate" in said
        assert list(path.parent.iterdir()) == []

        assert cli(monkeypatch, capsys, url, "migrate")[0] == 0  # migrate creates it
        load_seeds(url)
        deadline = time.monotonic() + 30
        while c.get("/health/ready").status_code != 200:  # no restart: the next poll finds it
            assert time.monotonic() < deadline, c.get("/health/ready").text
            time.sleep(0.1)


async def threads_ended(before: set[threading.Thread]) -> None:
    """Wait (on the running loop) for the threads started since ``before`` to end: the pool stops a
    refused aiosqlite connection without waiting, and its thread answers through this loop."""
    deadline = time.monotonic() + 30
    while any(t.is_alive() for t in set(threading.enumerate()) - before) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def test_a_pooled_sqlite_connection_follows_a_replaced_file(tmp_path: Path) -> None:
    """The checkout check compares the file's identity: a file replaced at the path is opened anew."""
    live, other = tmp_path / "live", tmp_path / "other"
    for directory, marker in ((live, "old"), (other, "new")):
        directory.mkdir()
        with sqlite3.connect(directory / "x.db") as conn:
            conn.execute("CREATE TABLE marker (value TEXT)")
            conn.execute("INSERT INTO marker VALUES (?)", (marker,))
    settings = Settings(database_url=f"sqlite:///{live / 'x.db'}")

    async def run() -> list[object]:
        engine = database_config(settings).get_engine()
        threads = set(threading.enumerate())
        seen: list[object] = []
        try:
            for step in ("before", "swap", "gone"):
                if step == "swap":  # a volume swapped under the service: a new file at the same path
                    os.rename(live, tmp_path / "old")
                    os.rename(other, live)
                if step == "gone":
                    os.rename(live, tmp_path / "away")
                try:
                    async with engine.connect() as conn:
                        seen.append(await conn.scalar(text("SELECT value FROM marker")))
                except Exception as exc:
                    seen.append(type(exc).__name__)
        finally:
            await engine.dispose()
            await threads_ended(threads)
        return seen

    assert asyncio.run(run()) == ["old", "new", "OperationalError"]
    assert not live.exists()  # and nothing was created at the path


def test_a_file_swapped_while_a_connection_opens_it_fails_that_attempt_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.kb import db

    path = tmp_path / "x.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    real = db.file_identity
    answers = iter([(1, 1), (1, 2)])  # before and after SQLite opened it: another file

    def identity(p: Path) -> tuple[int, int] | None:
        return next(answers, None) or real(p)

    monkeypatch.setattr(db, "file_identity", identity)

    async def run() -> list[str]:
        engine = database_config(Settings(database_url=f"sqlite:///{path}")).get_engine()
        threads = set(threading.enumerate())
        seen = []
        try:
            for _ in range(2):
                try:
                    async with engine.connect() as conn:
                        seen.append(str(await conn.scalar(text("SELECT count(*) FROM t"))))
                except Exception as exc:
                    seen.append(f"{type(exc).__module__}.{type(exc).__name__}")
        finally:
            await engine.dispose()
            await threads_ended(threads)
        return seen

    # SQLAlchemy's OperationalError: a database outage to the service (503), and the next attempt works
    assert asyncio.run(run()) == ["sqlalchemy.exc.OperationalError", "0"]
