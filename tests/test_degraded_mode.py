"""Degraded mode: with the database gone, answers keep coming from the last knowledge snapshot.

PostgreSQL is made unreachable by a TCP proxy the test runs in front of it (blocking closes the
listener and kills every open connection); SQLite by moving the database file's directory away.
Either way: comparisons, evaluations and ``?store=false`` recommendations answer 200 marked
``X-Knowledge-Source: cached; …``; storing or fetching a recommendation and the knowledge version
answer 503 problem details; ``/health/ready`` answers 503; and all recovers by itself.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import PG_HOST, PG_PORT, SME_PROFILE, Databases, create_key, free_port, make_client

from app.kb.store import KnowledgeStore
from app.settings import Settings

PROBLEM_JSON = "application/problem+json"
HEADER = "x-knowledge-source"
COMPARISON = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}
PROFILE = SME_PROFILE


class BlockableProxy:
    """A TCP proxy on a free 127.0.0.1 port, on an event loop of its own; ``block()`` makes the target vanish."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="db-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._open |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        self._open -= {writer, up_writer}

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def _block(self) -> None:
        if self._server is not None:
            self._server.close()  # no new connections: "connection refused"
            self._server = None
        for w in list(self._open):  # and every open one dies
            w.transport.abort()
        self._open.clear()

    def start(self) -> None:
        self._thread.start()
        self._run(self._listen())

    def block(self) -> None:
        self._run(self._block())

    def unblock(self) -> None:
        self._run(self._listen())

    def close(self) -> None:
        self.block()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def wait_until(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"not within {timeout} s: {what}")


def assert_database_unavailable(r: Any) -> None:
    assert r.status_code == 503, r.text
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    assert int(r.headers["retry-after"]) >= 1
    body = r.json()
    assert body["type"] == "urn:compute-advisor:problem:database-unavailable", body
    assert body["status"] == 503 and body["title"] and body["detail"]
    assert HEADER not in r.headers


def degraded_gauge(client: Any) -> float:
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    return next(float(line.split()[-1]) for line in r.text.splitlines() if line.startswith("compute_advisor_degraded "))


def exercise(client: Any, block: Callable[[], None], unblock: Callable[[], None]) -> None:
    """The whole story against one app: healthy, database gone, database back."""
    c = client
    # healthy: no degraded header anywhere
    ready = c.get("/health/ready")
    assert ready.status_code == 200, ready.text
    version = ready.json()["checks"]["knowledge_version"]
    assert ready.json()["checks"]["knowledge_source"] == "database"
    r = c.post("/v1/price-comparisons", json=COMPARISON)
    assert r.status_code == 200 and HEADER not in r.headers
    created = c.post("/v1/recommendations", json=PROFILE)
    assert created.status_code == 201, created.text
    location = created.headers["location"]
    assert c.get(location).status_code == 200

    block()
    # the first database error a handler meets is a 503 (not a 500) and puts the app in degraded mode at once
    assert_database_unavailable(c.get(location))
    assert HEADER in c.post("/v1/price-comparisons", json=COMPARISON).headers
    wait_until(lambda: c.get("/health/ready").status_code == 503, "/health/ready answers 503")
    ready = c.get("/health/ready")
    checks = ready.json()["checks"]
    assert ready.json()["status"] == "unavailable"
    assert checks["database"].startswith("unreachable"), checks
    assert checks["knowledge_version"] == version and checks["knowledge_source"] == "cached"
    assert c.get("/health/live").status_code == 200
    assert degraded_gauge(c) == 1  # the metric says so too (GET /metrics needs no database)

    # computed from the snapshot: still answered, marked as cached
    r = c.post("/v1/price-comparisons", json=COMPARISON)
    assert r.status_code == 200, r.text
    assert r.json()["knowledge_version"] == version
    source = r.headers[HEADER]
    assert source.startswith(f"cached; version={version}; since="), source
    assert source.endswith("Z")
    r = c.post("/v1/recommendations", params={"store": "false"}, json=PROFILE)
    assert r.status_code == 200, r.text
    assert r.headers[HEADER] == source
    assert "location" not in r.headers
    body = r.json()
    assert "id" not in body and body["recommended_option"] == created.json()["recommended_option"]
    assert body["ranking"] == created.json()["ranking"]
    r = c.post("/v1/evaluations", json={"profiles": [PROFILE], "detail": "full"})
    assert r.status_code == 200 and r.headers[HEADER] == source
    assert r.json()["evaluations"][0]["ranking"] == body["ranking"]  # the same shape as a batch's evaluation
    r = c.get("/v1/gpus")
    assert r.status_code == 200 and r.headers[HEADER] == source

    # needs the database: 503 problem details, never 500
    assert_database_unavailable(c.post("/v1/recommendations", json=PROFILE))
    assert_database_unavailable(c.post("/v1/recommendations", params={"store": "true"}, json=PROFILE))
    assert_database_unavailable(c.get(location))
    assert_database_unavailable(c.get("/v1/knowledge-version"))
    # errors the client made are still the client's
    assert c.post("/v1/recommendations", params={"store": "false"}, json={"gpus": 0}).status_code == 400

    unblock()
    wait_until(lambda: c.get("/health/ready").status_code == 200, "/health/ready answers 200 again")
    wait_until(lambda: HEADER not in c.post("/v1/price-comparisons", json=COMPARISON).headers, "the header goes")
    assert c.get("/health/ready").json()["checks"]["knowledge_source"] == "database"
    assert degraded_gauge(c) == 0
    assert c.get(location).status_code == 200
    again = c.post("/v1/recommendations", json=PROFILE)
    assert again.status_code == 201 and HEADER not in again.headers
    assert c.get(again.headers["location"]).status_code == 200
    assert c.get("/v1/knowledge-version").status_code == 200


