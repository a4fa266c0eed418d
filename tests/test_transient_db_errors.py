"""PostgreSQL's transient errors around a stored recommendation: replayed once, else 503, never 500.

A second PostgreSQL session (``Interloper``, a thread of its own) takes table locks in the opposite
order to the writer's group commit — ``idempotency_keys`` first, ``recommendations`` once the writer
holds that one and waits for the first: a real deadlock (``40P01``), every time. Its
``deadlock_timeout`` is a minute, so the writer's transaction (the server's default second) is the one
PostgreSQL breaks off. Once, the replay stores the recommendation (one row, one claim); twice in a
row, the answer is 503 ``…:database-conflict`` with ``Retry-After`` and nothing is stored. Likewise a
serialization failure (``40001``, under ``default_transaction_isolation = 'repeatable read'``), a
connection ended mid-transaction (``pg_terminate_backend``) and a COMMIT whose answer was lost after it
committed (both databases: the replay adds no second row).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from conftest import PG_HOST, PG_PORT, SME_PROFILE, Databases, create_key, make_client
from litestar.testing import TestClient
from sqlalchemy import event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb.db import database_config
from app.kb.writer import RecommendationWriter, transient
from app.settings import Settings

TYPE = "urn:compute-advisor:problem:"
#: a lock of ``mode`` on ``table`` of this database waited for by another session
WAITING = (
    "SELECT pid FROM pg_locks WHERE NOT granted AND mode = $2 AND relation = $1::regclass "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def dsn(url: str) -> str:
    return f"postgres://postgres@{PG_HOST}:{PG_PORT}/{url.rsplit('/', 1)[1]}"


def sql(url: str, statement: str, **params: Any) -> Any:
    async def run() -> Any:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.begin() as conn:
                result = await conn.execute(text(statement), params)
                return result.scalar() if result.returns_rows else None
        finally:
            await engine.dispose()

    return asyncio.run(run())


async def until(conn: Any, query: str, *args: Any, timeout: float = 30.0) -> Any:
    """Poll ``query`` every 20 ms until it returns a row's first value; fails after ``timeout``."""
    async with asyncio.timeout(timeout):
        while (found := await conn.fetchval(query, *args)) is None:
            await asyncio.sleep(0.02)
    return found


class Interloper:
    """Runs ``script(connect)`` on a thread and event loop of its own, beside the app under test;
    ``ready`` is set by the script once its first lock is held."""

    def __init__(self, url: str, script: Callable[[Interloper], Awaitable[None]]) -> None:
        self.dsn = dsn(url)
        self.script = script
        self.ready = threading.Event()
        self.errors: list[BaseException] = []
        self.events: list[str] = []
        self._thread = threading.Thread(target=self._main, name="interloper", daemon=True)

    async def connect(self) -> Any:
        conn = await asyncpg.connect(self.dsn)
        await conn.execute("SET deadlock_timeout = '60s'")  # the service's transaction is the one broken off
        return conn

    async def until(self, query: str, *args: Any) -> Any:
        """``until`` on a connection of its own, outside any transaction: activity statistics are
        read once per transaction, so a transaction would never see the writer start waiting."""
        watcher = await asyncpg.connect(self.dsn)
        try:
            return await until(watcher, query, *args)
        finally:
            await watcher.close()

    def _main(self) -> None:
        try:
            asyncio.run(self.script(self))
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            self.ready.set()

    @contextmanager
    def running(self) -> Iterator[Interloper]:
        self._thread.start()
        assert self.ready.wait(30)
        assert not self.errors, self.errors
        yield self
        self._thread.join(60)
        assert not self._thread.is_alive(), "the interloper did not finish"
        assert not self.errors, self.errors


def deadlocks(rounds: int) -> Callable[[Interloper], Awaitable[None]]:
    """Deadlock the writer's next ``rounds`` group commits (its first try, then its replay)."""

    async def script(me: Interloper) -> None:
        conns = [await me.connect() for _ in range(rounds)]
        try:
            holder = conns[0]
            await holder.execute("BEGIN; LOCK TABLE idempotency_keys IN EXCLUSIVE MODE")  # reads pass, inserts wait
            me.ready.set()
            for i in range(rounds):
                # the writer inserted its recommendation and waits to insert its claim
                await me.until(WAITING, "idempotency_keys", "RowExclusiveLock")
                await holder.execute("LOCK TABLE recommendations IN EXCLUSIVE MODE")  # the cycle: 40P01 for the writer
                me.events.append("deadlock")
                if i + 1 < rounds:  # the next holder queues for the first lock before this one lets go
                    nxt = conns[i + 1]
                    await nxt.execute("BEGIN")
                    queued = asyncio.create_task(nxt.execute("LOCK TABLE idempotency_keys IN EXCLUSIVE MODE"))
                    await me.until(WAITING, "idempotency_keys", "ExclusiveLock")
                    await holder.execute("ROLLBACK")
                    await queued
                    holder = nxt
                else:
                    await holder.execute("ROLLBACK")
        finally:
            for conn in conns:
                await conn.close()

    return script


