"""A restore verifies the backup before it touches the database, on SQLite and PostgreSQL.

The backup is restored into a staging copy first and compared with what the migrations create at its
revision (an empty staging database migrated with Alembic): a missing table, an extra table, a view,
a trigger, any object the migrations do not make is refused, and so are rows no release writes (an
API key not stored as a SHA-256 hash, an audit event that cannot be read). A refusal is exit status 2
with the reason, and leaves the database as it was: byte for byte on SQLite, the same tables and row
counts on PostgreSQL. The restore's own audit record is written in the staged copy, read back, and
swapped in with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import SME_PROFILE, Databases, create_key, make_client
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from test_backup_restore import cli, require_backup_tools, scalar

from app.kb import audit
from app.kb.db import database_config, migration_head
from app.settings import Settings

PLANTED_KEY = "ca_" + "p" * 43
PLANTED_HASH = hashlib.sha256(PLANTED_KEY.encode()).hexdigest()

#: (what is planted, SQL per backend, a word the refusal names)
HOSTILE: dict[str, tuple[dict[str, list[str]], str]] = {
    "an extra table": (
        {"sqlite": ["CREATE TABLE exfiltrate (x TEXT)"], "postgresql": ["CREATE TABLE exfiltrate (x text)"]},
        "exfiltrate",
    ),
    "a view": (
        {
            "sqlite": ["CREATE VIEW key_list AS SELECT key_hash FROM api_keys"],
            "postgresql": ["CREATE VIEW key_list AS SELECT key_hash FROM api_keys"],
        },
        "key_list",
    ),
    "a trigger that plants an admin key": (
        {
            "sqlite": [
                "CREATE TRIGGER plant AFTER INSERT ON recommendations BEGIN "
                "INSERT INTO api_keys (name, key_prefix, key_hash, scopes, created_at) "
                f"VALUES ('planted', 'ca_ppppp', '{PLANTED_HASH}', '[\"admin\"]', '2026-01-01 00:00:00'); END"
            ],
            "postgresql": [
                "CREATE FUNCTION plant_key() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "INSERT INTO api_keys (name, key_prefix, key_hash, scopes, created_at) "
                f"VALUES ('planted', 'ca_ppppp', '{PLANTED_HASH}', '[\"admin\"]', now()); RETURN NEW; END $$",
                "CREATE TRIGGER plant AFTER INSERT ON recommendations FOR EACH ROW EXECUTE FUNCTION plant_key()",
            ],
        },
        "plant",
    ),
    "a trigger that drops audit events": (
        {
            "sqlite": ["CREATE TRIGGER hush BEFORE INSERT ON audit_events BEGIN SELECT RAISE(IGNORE); END"],
            "postgresql": [
                "CREATE FUNCTION hush() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
                "CREATE TRIGGER hush BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION hush()",
            ],
        },
        "hush",
    ),
    "a missing table": (
        {"sqlite": ["DROP TABLE idempotency_keys"], "postgresql": ["DROP TABLE idempotency_keys CASCADE"]},
        "missing table idempotency_keys",
    ),
    "an API key stored in clear": (
        {
            "sqlite": [f"UPDATE api_keys SET key_hash = '{PLANTED_KEY}'"],
            "postgresql": [f"UPDATE api_keys SET key_hash = '{PLANTED_KEY[:64]}'"],
        },
        "not stored as a SHA-256 hash",
    ),
    "an audit event of no known action": (
        {
            "sqlite": ["UPDATE audit_events SET action = 'key.steal'"],
            "postgresql": ["UPDATE audit_events SET action = 'key.steal'"],
        },
        "cannot be read",
    ),
}


def execute(url: str, statements: list[str]) -> None:
    async def run() -> None:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.begin() as conn:
                for sql in statements:
                    await conn.execute(text(sql))
        finally:
            await engine.dispose()

    asyncio.run(run())


def state(url: str, backend: str) -> object:
    """What a refusal must leave as it was: the file's bytes (SQLite), every table's row count (PostgreSQL)."""
    if backend == "sqlite":
        path = Path(Settings(database_url=url).sqlite_path or "")
        with contextlib.closing(sqlite3.connect(path)) as conn:  # what the log holds, into the file
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return hashlib.sha256(path.read_bytes()).hexdigest()
    tables = sorted(str(t) for t in _rows(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
    return {t: scalar(url, f'SELECT count(*) FROM "{t}"') for t in tables}


def _rows(url: str, sql: str) -> list[object]:
    async def run() -> list[object]:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.connect() as conn:
                return list((await conn.execute(text(sql))).scalars())
        finally:
            await engine.dispose()

    return asyncio.run(run())


@pytest.fixture
def live(databases: Databases, backend: str) -> tuple[str, str]:
    """The database a restore would replace: seeds, an admin key and stored recommendations; (url, key)."""
    require_backup_tools(backend)
    url = databases.seeded(backend)
    _, key = create_key(url, ["admin"], name="live")
    with make_client(url, api_key=key) as c:
        for gpus in (8, 16):
            assert c.post("/v1/recommendations", json={**SME_PROFILE, "gpus": gpus}).status_code == 201
    return url, key


def backup_of(url: str, out: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    code, said = cli(monkeypatch, capsys, url, "backup", "--out", str(out))
    assert code == 0, said
    return out


def refused(
    live_url: str,
    backend: str,
    file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> str:
    """Restore ``file`` over the live database: refused with exit status 2, the database as it was."""
    before = state(live_url, backend)
    code, said = cli(monkeypatch, capsys, live_url, "restore", "--force", str(file))
    assert code == 2, said
    assert "nothing was written" in said and "Traceback" not in said
    assert state(live_url, backend) == before
    assert not staging_left(live_url, backend)
    return said


def staging_left(url: str, backend: str) -> list[object]:
    """Staged files (SQLite) or staging databases (PostgreSQL) this process made and left behind."""
    if backend == "sqlite":
        path = Settings(database_url=url).sqlite_path
        assert path is not None
        return [p.name for p in path.parent.iterdir() if ".restoring" in p.name]
    pattern = f"ca\\_%\\_{os.getpid()}\\_%"
    return _rows(url, f"SELECT datname FROM pg_database WHERE datname LIKE '{pattern}'")


def test_a_backup_holding_only_the_migration_revision_is_refused(
    live: tuple[str, str],
    databases: Databases,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bare = databases.new(backend)
    if backend == "sqlite":
        with sqlite3.connect(Settings(database_url=bare).sqlite_path or "") as conn:
            conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
            conn.execute("INSERT INTO alembic_version VALUES (?)", (migration_head(),))
    else:
        execute(
            bare,
            [
                "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)",
                f"INSERT INTO alembic_version VALUES ('{migration_head()}')",
            ],
        )
    out = backup_of(bare, tmp_path / "bare.backup", monkeypatch, capsys)
    said = refused(live[0], backend, out, monkeypatch, capsys)
    assert "does not match the schema the migrations create" in said
    assert "missing table recommendations" in said and "missing table api_keys" in said


@pytest.mark.parametrize("planted", list(HOSTILE))
def test_a_backup_with_objects_or_rows_the_migrations_do_not_make_is_refused(
    planted: str,
    live: tuple[str, str],
    databases: Databases,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    statements, named = HOSTILE[planted]
    source = databases.seeded(backend)
    create_key(source, ["catalog:read"], name="source")
    execute(source, statements[backend])
    out = backup_of(source, tmp_path / "hostile.backup", monkeypatch, capsys)
    said = refused(live[0], backend, out, monkeypatch, capsys)
    assert named in said, said
    with make_client(live[0], api_key=PLANTED_KEY) as c:
        assert c.get("/v1/audit").status_code == 401


def test_a_failed_audit_record_leaves_the_database_as_it_was(
    live: tuple[str, str],
    databases: Databases,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = backup_of(databases.seeded(backend), tmp_path / "good.backup", monkeypatch, capsys)

    async def fails(*_args: object, **_kwargs: object) -> None:
        raise sa_exc.OperationalError("INSERT INTO audit_events", {}, Exception("disk I/O error"))

    monkeypatch.setattr(audit, "record", fails)
    said = refused(live[0], backend, out, monkeypatch, capsys)
    assert "audit" in said


def test_a_verified_restore_swaps_in_the_backup_with_its_audit_record(
    live: tuple[str, str],
    databases: Databases,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = databases.seeded(backend)
    _, key = create_key(source, ["admin"], name="from the backup")
    out = backup_of(source, tmp_path / "good.backup", monkeypatch, capsys)
    code, said = cli(monkeypatch, capsys, live[0], "restore", "--force", str(out))
    assert code == 0, said
    assert "recorded in the audit trail (database.restore)" in said
    assert not staging_left(live[0], backend)  # no staged file, no staging database
    assert scalar(live[0], "SELECT count(*) FROM recommendations") == 0  # the backup's, not the live ones
    with make_client(live[0], api_key=key) as c:
        events = c.get("/v1/audit").json()["items"]
    assert [e["action"] for e in events][:2] == ["database.restore", "key.create"]
