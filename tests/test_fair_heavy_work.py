"""Fair heavy work (app/web/offload.py, app/domain/shared/costs.py): one API key cannot take every
thread and place of the worker pool — its requests beyond ``WORKER_POOL_PER_KEY`` are answered ``429``
with ``Retry-After`` at once while another key's heavy request is still computed — and a heavy request
costs rate-limit units that grow with its work (phases × options × owned entries, draws, profiles)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import Databases, create_key, make_client

from app.domain.capacity.service import CapacityService
from app.domain.shared import costs
from app.settings import PROJECT_ROOT, Settings, parse_rate_limit

PROBLEM_JSON = "application/problem+json"
PLAN = {"gpus": 16, "utilization": 0.6, "horizon_years": 1, "team_size": 20, "as_of": "2026-12-01"}


@pytest.fixture(scope="module")
def db(databases: Databases) -> str:
    return databases.seeded("sqlite")


@pytest.fixture(scope="module")
def tenants(db: str) -> tuple[str, str]:
    """Two API keys: two tenants of the same service."""
    return create_key(db, ["decisions:run"], name="greedy")[1], create_key(db, ["decisions:run"], name="other")[1]


@pytest.fixture
def slow_plans(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, list[str]]]:
    """Capacity plans that compute until ``release`` is set (each records that it started)."""
    release = threading.Event()
    started: list[str] = []
    plan = CapacityService.plan

    def slow(self: CapacityService, req: Any, *args: Any, **kwargs: Any) -> Any:
        started.append(threading.current_thread().name)
        release.wait(60)
        return plan(self, req, *args, **kwargs)

    monkeypatch.setattr(CapacityService, "plan", slow)
    yield release, started
    release.set()


def test_one_key_cannot_take_every_slot_and_place(db, tenants, slow_plans) -> None:
    greedy, other = tenants
    release, started = slow_plans
    # 2 threads and 2 places: a key may hold 2 of the 4 (half, the default)
    settings = Settings(
        database_url=db, knowledge_refresh_seconds=60, rate_limit=None, worker_pool_size=2, worker_pool_queue=2
    )
    with make_client(db, api_key=None, settings=settings) as c, ThreadPoolExecutor(8) as senders:
        pool = c.app.state.worker_pool

        def plan(key: str, n: int) -> Any:
            return c.post("/v1/capacity-plans", json={**PLAN, "gpus": 16 + n}, headers={"X-API-Key": key})

        def until(condition: Callable[[], bool]) -> None:
            deadline = time.monotonic() + 30
            while not condition() and time.monotonic() < deadline:
                time.sleep(0.02)

        held = [senders.submit(plan, greedy, n) for n in range(2)]
        until(lambda: len(started) == 2)  # both of its plans are computing
        extra = [senders.submit(plan, greedy, n) for n in range(2, 6)]
        until(lambda: sum(f.done() for f in extra) >= 2)
        # another tenant's heavy request still gets a place: before, the first key's requests held every
        # thread and place and it was answered 503
        served = senders.submit(plan, other, 99)
        until(lambda: served.done() or pool.waiting >= 1)
        release.set()
        r = served.result(timeout=60)
        assert r.status_code == 200, r.text
        assert [f.result(timeout=60).status_code for f in held] == [200, 200]
        # the first key's requests beyond its share: refused at once with a problem, not queued
        for f in extra:
            r = f.result(timeout=60)
            assert r.status_code == 429, r.text
            assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
            assert r.headers["retry-after"] == "2"
            problem = r.json()
            assert problem["type"] == "urn:compute-advisor:problem:too-many-requests"
            assert "WORKER_POOL_PER_KEY=2" in problem["detail"]
    assert (pool.running, pool.waiting) == (0, 0)


def test_the_per_key_share_is_a_setting() -> None:
    assert Settings.from_env({}).worker_pool_per_key is None  # half of size + queue
    assert Settings.from_env({"WORKER_POOL_PER_KEY": "3"}).worker_pool_per_key == 3
    for bad in ("0", "-1", "two"):
        with pytest.raises(ValueError, match="WORKER_POOL_PER_KEY"):
            Settings.from_env({"WORKER_POOL_PER_KEY": bad})


# ---- costs that grow with the work ---------------------------------------------------------------


def phases(n: int) -> list[dict[str, Any]]:
    return [{"months": 1, "gpus": 8, "utilization": 0.5}] * n


def owned(n: int) -> list[dict[str, Any]]:
    return [{"gpu_model": "h100_sxm", "count": 8, "age_years": 1}] * n


def test_a_capacity_plan_costs_its_phases_options_and_owned_entries() -> None:
    assert costs.capacity_plan({**PLAN}) == 5 + 3  # one phase, three options
    assert costs.capacity_plan({"demand": phases(12)}) == 5 + 36
    assert costs.capacity_plan({"demand": phases(120)}) == 5 + 360
    assert costs.capacity_plan({"demand": phases(12), "owned": owned(5)}) == 5 + 54  # 36 × 1.5
    assert costs.capacity_plan({"demand": phases(120), "owned": owned(20)}) == 5 + 1080  # the most a plan costs
    # the growth shorthand: a phase per year, the last one cut short
    assert costs.capacity_plan({"demand": {"start_gpus": 8, "growth_per_year": 1}, "horizon_years": 4.5}) == 5 + 15
    # bodies validation will refuse cost what they may ask, never more than the largest plan
    assert costs.capacity_plan({"demand": phases(10_000), "owned": owned(500)}) == 5 + 1080
    for hostile in (None, [], "x", {"demand": "x", "owned": 3}, {"demand": {}, "horizon_years": True}):
        assert costs.capacity_plan(hostile) == 8


def test_a_demand_over_time_costs_its_phases() -> None:
    assert costs.comparison({"demand": phases(120)}) == costs.recommendation({"demand": phases(120)}) == 5 + 72
    assert costs.comparison({"demand": phases(12)}) == 5 + 8
    assert costs.comparison({"gpus": 8}) == costs.COMPARISON_UNITS
    assert costs.recommendation({"gpus": 8}) == costs.RECOMMENDATION_UNITS


def test_draws_and_profiles_cost_their_number() -> None:
    assert [costs.uncertainty({"draws": d}) for d in (1_000, 10_000, 100_000)] == [2, 11, 101]
    assert [costs.evaluations({"profiles": [{}] * n}) for n in (1, 100, 10_000)] == [1, 100, 10_000]
    assert costs.evaluations({"profiles": [{}] * 100, "detail": "full"}) == 200


def test_the_readme_says_the_costs_the_code_charges() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    table = readme[readme.index("### Rate limits") :]
    for request, units in costs.TABLE.items():
        if not request.startswith("POST"):
            continue
        row = re.search(rf"^\| `{re.escape(request)}`[^|]*\| (.+) \|$", table, re.MULTILINE)
        assert row is not None, f"README's rate-limit table has no row for {request}"
        assert row.group(1) == units, request


def test_a_capacity_plan_is_charged_by_its_size(db, tenants) -> None:
    settings = Settings(database_url=db, knowledge_refresh_seconds=60, rate_limit=parse_rate_limit("10000/minute"))
    with make_client(db, api_key=tenants[1], settings=settings) as c:
        one = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}
        assert c.post("/v1/price-comparisons", json=one).status_code == 200  # the key's first: now it is known
        left = int(c.post("/v1/price-comparisons", json=one).headers["ratelimit-remaining"])
        body = {**PLAN, "gpus": None, "utilization": None, "horizon_years": 1, "demand": phases(12), "owned": owned(2)}
        body = {k: v for k, v in body.items() if v is not None}
        r = c.post("/v1/capacity-plans", json=body)
        assert r.status_code == 200, r.text
        assert int(r.headers["ratelimit-remaining"]) == left - costs.capacity_plan(body) == left - (5 + 44)