def post(client: TestClient, key: str, body: dict[str, Any] | None = None) -> Any:  # type: ignore[type-arg]
    return client.post("/v1/recommendations", json=body or SME_PROFILE, headers={"Idempotency-Key": key})


def stored(url: str, key: str) -> tuple[int, int]:
    """(claims of ``key``, recommendations a claim of ``key`` names)."""
    claims = sql(url, "SELECT count(*) FROM idempotency_keys WHERE key = :k", k=key)
    recs = sql(
        url,
        "SELECT count(*) FROM recommendations r JOIN idempotency_keys i ON i.recommendation_id = r.id WHERE i.key = :k",
        k=key,
    )
    return claims, recs


def test_a_deadlock_around_an_idempotent_store_is_replayed_and_stored_once(databases: Databases) -> None:
    url = databases.seeded("postgresql")
    before = sql(url, "SELECT count(*) FROM recommendations")
    key = str(uuid.uuid4())
    with make_client(url) as client, Interloper(url, deadlocks(1)).running() as interloper:
        answer = post(client, key)
        writer = client.app.state.recommendation_writer
    assert interloper.events == ["deadlock"]
    assert answer.status_code == 201, answer.text
    assert writer.replayed == 1
    assert stored(url, key) == (1, 1)
    assert sql(url, "SELECT count(*) FROM recommendations") == before + 1
    with make_client(url) as client:
        again = post(client, key)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == answer.json()["id"]


def test_a_deadlock_twice_answers_503_with_retry_after_and_stores_nothing(databases: Databases) -> None:
    url = databases.seeded("postgresql")
    before = sql(url, "SELECT count(*) FROM recommendations")
    key = str(uuid.uuid4())
    with make_client(url) as client:
        with Interloper(url, deadlocks(2)).running() as interloper:
            refused = post(client, key)
        assert interloper.events == ["deadlock", "deadlock"]
        assert refused.status_code == 503, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["type"] == TYPE + "database-conflict"
        assert int(refused.headers["Retry-After"]) >= 1
        assert stored(url, key) == (0, 0)
        assert sql(url, "SELECT count(*) FROM recommendations") == before
        # not degraded mode: the database answers
        assert client.get("/health/ready").json()["checks"]["knowledge_source"] == "database"
        retried = post(client, key)  # the client's retry, as Retry-After says
    assert retried.status_code == 201, retried.text
    assert "Idempotent-Replayed" not in retried.headers
    assert stored(url, key) == (1, 1)


def test_a_serialization_failure_is_replayed(databases: Databases) -> None:
    """Under ``repeatable read``, the claim's ``ON CONFLICT DO UPDATE`` meets a row another transaction
    updated and committed after the writer's snapshot: ``40001``, then the replay takes the claim."""
    url = databases.seeded("postgresql")
    name = url.rsplit("/", 1)[1]
    sql(url, f"ALTER DATABASE \"{name}\" SET default_transaction_isolation = 'repeatable read'")
    key = str(uuid.uuid4())
    with make_client(url) as client:
        first = post(client, key)
        assert first.status_code == 201, first.text
    old = dt.datetime.now(dt.UTC) - dt.timedelta(hours=25)
    sql(url, "UPDATE idempotency_keys SET created_at = :t WHERE key = :k", t=old, k=key)

    async def update_the_claim(me: Interloper) -> None:
        conn = await me.connect()
        try:
            await conn.execute("BEGIN")
            await conn.execute("UPDATE idempotency_keys SET status = status WHERE key = $1", key)
            me.ready.set()
            await me.until(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND wait_event_type = 'Lock' AND wait_event = 'transactionid'",
            )  # the writer's claim waits for this row
            await conn.execute("COMMIT")
            me.events.append("committed")
        finally:
            await conn.close()

    with make_client(url) as client, Interloper(url, update_the_claim).running() as interloper:
        answer = post(client, key, {**SME_PROFILE, "gpus": 32})
        writer = client.app.state.recommendation_writer
    assert interloper.events == ["committed"]
    assert answer.status_code == 201, answer.text
    assert "Idempotent-Replayed" not in answer.headers and answer.json()["id"] != first.json()["id"]
    assert writer.replayed == 1
    claimed = sql(url, "SELECT recommendation_id FROM idempotency_keys WHERE key = :k", k=key)
    assert claimed == answer.json()["id"]
    assert stored(url, key) == (1, 1)


