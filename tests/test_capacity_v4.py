"""Capacity plans that serve their demand, and owned fleets by what they do (docs/methodology.md
"Capacity plans" and "What changed in 4.0"), on SQLite and PostgreSQL where the knowledge base is read
from a database:

- a 64 → 256 H100 ramp is served whole: tranches ordered at their phase's start less their lead time,
  the first one bridged until installed, every portfolio's served GPU-hours equal to its demand's;
- a capacity plan sent with a plain profile carries all of it (largest job, preemptible share, data
  security, buyer country): its single portfolios cost what the price comparison of the profile answers;
- owned GPUs of another model count as the demand's GPUs they are worth by sustained throughput
  (peak dense BF16 × MFU), and one synchronous job never spans two GPU models;
- an owned GPU model the knowledge base lacks is 422 naming the field and listing the models."""

from __future__ import annotations

import math
from typing import Any

import pytest
from litestar.testing import TestClient
from seed_snapshot import knowledge_from_seeds

from app.engine import capacity as cap

Client = TestClient  # type: ignore[type-arg]
HOURS_PER_YEAR = 8760
DAYS_PER_YEAR = 365
TEAM: dict[str, Any] = {
    "team_size": 20,
    "ops_team": "professional",
    "start_within_days": 120,
    "as_of": "2026-12-01",
    "gpu_model": "h100_sxm",
    "currency": "USD",
}
#: 64 H100 the first year, doubling each year: 64, 128, 256, at 90 %, for three years
RAMP: dict[str, Any] = {
    **TEAM,
    "horizon_years": 3,
    "utilization": 0.9,
    "demand": {"start_gpus": 64, "growth_per_year": 1.0},
}
#: (64 + 128 + 256) GPUs × 0.9 × 8,760 hours: the ramp's useful GPU-hours
RAMP_GPU_HOURS = (64 + 128 + 256) * 0.9 * HOURS_PER_YEAR


