"""Storage states: a full disk and a read-only database are states of their own, and stable.

Each case makes the database refuse writes while it still answers reads, the way its driver reports it:
- SQLite read-only: ``PRAGMA query_only = ON`` on every connection the app checks out (SQLite's own
  ``SQLITE_READONLY``, "attempt to write a readonly database"; the tests run as root, so a chmod would
  not bite);
- SQLite full: ``PRAGMA max_page_count`` at the file's current size (SQLite's own ``SQLITE_FULL``,
  "database or disk is full");
- PostgreSQL read-only: ``ALTER DATABASE … SET default_transaction_read_only = on`` and new connections
  (the server's ``25006``);
- PostgreSQL full: no real way to fill a shared server's disk in a test, so a trigger makes the server
  raise SQLSTATE ``53100`` (disk_full) on every insert into ``recommendations``: a real server error
  through the real driver (asyncpg's ``DiskFullError``), not a real full disk.

Then: ``POST /v1/recommendations`` answers 503 of the state's own problem type with ``Retry-After``;
``/health/ready`` answers 200 with ``storage`` saying the state, the same across polls spanning many
knowledge polls (which succeed: no flapping, no degraded mode); the metric says it; lifting the cause
changes nothing until a write works — a stored recommendation, or the write probe.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from conftest import SME_PROFILE, Databases, _pg_admin, make_client
from litestar.testing import TestClient
from sqlalchemy import event, text

from app.kb.db import database_config
from app.kb.storage_state import StorageState, storage_condition
from app.settings import Settings

TYPE = "urn:compute-advisor:problem:"
PROBLEM = {"read-only": TYPE + "database-read-only", "full": TYPE + "storage-full"}
#: the knowledge poll's period in these tests: the polls below span many of them
REFRESH_SECONDS = 0.1


def sql(url: str, *statements: str) -> None:
    async def run() -> None:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.begin() as conn:
                for statement in statements:
                    await conn.execute(text(statement))
        finally:
            await engine.dispose()

    asyncio.run(run())


def app_engine(client: TestClient) -> Any:  # type: ignore[type-arg]
    return client.app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()


class SqliteRefusal:
    """``state`` (``None``, ``read-only`` or ``full``) applied to every connection the app checks out."""

    def __init__(self, client: TestClient) -> None:  # type: ignore[type-arg]
        self.state: str | None = None
        event.listen(app_engine(client).sync_engine, "checkout", self._apply)

    def _apply(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA query_only = {'ON' if self.state == 'read-only' else 'OFF'}")
        if self.state == "full":
            cursor.execute("PRAGMA page_count")
            cursor.execute(f"PRAGMA max_page_count = {cursor.fetchone()[0]}")
        else:
            cursor.execute("PRAGMA max_page_count = 1073741823")
        cursor.close()


def pg_refusal(url: str, client: TestClient, condition: str) -> Callable[[bool], None]:  # type: ignore[type-arg]
    """A function that makes the PostgreSQL database refuse writes for ``condition`` (True) or not (False)."""
    name = url.rsplit("/", 1)[1]

    def apply(on: bool) -> None:
        if condition == "read-only":  # from another database: this one's sessions would be read-only
            change = "SET default_transaction_read_only = on" if on else "RESET default_transaction_read_only"
            _pg_admin(f'ALTER DATABASE "{name}" {change}')
            client.blocking_portal.call(app_engine(client).dispose)  # new connections take the setting
        elif on:
            sql(
                url,
                "CREATE FUNCTION refuse_as_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$",
                "CREATE TRIGGER refuse_as_full BEFORE INSERT ON recommendations "
                "FOR EACH ROW EXECUTE FUNCTION refuse_as_full()",
            )
        else:
            sql(url, "DROP TRIGGER refuse_as_full ON recommendations", "DROP FUNCTION refuse_as_full()")

    return apply


def storage_gauge(client: TestClient) -> dict[str, float]:  # type: ignore[type-arg]
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    found = {}
    for line in r.text.splitlines():
        if line.startswith("compute_advisor_storage_state{"):
            found[line.split('state="', 1)[1].split('"', 1)[0]] = float(line.split()[-1])
    return found


def counting(obj: Any, method: str) -> list[Any]:
    """What each call of ``obj.method`` returns from now on, in order, until ``del obj.<method>``
    (the knowledge poll and the write probe look their method up on the instance at each round)."""
    results: list[Any] = []
    original = getattr(obj, method)

    async def counted(*args: Any) -> Any:
        results.append(await original(*args))
        return results[-1]

    setattr(obj, method, counted)
    return results


def assert_stable(client: TestClient, state: str, knowledge_polls: int, probes: int = 0) -> None:  # type: ignore[type-arg]
    """``/health/ready`` says ``state`` at every probe (at least 5) while ``knowledge_polls`` more
    knowledge polls read the database successfully (and ``probes`` write probes ran), ready throughout."""
    store, storage = client.app.state.knowledge_store, client.app.state.storage_state
    polls, probed = counting(store, "check"), counting(storage, "probe_now")
    deadline = time.monotonic() + 60  # not a measure: a bound for a machine under load
    asked = 0
    try:
        while asked < 5 or sum(polls) < knowledge_polls or len(probed) < probes:
            assert time.monotonic() < deadline, f"{sum(polls)} knowledge polls, {len(probed)} probes in 60 s"
            ready = client.get("/health/ready")
            assert ready.status_code == 200, ready.text
            checks = ready.json()["checks"]
            assert checks["storage"] == state, (asked, checks)
            assert checks["database"] == "ok" and checks["knowledge_source"] == "database", checks
            asked += 1
            time.sleep(0.05)
    finally:
        del store.check, storage.probe_now
    assert all(polls), polls  # every knowledge poll read the database: reads never cleared the state
    assert probed == [state] * len(probed), probed  # every probe failed and kept it


def exercise(client: TestClient, refuse: Callable[[bool], None], condition: str) -> None:  # type: ignore[type-arg]
    assert client.get("/health/ready").json()["checks"]["storage"] == "ok"
    assert client.post("/v1/recommendations", json=SME_PROFILE).status_code == 201

    refuse(True)
    refused = client.post("/v1/recommendations", json=SME_PROFILE)
    assert refused.status_code == 503, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["type"] == PROBLEM[condition], refused.json()
    assert refused.headers["Retry-After"] == "60"  # the write probe's period
    assert "x-knowledge-source" not in refused.headers  # not degraded mode
    # what does not write still answers
    assert client.post("/v1/recommendations?store=false", json=SME_PROFILE).status_code == 200
    assert client.get("/v1/knowledge-version").status_code == 200

    assert_stable(client, condition, knowledge_polls=12)
    detail = client.get("/health/ready").json()["checks"]["storage_detail"]
    assert detail["error"] and detail["since"].endswith("Z")
    public = client.get("/health/ready", headers={"X-API-Key": ""}).json()["checks"]
    assert public["storage"] == condition and "storage_detail" not in public
    assert storage_gauge(client) == {
        "ok": 0.0,
        "full": float(condition == "full"),
        "read-only": float(condition == "read-only"),
    }
    assert client.post("/v1/recommendations", json=SME_PROFILE).json()["type"] == PROBLEM[condition]

    refuse(False)
    assert_stable(client, condition, knowledge_polls=4)  # no write has worked yet: no evidence
    assert client.post("/v1/recommendations", json=SME_PROFILE).status_code == 201  # a write works: cleared
    assert client.get("/health/ready").json()["checks"]["storage"] == "ok"
    assert storage_gauge(client)["ok"] == 1.0


def settings(url: str, probe_seconds: float = 60.0) -> Settings:
    return Settings(
        database_url=url,
        knowledge_refresh_seconds=REFRESH_SECONDS,
        rate_limit=None,
        gc_freeze=False,
        storage_probe_seconds=probe_seconds,
    )


@pytest.mark.parametrize("condition", ["read-only", "full"])
def test_sqlite_storage_states(databases: Databases, condition: str) -> None:
    url = databases.seeded("sqlite")
    with make_client(url, settings=settings(url)) as client:
        refusal = SqliteRefusal(client)
        exercise(client, lambda on: setattr(refusal, "state", condition if on else None), condition)


@pytest.mark.parametrize("condition", ["read-only", "full"])
def test_postgresql_storage_states(databases: Databases, condition: str) -> None:
    url = databases.seeded("postgresql")
    with make_client(url, settings=settings(url)) as client:
        exercise(client, pg_refusal(url, client, condition), condition)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_write_probe_clears_the_state_without_traffic(databases: Databases, backend: str) -> None:
    """While the state is not ``ok`` a probe writes (and deletes) a row every ``STORAGE_PROBE_SECONDS``:
    it keeps the state while writes fail and clears it once they work, with no request storing anything."""
    url = databases.seeded(backend)
    with make_client(url, settings=settings(url, probe_seconds=0.3)) as client:
        if backend == "sqlite":
            refusal = SqliteRefusal(client)
            refuse: Callable[[bool], None] = lambda on: setattr(refusal, "state", "read-only" if on else None)  # noqa: E731
        else:
            refuse = pg_refusal(url, client, "read-only")
        refuse(True)
        assert client.post("/v1/recommendations", json=SME_PROFILE).status_code == 503
        assert_stable(client, "read-only", knowledge_polls=5, probes=3)  # three probes failed meanwhile
        refuse(False)
        deadline = time.monotonic() + 15
        while client.get("/health/ready").json()["checks"]["storage"] != "ok":
            assert time.monotonic() < deadline, "the probe did not clear the state"
            time.sleep(0.05)
        assert client.app.state.storage_state.state == "ok"
        assert storage_gauge(client)["ok"] == 1.0
    # the probe left nothing behind
    assert _count(url, "SELECT count(*) FROM recommendations WHERE knowledge_version = 'storage-probe'") == 0


def _count(url: str, statement: str) -> int:
    async def run() -> int:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.connect() as conn:
                return int((await conn.execute(text(statement))).scalar() or 0)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_errors_are_told_apart() -> None:
    import errno
    import sqlite3

    import asyncpg  # type: ignore[import-untyped]
    from sqlalchemy import exc as sa_exc

    def wrapped(cause: BaseException) -> sa_exc.DBAPIError:
        return sa_exc.DBAPIError("INSERT", None, cause)  # type: ignore[arg-type]

    full = sqlite3.OperationalError("database or disk is full")
    assert storage_condition(wrapped(full)) == "full"
    assert storage_condition(wrapped(sqlite3.OperationalError("attempt to write a readonly database"))) == "read-only"
    assert storage_condition(asyncpg.exceptions.DiskFullError("could not extend file")) == "full"
    assert storage_condition(asyncpg.exceptions.ReadOnlySQLTransactionError("read-only transaction")) == "read-only"
    assert storage_condition(OSError(errno.ENOSPC, "No space left on device")) == "full"
    assert storage_condition(ConnectionRefusedError("no database")) is None
    assert storage_condition(wrapped(sqlite3.OperationalError("unable to open database file"))) is None
    assert storage_condition(asyncpg.exceptions.DeadlockDetectedError("deadlock detected")) is None

    seen: list[str] = []
    state = StorageState(None, 5, on_change=seen.append)
    assert state.noticed(ValueError("a bug")) is None and state.state == "ok"
    assert state.noticed(wrapped(full)) == "full" and state.state == "full"
    state.wrote()
    assert state.state == "ok" and seen == ["ok", "full", "ok"]