def test_a_connection_ended_mid_transaction_is_replayed_on_a_new_one(databases: Databases) -> None:
    url = databases.seeded("postgresql")
    key = str(uuid.uuid4())

    async def end_the_writers_connection(me: Interloper) -> None:
        conn = await me.connect()
        try:
            await conn.execute("BEGIN; LOCK TABLE idempotency_keys IN EXCLUSIVE MODE")
            me.ready.set()
            pid = await me.until(WAITING, "idempotency_keys", "RowExclusiveLock")
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
            me.events.append("terminated")
            await conn.execute("ROLLBACK")
        finally:
            await conn.close()

    with make_client(url) as client, Interloper(url, end_the_writers_connection).running() as interloper:
        answer = post(client, key)
        writer = client.app.state.recommendation_writer
    assert interloper.events == ["terminated"]
    assert answer.status_code == 201, answer.text
    assert writer.replayed == 1
    assert stored(url, key) == (1, 1)


def _row(rec_id: str, api_key_id: int) -> dict[str, Any]:
    return {
        "id": rec_id,
        "created_at": dt.datetime.now(dt.UTC),
        "knowledge_version": "kv-test",
        "methodology_version": "test",
        "request": {},
        "response": {"id": rec_id},
        "api_key_id": api_key_id,
    }


def test_a_commit_whose_answer_was_lost_is_replayed_without_a_second_row(databases: Databases, backend: str) -> None:
    """The connection breaks just after COMMIT committed (the writer cannot know it did): the replay
    inserts nothing twice and the claim stays this recommendation's — the store succeeds, once."""
    url = databases.migrated(backend)
    api_key_id, _ = create_key(url, ["recommendations:write"])

    async def run() -> None:
        config = database_config(Settings(database_url=url))
        maker = config.create_session_maker()
        made = 0

        def sessions() -> AsyncSession:
            nonlocal made
            made += 1
            session = maker()
            if made == 1:

                def lost(_session: Any) -> None:
                    raise sa_exc.DBAPIError(
                        "COMMIT",
                        None,
                        ConnectionResetError("connection lost after COMMIT"),
                        connection_invalidated=True,
                    )

                event.listen(session.sync_session, "after_commit", lost)
            return session

        writer = RecommendationWriter(sessions)
        rec_id, plain_id = str(uuid.uuid4()), str(uuid.uuid4())
        claim = {
            "api_key_id": api_key_id,
            "key": "k1",
            "request_hash": "0" * 64,
            "recommendation_id": rec_id,
            "status": 201,
            "created_at": dt.datetime.now(dt.UTC),
        }
        try:
            await asyncio.gather(
                writer.store(_row(rec_id, api_key_id), idempotency=claim), writer.store(_row(plain_id, api_key_id))
            )
            assert made == 2 and writer.replayed == 1
        finally:
            await config.get_engine().dispose()

    asyncio.run(run())
    assert sql(url, "SELECT count(*) FROM recommendations") == 2
    assert sql(url, "SELECT count(*) FROM idempotency_keys") == 1
    assert sql(url, "SELECT count(*) FROM idempotency_keys i JOIN recommendations r ON r.id = i.recommendation_id") == 1


def test_what_is_replayed_and_what_is_not() -> None:
    def raised_from(cause: BaseException, *, invalidated: bool = False) -> sa_exc.DBAPIError:
        try:
            try:
                raise cause
            except BaseException as inner:
                raise RuntimeError("the driver adapter's error") from inner
        except RuntimeError as adapter:
            return sa_exc.DBAPIError("INSERT", None, adapter, connection_invalidated=invalidated)

    ex = asyncpg.exceptions
    assert transient(raised_from(ex.DeadlockDetectedError("deadlock detected")))
    assert transient(raised_from(ex.SerializationError("could not serialize access")))
    assert transient(raised_from(ex.AdminShutdownError("terminating connection")))
    assert transient(raised_from(ex.ConnectionDoesNotExistError("connection was closed in the middle of operation")))
    assert transient(raised_from(ValueError("x"), invalidated=True))
    assert not transient(raised_from(ex.QueryCanceledError("canceling statement due to statement timeout")))
    assert not transient(raised_from(ex.LockNotAvailableError("canceling statement due to lock timeout")))
    assert not transient(raised_from(ex.UniqueViolationError("duplicate key")))
    assert not transient(raised_from(ex.DiskFullError("could not extend file")))
    assert not transient(ConnectionRefusedError("no database"))
    assert not transient(None)
