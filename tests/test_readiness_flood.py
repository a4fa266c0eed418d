"""Readiness that cannot be starved: ``GET /health/ready`` never looks a key up (details only for a key
this worker already holds valid), shares one database check among the probes that arrive together, and
costs each probe a unit of its client address's budget.

Before: each probe held its request's database session while the key it was sent with was looked up in
another; 32 clients sending made-up keys took every pooled connection, readiness answered 503, the
worker went into degraded mode — and readiness was an unlimited oracle for guessing keys.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import Databases, create_key, make_client
from test_rate_limits import OPTIONS, _verifier, assert_429, limited

import app.domain.health.service as health_service
from app.kb.repositories import migration_revision

CLIENTS = 32
PROBES_EACH = 4


@pytest.fixture
def db(databases: Databases, backend: str) -> str:
    return databases.seeded(backend)


def counted_lookups(client: Any) -> list[str]:
    verifier = _verifier(client)
    real = verifier._lookup
    lookups: list[str] = []

    async def counting(key: str) -> Any:
        lookups.append(key)
        return await real(key)

    verifier._lookup = counting
    return lookups


def test_a_flood_of_probes_with_made_up_keys_does_not_starve_readiness(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks = {"running": 0, "most": 0, "done": 0}
    real = migration_revision

    async def slow_check(versions: Any) -> Any:  # a database that takes a while: probes overlap for sure
        checks["running"] += 1
        checks["most"] = max(checks["most"], checks["running"])
        try:
            await asyncio.sleep(0.05)
            return await real(versions)
        finally:
            checks["running"] -= 1
            checks["done"] += 1

    monkeypatch.setattr(health_service, "migration_revision", slow_check)
    with make_client(db, api_key=None, settings=limited(db, "100000/minute")) as c:
        lookups = counted_lookups(c)

        def probe(n: int) -> list[int]:
            return [
                c.get("/health/ready", headers={"X-API-Key": f"ca_made_up_{n}_{i}_" + "x" * 30}).status_code
                for i in range(PROBES_EACH)
            ]

        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = [s for found in pool.map(probe, range(CLIENTS)) for s in found]
        assert answers == [200] * (CLIENTS * PROBES_EACH), sorted(set(answers))
        assert lookups == []  # no made-up key reached the database
        assert checks["most"] == 1  # one database check at a time, however many probes
        assert checks["done"] < CLIENTS * PROBES_EACH  # shared by the probes that arrived meanwhile
        assert not c.app.state.knowledge_store.degraded  # the worker never thought the database gone
        ready = c.get("/health/ready").json()
        assert ready["status"] == "ok" and ready["checks"]["knowledge_source"] == "database"


def test_guessing_through_readiness_is_limited_and_never_looks_keys_up(db: str) -> None:
    _, valid = create_key(db, ["catalog:read"], name="monitoring")
    with make_client(db, api_key=None, settings=limited(db)) as c:
        lookups = counted_lookups(c)
        for i in range(3):
            r = c.get("/health/ready", headers={"X-API-Key": f"ca_guess_{i}"})
            assert r.status_code == 200 and "worker_pid" not in r.json()["checks"]
            assert r.headers["ratelimit-remaining"] == str(2 - i)
        for i in range(3, 10):
            assert_429(c.get("/health/ready", headers={"X-API-Key": f"ca_guess_{i}"}))
        assert_429(c.get("/health/ready"))  # a probe without a key: the same budget
        assert lookups == []
        # a valid key has the address's known-keys budget: it still probes, with the details
        r = c.get("/health/ready", headers={"X-API-Key": valid})
        assert r.status_code == 200 and isinstance(r.json()["checks"]["worker_pid"], int)
        assert lookups == []  # known from the active keys' digests, not looked up
        assert c.get("/health/live").status_code == 200  # liveness is never limited


def test_readiness_details_only_for_a_key_this_worker_already_holds(db: str) -> None:
    with make_client(db, api_key=None) as c:
        lookups = counted_lookups(c)
        assert c.get("/health/ready", headers={"X-API-Key": "ca_made_up"}).status_code == 200  # the keys are read
        _, late = create_key(db, ["catalog:read"], name="made after the read")
        r = c.get("/health/ready", headers={"X-API-Key": late})
        assert r.status_code == 200 and "worker_pid" not in r.json()["checks"]  # not known yet: no details…
        assert lookups == []  # …and not looked up to find out
        assert c.get(OPTIONS, headers={"X-API-Key": late}).status_code == 200  # verified by a request
        assert lookups == [late]
        r = c.get("/health/ready", headers={"X-API-Key": late})
        assert isinstance(r.json()["checks"]["worker_pid"], int) and r.json()["checks"]["migration"]["current"]
        assert lookups == [late]
