"""Demand over time on recommendations and price comparisons (docs/methodology.md "Demand over time on
recommendations and comparisons"), on SQLite and PostgreSQL: a demand of one phase answers what the
plain profile answers, byte for byte; with several phases each option costs what the capacity plan's
single portfolio of that option costs; bad demands are refused as capacity plans refuse them."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

Client = TestClient  # type: ignore[type-arg]
TEAM: dict[str, Any] = {
    "team_size": 20,
    "ops_team": "professional",
    "start_within_days": 120,
    "as_of": "2026-12-01",
}
PLAIN: dict[str, Any] = {**TEAM, "gpus": 64, "utilization": 0.8, "horizon_years": 3}
ONE_PHASE: dict[str, Any] = {**TEAM, "horizon_years": 3, "demand": [{"months": 36, "gpus": 64, "utilization": 0.8}]}
#: 32 GPUs, doubling each year, for three years (32, 64, 128)
RAMP: dict[str, Any] = {
    **TEAM,
    "horizon_years": 3,
    "utilization": 0.8,
    "demand": {"start_gpus": 32, "growth_per_year": 1.0},
}
FIGURES = ("total_cost", "npv_cost", "upfront_cost", "cost_per_useful_gpu_hour", "cost_per_effective_gpu_hour")
PHASES = [
    {"start_month": 12 * i, "months": 12, "gpus": g, "utilization": 0.8, "largest_job_gpus": g}
    for i, g in enumerate((32, 64, 128))
]


def post(client: Client, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    doc: dict[str, Any] = r.json()
    return doc


def without(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in keys}


def test_a_one_phase_demand_compares_exactly_as_the_plain_profile(client: Client) -> None:
    plain = post(client, "/v1/price-comparisons", PLAIN)
    phased = post(client, "/v1/price-comparisons", ONE_PHASE)
    assert "demand" not in plain and all("segments" not in i for i in plain["items"])
    assert phased["demand"] == [
        {"start_month": 0, "months": 36, "gpus": 64, "utilization": 0.8, "largest_job_gpus": 64}
    ]
    assert without(phased, "demand") == plain  # every figure, offer and breakdown line


def test_a_one_phase_demand_recommends_exactly_as_the_plain_profile(client: Client) -> None:
    plain = post(client, "/v1/recommendations", PLAIN, 201)
    phased = post(client, "/v1/recommendations", ONE_PHASE, 201)
    assert phased["demand"][0]["gpus"] == 64 and "demand" not in plain
    assert without(phased, "demand", "id", "created_at") == without(plain, "id", "created_at")


def test_a_ramp_costs_each_option_its_capacity_plans_single_portfolio(client: Client) -> None:
    plan = post(client, "/v1/capacity-plans", RAMP)
    singles = {p["key"].split(":", 1)[1]: p for p in plan["portfolios"] if p["kind"] == "single"}
    doc = post(client, "/v1/price-comparisons", RAMP)
    assert doc["demand"] == plan["phases"] == PHASES
    assert doc["gpus"] == 128 and doc["utilization"] == 0.8  # the peak phase's
    assert {i["option"] for i in doc["items"]} == set(singles)
    for item in doc["items"]:
        single = singles[item["option"]]
        assert single["feasible"] and item["feasible"], item["option"]
        for field in FIGURES:
            assert item[field] == single[field], (item["option"], field)
        # the total's yearly average, and the useful hours a year served (the demand's, less any waited for)
        total = single["total_cost"]["expected"]
        assert item["annual_cost"]["expected"] == pytest.approx(total / 3, abs=0.01)
        served = item["useful_gpu_hours_per_year"]
        assert served <= (32 + 64 + 128) * 0.8 * 8760 / 3 + 0.01
        assert served == pytest.approx(total / single["cost_per_useful_gpu_hour"]["expected"] / 3, rel=1e-4)
        assert item["segments"] == single["segments"]
        assert item["breakdown"] == [] and item["offer"] is None and item["paid_gpu_hours_per_year"] is None
    own = next(i for i in doc["items"] if i["option"] == "self_built_cluster")
    assert [sum(s["gpus_by_phase"][k] for s in own["segments"] if s["acquired"] == "buy") for k in range(3)] == [
        32,
        64,
        128,
    ]


def test_a_ramp_is_ranked_on_its_single_portfolios(client: Client) -> None:
    plan = post(client, "/v1/capacity-plans", RAMP)
    singles = {p["key"].split(":", 1)[1]: p for p in plan["portfolios"] if p["kind"] == "single"}
    rec = post(client, "/v1/recommendations", RAMP, 201)
    peak = post(client, "/v1/recommendations", {**TEAM, "gpus": 128, "utilization": 0.8, "horizon_years": 3}, 201)
    assert rec["demand"] == PHASES and rec["profile"]["gpus"] == 128
    assert rec["confidence"] is None and rec["break_even"] is None  # they answer one profile, not a demand
    cheapest = min(singles.values(), key=lambda p: p["cost_per_effective_gpu_hour"]["expected"])
    peak_by_option = {e["option"]: e for e in peak["ranking"]}
    for entry in rec["ranking"]:
        single = singles[entry["option"]]
        assert entry["cost"]["total_cost"] == single["total_cost"]
        assert entry["cost"]["npv_cost"] == single["npv_cost"]
        assert entry["cost"]["cost_per_effective_gpu_hour"] == single["cost_per_effective_gpu_hour"]
        assert entry["segments"] == single["segments"]
        # the cost score on the demand's figures: 100 for the cheapest per effective GPU-hour
        if entry["option"] == cheapest["key"].split(":", 1)[1]:
            assert entry["scores"]["cost"] == 100
        # efficiency, stability and usability at the peak phase
        for dimension in ("efficiency", "stability", "usability"):
            assert entry[dimension] == peak_by_option[entry["option"]][dimension], (entry["option"], dimension)
    stored = client.get(f"/v1/recommendations/{rec['id']}")
    assert stored.status_code == 200 and stored.json() == rec


@pytest.mark.parametrize("path", ["/v1/recommendations", "/v1/price-comparisons", "/v1/capacity-plans"])
@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"horizon_years": 2, "demand": [{"months": 12, "gpus": 8, "utilization": 0.5}]}, 422, "demand"),
        ({"horizon_years": 1, "gpus": 8, "demand": [{"months": 12, "gpus": 8, "utilization": 0.5}]}, 422, "gpus"),
        ({"horizon_years": 10, "demand": [{"months": 1, "gpus": 8, "utilization": 0.5}] * 121}, 422, "demand"),
        ({"horizon_years": 1, "demand": [{"months": 12, "gpus": 0, "utilization": 0.5}]}, 400, "demand.0.gpus"),
        ({"horizon_years": 1.01, "demand": [{"months": 12, "gpus": 8, "utilization": 0.5}]}, 422, "horizon_years"),
        ({"horizon_years": 2, "demand": {"start_gpus": 8, "growth_per_year": 1}}, 422, "demand.utilization"),
        ({"horizon_years": 1, "demand": {"start_gpus": 8, "growth_per_year": -1}}, 400, "demand.growth_per_year"),
        ({"horizon_years": 1, "utilization": 0.5}, 400, "gpus"),
        (
            {"horizon_years": 1, "largest_job_gpus": 8, "demand": [{"months": 12, "gpus": 8, "utilization": 0.5}]},
            422,
            "largest_job_gpus",
        ),
    ],
)
def test_bad_demand_names_the_field(client: Client, path: str, body: dict[str, Any], status: int, field: str) -> None:
    r = client.post(path, json={**TEAM, **body})
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    problem = r.json()
    assert any(e["field"] == field for e in problem["errors"]), problem


def test_a_batch_takes_plain_profiles_only(client: Client) -> None:
    r = client.post("/v1/evaluations", json={"profiles": [ONE_PHASE]})
    assert r.status_code == 400, r.text
    assert any(e["field"] == "profiles.0.demand" for e in r.json()["errors"]), r.text


def test_a_ramp_compares_as_csv_and_xlsx_too(client: Client) -> None:
    """The spreadsheet forms carry the portfolio's figures: one total row per option (no breakdown lines;
    its segments' and phases' rows after it)."""
    doc = post(client, "/v1/price-comparisons", RAMP)
    r = client.post("/v1/price-comparisons", json=RAMP, headers={"Accept": "text/csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv"), r.text
    rows = [line for line in r.text.splitlines()[1:] if ",total," in line]
    assert len(rows) == len(doc["items"]) and ",line_item," not in r.text
    for item in doc["items"]:
        assert any(item["option"] in row and str(item["total_cost"]["expected"]) in row for row in rows), item["option"]
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    r = client.post("/v1/price-comparisons", json=RAMP, headers={"Accept": xlsx})
    assert r.status_code == 200 and r.headers["content-type"].startswith(xlsx)


@pytest.mark.parametrize(("gpu_model", "status"), [("l40s", 200), ("rtx_4090", 422)])
def test_a_demand_on_a_gpu_model_without_a_server_sku(client: Client, gpu_model: str, status: int) -> None:
    """A GPU model without a server SKU: its machine is the reference server's size (a demand on it answered
    500 before); the L40S is rented by the node, the RTX 4090 is priced nowhere (422, no option assessable)."""
    body = {"horizon_years": 1, "gpu_model": gpu_model, "demand": [{"months": 12, "gpus": 8, "utilization": 0.5}]}
    for path in ("/v1/price-comparisons", "/v1/recommendations?store=false"):
        r = client.post(path, json=body)
        assert r.status_code == status, r.text
