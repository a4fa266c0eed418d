"""What holds for stored data besides the writer: SQLite's synchronous pragma, PostgreSQL's statement
and lock timeouts, and the knowledge snapshot read as one consistent transaction (both databases)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from conftest import PG_HOST, PG_PORT, SME_PROFILE, Databases, make_client
from sqlalchemy import event, text

from app.kb import snapshot
from app.kb.db import database_config
from app.settings import Settings


def _run_elsewhere(url: str, statement: str) -> None:
    """Commit ``statement`` on a connection of its own, in a thread of its own (and its own event loop)."""

    async def run() -> None:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.begin() as conn:
                await conn.execute(text(statement))
        finally:
            await engine.dispose()

    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(run())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive() and not errors, errors


def test_a_change_committed_mid_read_does_not_reach_the_snapshot(databases: Databases, backend: str) -> None:
    """Between the snapshot's first SELECT and its next ones another connection commits a change (as a
    seed load would): the snapshot holds the rows of the state its first read saw."""
    url = databases.seeded(backend)

    async def read() -> Any:
        config = database_config(Settings(database_url=url))
        engine = config.get_engine()
        fired: list[str] = []

        def after(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if not fired and "knowledge_versions" in statement:
                fired.append(statement)
                _run_elsewhere(url, "UPDATE gpu_models SET name = 'changed mid-read'")

        event.listen(engine.sync_engine, "after_cursor_execute", after)
        try:
            async with config.create_session_maker()() as session:
                return await snapshot.load_knowledge(session), fired
        finally:
            await engine.dispose()

    knowledge, fired = asyncio.run(read())
    assert fired  # the change was committed during the read
    assert knowledge is not None and knowledge.gpus
    assert all(g.name != "changed mid-read" for g in knowledge.gpus.values())

    async def read_again() -> Any:
        config = database_config(Settings(database_url=url))
        try:
            async with config.create_session_maker()() as session:
                return await snapshot.load_knowledge(session)
        finally:
            await config.get_engine().dispose()

    again = asyncio.run(read_again())  # and the next read sees it: the test can fail
    assert again is not None and all(g.name == "changed mid-read" for g in again.gpus.values())


@pytest.mark.parametrize(("setting", "level"), [("FULL", 2), ("NORMAL", 1)])
def test_sqlite_connections_use_the_configured_synchronous_pragma(
    databases: Databases, setting: str, level: int
) -> None:
    url = databases.migrated("sqlite")

    async def pragmas() -> tuple[Any, Any]:
        config = database_config(Settings(database_url=url, sqlite_synchronous=setting))  # type: ignore[arg-type]
        try:
            async with config.get_engine().connect() as conn:
                sync = (await conn.execute(text("PRAGMA synchronous"))).scalar()
                journal = (await conn.execute(text("PRAGMA journal_mode"))).scalar()
                return sync, journal
        finally:
            await config.get_engine().dispose()

    assert asyncio.run(pragmas()) == (level, "wal")


def test_settings_read_the_durability_variables() -> None:
    s = Settings.from_env(
        {
            "SQLITE_SYNCHRONOUS": "normal",
            "DATABASE_STATEMENT_TIMEOUT_MS": "1000",
            "DATABASE_LOCK_TIMEOUT_MS": "200",
            "WRITER_QUEUE_LIMIT": "10",
            "RECOMMENDATION_DAILY_QUOTA": "500",
            "RECOMMENDATION_RETENTION_DAYS": "off",
        }
    )
    assert s.sqlite_synchronous == "NORMAL"
    assert s.postgres_session_settings == {"statement_timeout": "1000", "lock_timeout": "200"}
    assert (s.writer_queue_limit, s.recommendation_daily_quota, s.recommendation_retention_days) == (10, 500, None)
    assert Settings.from_env({}).sqlite_synchronous == "FULL"
    for name, bad in [("SQLITE_SYNCHRONOUS", "OFF"), ("WRITER_QUEUE_LIMIT", "0"), ("RECOMMENDATION_DAILY_QUOTA", "-1")]:
        with pytest.raises(ValueError, match=name):
            Settings.from_env({name: bad})


def test_postgres_sessions_carry_the_timeouts(databases: Databases) -> None:
    url = databases.migrated("postgresql")

    async def shown() -> tuple[Any, Any]:
        settings = Settings(database_url=url, database_statement_timeout_ms=1234, database_lock_timeout_ms=567)
        config = database_config(settings)
        try:
            async with config.get_engine().connect() as conn:
                return (
                    (await conn.execute(text("SHOW statement_timeout"))).scalar(),
                    (await conn.execute(text("SHOW lock_timeout"))).scalar(),
                )
        finally:
            await config.get_engine().dispose()

    assert asyncio.run(shown()) == ("1234ms", "567ms")


def test_a_locked_table_answers_503_instead_of_hanging(databases: Databases) -> None:
    """Another session holds an exclusive lock on ``recommendations``: a stored recommendation gives up
    after the lock timeout with a 503 problem; once the lock is gone it is stored."""
    url = databases.seeded("postgresql")
    name = url.rsplit("/", 1)[1]
    locked = threading.Event()
    release = threading.Event()

    def hold_lock() -> None:
        async def run() -> None:
            conn = await asyncpg.connect(f"postgres://postgres@{PG_HOST}:{PG_PORT}/{name}")
            try:
                async with conn.transaction():
                    await conn.execute("LOCK TABLE recommendations IN ACCESS EXCLUSIVE MODE")
                    locked.set()
                    while not release.is_set():
                        await asyncio.sleep(0.05)
            finally:
                await conn.close()

        asyncio.run(run())

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(30)
        settings = Settings(database_url=url, rate_limit=None, database_lock_timeout_ms=300)
        with make_client(url, settings=settings) as client:
            refused = client.post("/v1/recommendations", json=SME_PROFILE)
            assert refused.status_code == 503, refused.text
            assert refused.json()["type"] == "urn:compute-advisor:problem:database-timeout"
            assert refused.headers["Retry-After"] == "1"
            assert client.get("/health/live").status_code == 200
            release.set()
            holder.join(30)
            assert client.post("/v1/recommendations", json=SME_PROFILE).status_code == 201
    finally:
        release.set()
        holder.join(30)