def test_postgresql_unreachable_then_back(databases: Databases) -> None:
    url = databases.seeded("postgresql")
    _, key = create_key(url, ["admin"], name="degraded")
    proxy = BlockableProxy((PG_HOST, PG_PORT))
    proxy.start()
    try:
        proxied = url.replace(f"@{PG_HOST}:{PG_PORT}/", f"@127.0.0.1:{proxy.port}/")
        assert proxied != url
        settings = Settings(database_url=proxied, knowledge_refresh_seconds=0.2, rate_limit=None)
        with make_client(proxied, api_key=key, settings=settings) as c:
            exercise(c, proxy.block, proxy.unblock)
    finally:
        proxy.close()


def test_sqlite_unreachable_then_back(databases: Databases, tmp_path: Path) -> None:
    home = tmp_path / "data"
    home.mkdir()
    url = databases.seeded("sqlite", at=home / "compute-advisor.db")
    _, key = create_key(url, ["admin"], name="degraded")
    away = tmp_path / "data-away"
    settings = Settings(database_url=url, knowledge_refresh_seconds=0.2, rate_limit=None)
    with make_client(url, api_key=key, settings=settings) as c:
        try:
            exercise(c, lambda: os.rename(home, away), lambda: os.rename(away, home))
        finally:
            if away.exists():
                os.rename(away, home)
    assert not away.exists()


# ---- the store's state, without a server -------------------------------------------------------------


class _Failing:
    async def __aenter__(self) -> Any:
        raise ConnectionRefusedError("no database")

    async def __aexit__(self, *exc: object) -> None:
        return None


def test_the_store_is_degraded_only_with_a_snapshot_and_a_failed_read() -> None:
    store = KnowledgeStore(_Failing, 0.2)  # type: ignore[arg-type]
    assert not asyncio.run(store.check())
    assert store.database_ok is False and "ConnectionRefusedError" in (store.last_error or "")
    assert not store.degraded  # nothing loaded, nothing to serve: 503 knowledge-unavailable instead
    assert store.source_header() is None
    store.current = SimpleNamespace(version="kv7-abc")  # type: ignore[assignment]
    assert store.degraded
    assert store.source_header() == "cached; version=kv7-abc; since=unknown"
    store.last_read_at = dt.datetime(2026, 12, 2, 10, 0, tzinfo=dt.UTC)
    assert store.source_header() == "cached; version=kv7-abc; since=2026-12-02T10:00:00Z"
    store.database_ok = True
    assert not store.degraded and store.source_header() is None


def test_a_connection_broken_under_a_statement_is_a_database_outage_not_an_internal_error() -> None:
    """Generic driver errors are told apart by what they were raised from (seen when PostgreSQL closes
    the service's connections mid-load: a restart, or ``restore --force``)."""
    import asyncpg
    from sqlalchemy import exc as sa_exc

    from app.web.degraded import database_went_away

    def raised_from(cause: BaseException) -> sa_exc.DBAPIError:
        try:
            try:
                raise cause
            except BaseException as inner:
                raise RuntimeError("the driver adapter's error") from inner
        except RuntimeError as adapter:
            return sa_exc.DBAPIError("COMMIT", None, adapter)

    closed = asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation")
    assert database_went_away(raised_from(closed))
    assert database_went_away(raised_from(asyncpg.exceptions.InternalClientError("cannot switch to state 12")))
    assert database_went_away(raised_from(asyncpg.exceptions.AdminShutdownError("terminating connection")))
    assert not database_went_away(raised_from(asyncpg.exceptions.UniqueViolationError("duplicate key")))
    assert not database_went_away(raised_from(ValueError("a bug")))
    invalidated = sa_exc.DBAPIError("SELECT 1", None, ValueError("x"), connection_invalidated=True)
    assert database_went_away(invalidated)