def post(client: Client, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    doc: dict[str, Any] = r.json()
    return doc


def by_key(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["key"]: p for p in doc["portfolios"]}


def test_a_ramp_is_served_whole_with_tranches_ordered_ahead(client: Client) -> None:
    doc = post(client, "/v1/capacity-plans", RAMP)
    assert [p["gpus"] for p in doc["phases"]] == [64, 128, 256]
    feasible = [p for p in doc["portfolios"] if p["feasible"]]
    assert feasible and doc["recommended"] is not None
    for p in doc["portfolios"]:
        assert p["demand_gpu_hours"] == pytest.approx(RAMP_GPU_HOURS, abs=0.1)
    for p in feasible:  # every feasible portfolio serves all of its demand (0.1 %): compared at equal demand
        assert p["served_gpu_hours"] == pytest.approx(RAMP_GPU_HOURS, rel=1e-3), p["key"]
    own = by_key(doc)["single:self_built_cluster"]
    assert own["feasible"]
    tranches = [s for s in own["segments"] if s["acquired"] == "buy"]
    assert [sum(s["gpus_by_phase"][k] for s in tranches) for k in range(3)] == [64, 128, 256]
    for s in tranches:
        lead = s["lead_time_days"]
        assert lead > 0
        if s["start_month"] == 0:
            assert s["order_day"] == 0
        else:  # ordered at the phase's start less its lead time, so it serves from the phase's first day
            assert s["order_day"] == pytest.approx(s["start_month"] / 12 * DAYS_PER_YEAR - lead, abs=0.1)
    # the first tranche cannot be ordered ahead: its GPUs are rented from the first day until installed
    bridge = [s for s in own["segments"] if s["acquired"] == "bridge"]
    assert len(bridge) == 1 and bridge[0]["gpus_by_phase"] == [64, 0, 0]
    assert bridge[0]["option"] != "self_built_cluster" and bridge[0]["total_cost"]["expected"] > 0
    # the figures add up: the portfolio's total is its segments', its cost per useful GPU-hour that ÷ the demand
    total = own["total_cost"]["expected"]
    assert total == pytest.approx(sum(s["total_cost"]["expected"] for s in own["segments"]), abs=0.05)
    assert own["cost_per_useful_gpu_hour"]["expected"] == pytest.approx(total / RAMP_GPU_HOURS, abs=1e-4)


def test_the_ramp_in_process_leaves_no_gap() -> None:
    """The ramp on the seeds' snapshot (no database): before the wave-4 plans it served 89 % of its demand
    (a wait for delivery at the first step, and every tranche's wait counted against the demand)."""
    import datetime as dt

    from app.core.types import Profile
    from app.engine.insights.common import Variant
    from app.host.manager import create_option_host

    host = create_option_host()
    kb = knowledge_from_seeds()
    variants = [
        Variant(k, p) for k in sorted(host.options, reverse=True) for p in (host.options[k].spec.plans or (None,))
    ]
    demand = cap.growth(64, 1.0, 0.9, 3)
    base = Profile(
        gpus=256,
        utilization=0.9,
        horizon_years=3,
        as_of=dt.date(2026, 12, 1),
        currency="USD",
        gpu_model="h100_sxm",
        team_size=20,
        ops_team="professional",
        start_within_days=120,
    )
    found = cap.plan(host, kb, base, demand, options=list(host.options), variants=variants, owner=host.owner(), unit=8)
    assert cap.useful_gpu_hours(demand) == pytest.approx(RAMP_GPU_HOURS)
    for p in found.portfolios:
        if p.feasible:
            assert p.served_gpu_hours >= RAMP_GPU_HOURS * (1 - 1e-3), p.key
            assert p.demand_gpu_hours == pytest.approx(RAMP_GPU_HOURS)


#: a plain profile with every field a capacity plan used to drop or could drop
PLAIN: dict[str, Any] = {
    **TEAM,
    "gpus": 64,
    "utilization": 0.9,
    "horizon_years": 3,
    "largest_job_gpus": 8,
    "preemptible_share": 0.5,
    "data_security": "high",
    "buyer_country": "US",
}
FIGURES = ("total_cost", "npv_cost", "upfront_cost")


@pytest.mark.parametrize(
    ("security", "rental_plan", "feasible"), [("standard", None, 3), ("high", None, 1), ("standard", "reserved_1y", 3)]
)
def test_a_plain_profile_plans_as_it_compares(
    client: Client, security: str, rental_plan: str | None, feasible: int
) -> None:
    body = {**PLAIN, "data_security": security, "rental_plan": rental_plan}
    plan = post(client, "/v1/capacity-plans", body)
    assert plan["phases"] == [{"start_month": 0, "months": 36, "gpus": 64, "utilization": 0.9, "largest_job_gpus": 8}]
    doc = post(client, "/v1/price-comparisons", body)
    singles = {p["key"].split(":", 1)[1]: p for p in plan["portfolios"] if p["kind"] == "single"}
    compared = 0
    for item in doc["items"]:
        single = singles[item["option"]]
        assert single["feasible"] == bool(item["feasible"]), (item["option"], single["reasons"])
        if not item["feasible"] or item["offer"] is None:
            continue
        # the segment that holds the profile's GPUs (an own cluster's tranche; a rented or platform plan)
        held = [s for s in single["segments"] if s["acquired"] != "bridge"]
        assert len(held) == 1, (item["option"], held)
        segment = held[0]
        assert segment["offer"] == item["offer"], item["option"]
        for field in FIGURES:
            for end in ("low", "expected", "high"):
                assert segment[field][end] == pytest.approx(item[field][end], rel=1e-9, abs=0.011), (
                    item["option"],
                    field,
                    end,
                )
        compared += 1
    assert compared == feasible
    own = singles["self_built_cluster"]
    if security == "high":  # nothing else may serve the first 70 days: the team waits, and the plan says so
        codes = [c["code"] for c in own["reason_codes"]]
        assert "capacity.demand.deferred" in codes and own["served_gpu_hours"] < own["demand_gpu_hours"]
        assert not any(s["acquired"] == "bridge" for s in own["segments"])
    else:
        assert own["served_gpu_hours"] == pytest.approx(own["demand_gpu_hours"], rel=1e-3)


def test_owned_a100_count_as_h100_by_sustained_throughput(client: Client) -> None:
    kb = knowledge_from_seeds()
    a100 = kb.assumption("*", "mfu_bf16_a100_80gb").value.expected
    h100 = kb.assumption("*", "mfu_bf16_h100_sxm").value.expected
    factor = (312 * a100) / (989 * h100)  # peak dense BF16 × MFU, A100 over H100
    assert cap.equivalent_factor(kb, "a100_80gb", "h100_sxm") == pytest.approx(factor, rel=1e-12)
    assert 128 * factor == pytest.approx(128 * 312 * 0.50 / (989 * 0.40), rel=0.2)  # ≈ 50 H100, not 128
    body = {
        **TEAM,
        "gpus": 64,
        "utilization": 0.9,
        "horizon_years": 2,
        "largest_job_gpus": 8,
        "owned": [{"gpu_model": "a100_80gb", "count": 128, "age_years": 1.0}],
    }
    doc = post(client, "/v1/capacity-plans", body)
    own = by_key(doc)["single:self_built_cluster"]
    held = [s for s in own["segments"] if s["acquired"] == "owned"]
    assert len(held) == 1
    assert held[0]["gpu_model"] == "a100_80gb" and held[0]["owned_gpus"] == 128
    assert held[0]["gpus_by_phase"] == [math.floor(128 * factor)]
    # the 64 GPUs of demand are not covered by the A100 alone: the plan adds what they fall short of
    more = sum(s["gpus_by_phase"][0] for s in own["segments"] if s["acquired"] in ("buy", "commit", "use"))
    assert more >= 64 - 128 * factor


def test_one_synchronous_job_never_spans_two_gpu_models(client: Client) -> None:
    """200 H100 of demand, one 200-GPU job; 128 A100 and 128 H100 owned: the A100 (≈ 50 H100) and the H100
    together would hold it, but a synchronous job runs on one GPU model — the owned H100 cluster is grown
    to 200 (or the job runs elsewhere whole)."""
    body = {
        **TEAM,
        "gpus": 200,
        "utilization": 0.9,
        "horizon_years": 2,
        "owned": [
            {"gpu_model": "a100_80gb", "count": 128, "age_years": 1.0},
            {"gpu_model": "h100_sxm", "count": 128, "age_years": 1.0},
        ],
    }
    doc = post(client, "/v1/capacity-plans", body)
    own = by_key(doc)["single:self_built_cluster"]
    assert own["feasible"]
    h100 = sum(s["gpus_by_phase"][0] for s in own["segments"] if s["acquired"] == "buy")
    h100 += sum(s["gpus_by_phase"][0] for s in own["segments"] if s["gpu_model"] == "h100_sxm")
    assert h100 >= 200  # the job on H100 alone: 128 owned + at least 72 bought
    bought = sum(s["gpus_by_phase"][0] for s in own["segments"] if s["acquired"] == "buy")
    assert bought >= 72  # counting the A100 in the job, 24 would have done (128 + 50 + 24 ≥ 200)
    for p in doc["portfolios"]:
        if not p["feasible"]:
            continue
        # some one group of one GPU model holds the 200-GPU job: never the A100 and the H100 together
        groups: dict[tuple[str, str | None, str], int] = {}
        for s in p["segments"]:
            if s["acquired"] == "owned" and s["gpu_model"] != "h100_sxm":
                key = (s["option"], s["gpu_model"], "owned")
            elif s["acquired"] in ("owned", "buy"):
                key = (s["option"], None, "buy")
            else:
                key = (s["option"], s["plan"], s["acquired"])
            groups[key] = groups.get(key, 0) + s["gpus_by_phase"][0]
        assert max(groups.values()) >= 200, (p["key"], groups)


def test_an_unknown_owned_gpu_model_names_the_field_and_lists_the_models(client: Client) -> None:
    body = {**TEAM, "gpus": 64, "utilization": 0.8, "horizon_years": 2}
    r = client.post("/v1/capacity-plans", json={**body, "owned": [{"gpu_model": "h1000", "count": 8, "age_years": 1}]})
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["field"] == "owned[0].gpu_model"
    assert "h1000" in problem["detail"] and "a100_80gb" in problem["detail"] and "h100_sxm" in problem["detail"]


def _priced(cost: float) -> Any:
    from app.core.ranges import Range
    from app.engine.capacity.tables import Priced

    money = Range.point(cost)
    return Priced(money, money, Range.point(0), money, 0.0, 0.0, True, True, cost)


def test_the_solver_never_holds_a_job_on_two_gpu_models() -> None:
    """The solver alone, on hand-made prices: one phase of 200 GPUs, one 200-GPU job; 128 A100 owned (worth
    50.5 H100, free to keep), 128 H100 owned (free), and an own H100 cluster grown by 24 (cost 24) or 72 (cost
    72). Counting the A100 in the job, 128 + 50.5 + 24 ≥ 200 would be cheapest; on one model it takes 72."""
    from app.engine.capacity.solver import solve
    from app.engine.capacity.tables import BUY, OWNED, Item
    from app.engine.insights.common import Variant

    own = Variant("self_built_cluster")
    demand = cap.phases([(12, 200, 0.9, 200)])
    factor = (312 * 0.50) / (989 * 0.40)
    items = [
        Item(own, OWNED, 0, 0, 128, _priced(0.0), owned=0, capacity=128 * factor, model="a100_80gb"),
        Item(own, OWNED, 0, 0, 128, _priced(0.0), owned=1),
        Item(own, BUY, 0, 0, 24, _priced(24.0), level=0, level_gpus=24),
        Item(own, BUY, 0, 0, 48, _priced(48.0), level=1, level_gpus=72),
    ]
    job_ok = {(("self_built_cluster", None, BUY), 0): True, (("self_built_cluster", "a100_80gb", OWNED), 0): True}
    found = solve(demand, items, job_ok)
    assert found is not None
    bought = sum(i.gpus for i, amount in found.taken if i.acquired == BUY and amount > 0.5)
    assert bought == 72
