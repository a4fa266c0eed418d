"""Dependencies with deadlines: a Redis that hangs or refuses costs a request a few milliseconds at most,
a circuit stops asking it, limits hold per worker meanwhile, and the state shows (log, gauge, readiness).

The hung Redis is a socket server in the test that accepts connections and never answers; the
refused one is a port nothing listens on; recovery goes through a proxy to the real Redis that is
switched from hanging to forwarding. Nothing here measures time: the deadline shows as a timeout
error and as connections the circuit no longer opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import REDIS_URL, SME_PROFILE, Databases, create_key, make_client
from redis import exceptions as redis_exceptions
from test_rate_limits import OPTIONS, assert_429, limited

from app.settings import Settings
from app.web.counters import RedisCounters, SharedCounters
from app.web.dependencies import Circuit, Dependencies


class FakeRedis:
    """A TCP server on a free port: ``hang`` accepts and never answers; ``forward`` relays to REDIS_URL."""

    def __init__(self) -> None:
        self.mode = "hang"
        self.accepted = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/15"
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            self._held.append(conn)
            if self.mode == "forward":
                upstream = socket.create_connection(("127.0.0.1", int(REDIS_URL.split(":")[2].split("/")[0])))
                self._held.append(upstream)
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for s in [self._sock, *self._held]:
            with contextlib.suppress(OSError):
                s.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)


@pytest.fixture
def fake_redis() -> Iterator[FakeRedis]:
    server = FakeRedis()
    try:
        yield server
    finally:
        server.close()


def refused_url() -> str:
    """A Redis URL whose port refuses connections (bound, then closed)."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/15"


@pytest.fixture(scope="module")
def db(databases: Databases) -> str:
    return databases.seeded("sqlite")


@pytest.fixture(scope="module")
def key(db: str) -> str:
    return create_key(db, ["admin"], name="deadlines")[1]


def redis_or_database_up(c: Any, name: str) -> float:
    """``compute_advisor_dependency_up{name=…}`` as /metrics reports it."""
    text = c.get("/metrics").text
    found = re.search(rf'^compute_advisor_dependency_up\{{name="{name}"\}} (\S+)$', text, re.M)
    assert found, text[-2000:]
    return float(found.group(1))


def redis_up(c: Any) -> float:
    return redis_or_database_up(c, "redis")


def test_a_call_to_a_hung_redis_times_out_once_without_retries(fake_redis: FakeRedis) -> None:
    counters = RedisCounters(fake_redis.url, "ns", connect_timeout=0.05, timeout=0.025)

    async def run() -> None:
        try:
            with pytest.raises((TimeoutError, redis_exceptions.TimeoutError)):
                await counters.add("key:x", 1, 60)
        finally:
            await counters.close()

    asyncio.run(run())
    assert fake_redis.accepted == 1  # one connection, one attempt: no retries with backoff


def test_the_circuit_opens_after_n_failures_and_counts_locally_meanwhile(fake_redis: FakeRedis) -> None:
    now = [0.0]
    dependencies = Dependencies()
    circuit = Circuit("redis", dependencies, failures=2, open_seconds=30, clock=lambda: now[0])
    shared = SharedCounters(RedisCounters(fake_redis.url, "ns", connect_timeout=0.05, timeout=0.025), circuit)

    async def run() -> list[int]:
        try:
            return [(await shared.add("key:x", 1, 60))[0] for _ in range(6)]
        finally:
            await shared.close()

    assert asyncio.run(run()) == [1, 2, 3, 4, 5, 6]  # counted here, every one of them
    assert fake_redis.accepted == 2  # then the circuit stopped asking
    assert circuit.open and circuit.skipped == 4
    assert dependencies.states()["redis"]["state"] == "down"


def test_a_hung_redis_still_enforces_limits_and_shows_down(
    db: str, key: str, fake_redis: FakeRedis, caplog: pytest.LogCaptureFixture
) -> None:
    settings = limited(db, redis_url=fake_redis.url, redis_circuit_failures=2, redis_circuit_open_seconds=600)
    with (
        caplog.at_level(logging.INFO, logger="app.web.dependencies"),
        make_client(db, api_key=key, settings=settings) as c,
    ):
        assert [c.get(OPTIONS).status_code for _ in range(3)] == [200, 200, 200]
        assert_429(c.get(OPTIONS))  # the fourth: over the budget, counted by this worker
        assert fake_redis.accepted <= 2  # the circuit opened after two failures
        ready = c.get("/health/ready")
        assert ready.status_code == 200, ready.text  # limits hold: still ready, and says how
        redis = ready.json()["checks"]["dependencies"]["redis"]
        assert redis["state"] == "down" and "each worker" in redis["fallback"] and "Timeout" in redis["reason"]
    assert [r.getMessage() for r in caplog.records if "dependency redis" in r.getMessage()] == [
        f"dependency redis is down: {redis['reason']}; {redis['fallback']}"
    ]


def test_a_refused_redis_does_not_turn_limits_off(db: str, key: str) -> None:
    settings = limited(db, redis_url=refused_url())
    with make_client(db, api_key=key, settings=settings) as c:
        assert [c.get(OPTIONS).status_code for _ in range(3)] == [200, 200, 200]
        assert_429(c.get(OPTIONS))
        assert c.get("/health/ready").json()["checks"]["dependencies"]["redis"]["state"] == "down"


def test_the_gauge_readiness_and_log_follow_redis_down_and_back(
    db: str, key: str, fake_redis: FakeRedis, redis_namespace: Any, caplog: pytest.LogCaptureFixture
) -> None:
    redis, namespace = redis_namespace
    settings: Settings = limited(
        db,
        "1000/minute",
        redis_url=fake_redis.url,
        rate_limit_namespace=namespace,
        redis_circuit_failures=1,
        redis_circuit_open_seconds=0.05,
        redis_timeout_ms=500,  # once forwarding, the real Redis answers well within it on a busy machine
    )
    with (
        caplog.at_level(logging.INFO, logger="app.web.dependencies"),
        make_client(db, api_key=key, settings=settings) as c,
    ):
        assert c.get(OPTIONS).status_code == 200
        assert redis_up(c) == 0
        assert c.get("/health/ready").json()["checks"]["dependencies"]["redis"]["state"] == "down"
        fake_redis.mode = "forward"  # Redis answers again
        deadline = time.monotonic() + 30
        while c.get("/health/ready").json()["checks"]["dependencies"]["redis"]["state"] != "up":
            assert time.monotonic() < deadline, "the circuit never tried Redis again"
            time.sleep(0.06)
            assert c.get(OPTIONS).status_code == 200  # a charge: the trial call once the circuit allows it
        assert redis_up(c) == 1
        assert [k for k in redis.scan_iter(match=f"{namespace}*")]  # counted in Redis again
    said = [r.getMessage() for r in caplog.records if "dependency redis" in r.getMessage()]
    assert said[0].startswith("dependency redis is down") and said[-1] == "dependency redis is up again"


# ---- PostgreSQL: a request waiting for a pooled connection answers 503, it does not hang --------------


def test_a_request_waiting_for_a_pooled_connection_answers_503_with_retry_after(databases: Databases) -> None:
    from sqlalchemy.ext.asyncio import AsyncEngine

    url = databases.seeded("postgresql")
    key = create_key(url, ["admin"], name="pool")[1]
    settings = Settings(
        database_url=url,
        knowledge_refresh_seconds=60,
        rate_limit=None,
        api_key_cache_seconds=600,
        database_pool_timeout_seconds=0.2,
    )
    assert settings.engine_options["pool_timeout"] == 0.2
    assert Settings.from_env({"DATABASE_POOL_TIMEOUT_SECONDS": "1.5"}).database_pool_timeout_seconds == 1.5
    with pytest.raises(ValueError, match="DATABASE_POOL_TIMEOUT_SECONDS"):
        Settings.from_env({"DATABASE_POOL_TIMEOUT_SECONDS": "soon"})
    with make_client(url, api_key=key, settings=settings) as c:
        stored = c.post("/v1/recommendations", json={**SME_PROFILE}).json()["id"]  # the key is now verified
        assert redis_or_database_up(c, "database") == 1
        engine = next(v for v in dict(c.app.state).values() if isinstance(v, AsyncEngine))
        pool = engine.sync_engine.pool
        held: list[Any] = []

        async def take_all() -> None:
            while pool.checkedout() < pool.size() + max(0, pool._max_overflow):  # type: ignore[attr-defined]
                held.append(await engine.connect())

        async def give_back() -> None:
            for conn in held:
                await conn.close()

        c.blocking_portal.call(take_all)  # type: ignore[union-attr]
        try:
            r = c.get(f"/v1/recommendations/{stored}")
            assert r.status_code == 503, r.text
            assert r.headers["content-type"].startswith("application/problem+json")
            assert int(r.headers["retry-after"]) >= 1
            assert r.json()["type"].endswith(":database-unavailable")
        finally:
            c.blocking_portal.call(give_back)  # type: ignore[union-attr]
        assert redis_or_database_up(c, "database") == 0  # until the next successful poll
        assert c.get(f"/v1/recommendations/{stored}").status_code == 200
