"""The article's figures, through the API, on the reference seeds (SQLite and PostgreSQL).

Each figure is the article's own (shared/DESIGN.md, "The seed's figures"): the model derives them
from the knowledge base's primitives, so these tests fail when a formula or a seed drifts.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import SEEDS, Databases, load_seeds, make_client
from litestar.testing import TestClient

AS_OF = "2025-06-01"
OPTIONS = {"self_built_cluster", "rented_gpu_instances", "ai_compute_platform"}
Client = TestClient  # type: ignore[type-arg]

# The three scenarios of the article's 适合场景总结.
LARGE_INSTITUTE = {
    "gpus": 512,
    "utilization": 0.85,
    "horizon_years": 5,
    "team_size": 100,
    "ops_team": "professional",
    "data_security": "extreme",
    "start_within_days": 120,
}
PROOF_OF_CONCEPT = {
    "gpus": 8,
    "utilization": 0.08,
    "horizon_years": 1,
    "team_size": 3,
    "ops_team": "none",
    "data_security": "standard",
    "start_within_days": 2,
}
SME_TEAM = {
    "gpus": 16,
    "utilization": 0.6,
    "horizon_years": 2,
    "team_size": 20,
    "ops_team": "none",
    "data_security": "standard",
    "start_within_days": 14,
}


def compare(client: Client, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/price-comparisons", json={"as_of": AS_OF, **body})
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    assert {i["option"] for i in doc["items"]} == OPTIONS
    assert all(i["error"] is None for i in doc["items"]), doc
    return doc


def item(doc: dict[str, Any], option: str) -> dict[str, Any]:
    return next(i for i in doc["items"] if i["option"] == option)


def recommend(client: Client, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/recommendations", json={"as_of": AS_OF, **body})
    assert r.status_code == 201, r.text
    doc: dict[str, Any] = r.json()
    return doc


def entry(doc: dict[str, Any], option: str) -> dict[str, Any]:
    return next(e for e in doc["ranking"] if e["option"] == option)


def ends(r: dict[str, float]) -> tuple[float, float]:
    return r["low"], r["high"]


# ---- (1) rented, on demand ---------------------------------------------------------------------


def test_rented_on_demand_costs_876000_a_year_and_half_utilization_doubles_the_unit_cost(client: Client) -> None:
    half = item(
        compare(client, gpus=8, utilization=0.5, horizon_years=1, rental_plan="on_demand"), "rented_gpu_instances"
    )
    full = item(
        compare(client, gpus=8, utilization=1.0, horizon_years=1, rental_plan="on_demand"), "rented_gpu_instances"
    )
    # 100 CNY an hour × 24 × 365
    assert half["annual_cost"] == {"low": 876_000, "expected": 876_000, "high": 876_000}
    assert half["total_cost"] == half["annual_cost"]
    assert half["upfront_cost"] == {"low": 0, "expected": 0, "high": 0}
    assert half["paid_gpu_hours_per_year"]["expected"] == 8 * 8760
    assert half["useful_gpu_hours_per_year"] == 8 * 8760 * 0.5
    # "如果利用率只有50%，有效算力成本翻倍": 12.50 CNY per useful GPU-hour at full use, 25.00 at half
    assert full["cost_per_useful_gpu_hour"] == {"low": 12.5, "expected": 12.5, "high": 12.5}
    for end in ("low", "expected", "high"):
        assert half["cost_per_useful_gpu_hour"][end] == 2 * full["cost_per_useful_gpu_hour"][end]
    assert half["committed"] is False


def test_rented_on_demand_total_covers_the_horizon(client: Client) -> None:
    rented = item(
        compare(client, gpus=8, utilization=0.5, horizon_years=3, rental_plan="on_demand"), "rented_gpu_instances"
    )
    assert rented["total_cost"]["expected"] == 3 * 876_000


# ---- (2) rented, reserved for a year ---------------------------------------------------------


def test_yearly_reservation_is_30_to_40_percent_cheaper(client: Client) -> None:
    doc = compare(client, gpus=8, utilization=0.5, horizon_years=1, rental_plan="reserved_1y")
    rented = item(doc, "rented_gpu_instances")
    assert ends(rented["annual_cost"]) == (525_600, 613_200)  # 876,000 × (1 − 0.40 … 0.30)
    assert rented["annual_cost"]["expected"] == 569_400
    assert rented["committed"] is True
    assert doc["rental_plan"] == "reserved_1y"
    # reserved whole years: 1.5 years pay for two
    longer = item(
        compare(client, gpus=8, utilization=0.5, horizon_years=1.5, rental_plan="reserved_1y"), "rented_gpu_instances"
    )
    assert ends(longer["total_cost"]) == (2 * 525_600, 2 * 613_200)


# ---- (3) the platform ------------------------------------------------------------------------


def test_platform_costs_0_52_to_0_61_million_or_60_to_70_percent_of_renting(client: Client) -> None:
    doc = compare(client, gpus=8, utilization=0.5, horizon_years=1, rental_plan="on_demand")
    platform = item(doc, "ai_compute_platform")
    rented = item(doc, "rented_gpu_instances")
    low, high = ends(platform["annual_cost"])
    assert 520_000 <= low < high <= 610_000
    assert low == pytest.approx(876_000 * 0.5 / 0.83, abs=0.01)  # pooled utilization 83 %
    assert high == pytest.approx(876_000 * 0.5 / 0.72, abs=0.01)  # pooled utilization 72 %
    share_low, share_high = low / rented["annual_cost"]["low"], high / rented["annual_cost"]["high"]
    assert 0.60 <= share_low < share_high <= 0.70
    assert platform["upfront_cost"]["high"] == 0
    # billed for fewer GPU-hours than renting holds
    assert platform["paid_gpu_hours_per_year"]["high"] < rented["paid_gpu_hours_per_year"]["low"]


# ---- (4) one own 8-GPU server ----------------------------------------------------------------


def test_one_own_server_costs_0_80_to_1_17_million_a_year_and_1_5_to_2_0_million_upfront(client: Client) -> None:
    own = item(compare(client, gpus=8, utilization=0.5, horizon_years=1), "self_built_cluster")
    assert own["annual_cost"]["low"] == 800_000
    assert own["annual_cost"]["high"] == pytest.approx(1_166_666.67, abs=0.01)
    assert ends(own["upfront_cost"]) == (1_500_000, 2_000_000)
    assert own["committed"] is True
    lines = {li["key"]: li for li in own["breakdown"]}
    # the article's three lines; renting until the cluster is installed adds cash, not accounting cost
    assert set(lines) - {"bridge"} == {"server_hardware", "facility_and_network", "ops_team"}
    assert "bridge" not in lines or lines["bridge"]["annual"]["high"] == 0
    assert ends(lines["server_hardware"]["upfront"]) == (800_000, 1_200_000)
    assert ends(lines["ops_team"]["annual"]) == (300_000, 500_000)
    # 3-year depreciation of the 1.5–2.0 M initial outlay: 0.50–0.67 M a year
    depreciation_low = lines["server_hardware"]["annual"]["low"] + lines["facility_and_network"]["annual"]["low"]
    depreciation_high = lines["server_hardware"]["annual"]["high"] + lines["facility_and_network"]["annual"]["high"]
    assert depreciation_low == pytest.approx(500_000, abs=0.02)
    assert depreciation_high == pytest.approx(666_666.67, abs=0.02)
    # it costs the same whatever it does
    busy = item(compare(client, gpus=8, utilization=1.0, horizon_years=1), "self_built_cluster")
    assert busy["annual_cost"] == own["annual_cost"]


# ---- (5) scale decides self-built --------------------------------------------------------------


def test_at_full_load_and_scale_the_own_cluster_is_cheapest_per_useful_gpu_hour(client: Client) -> None:
    doc = compare(client, gpus=512, utilization=1.0, horizon_years=3, rental_plan="on_demand")
    own = item(doc, "self_built_cluster")["cost_per_useful_gpu_hour"]
    for other in OPTIONS - {"self_built_cluster"}:
        theirs = item(doc, other)["cost_per_useful_gpu_hour"]
        assert own["high"] < theirs["low"], (other, own, theirs)
    # the ops team is a team cost spread over the nodes: one server alone is not cheapest
    single = compare(client, gpus=8, utilization=1.0, horizon_years=3)
    own_single = item(single, "self_built_cluster")["cost_per_useful_gpu_hour"]["expected"]
    assert own_single > item(single, "rented_gpu_instances")["cost_per_useful_gpu_hour"]["expected"]
    assert own["expected"] < own_single / 1.5


# ---- (6) the article's three fit scenarios -----------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "winner"),
    [
        (LARGE_INSTITUTE, "self_built_cluster"),
        (PROOF_OF_CONCEPT, "rented_gpu_instances"),
        (SME_TEAM, "ai_compute_platform"),
    ],
    ids=["large-institute", "proof-of-concept", "sme-team"],
)
def test_the_articles_fit_scenarios_come_out_on_top(client: Client, profile: dict[str, Any], winner: str) -> None:
    doc = recommend(client, **profile)
    assert doc["recommended_option"] == winner
    top = doc["ranking"][0]
    assert top["option"] == winner and top["rank"] == 1 and top["feasible"] is True
    assert [e["rank"] for e in doc["ranking"]] == [1, 2, 3]
    assert {e["option"] for e in doc["ranking"]} == OPTIONS
    assert all(top["score"] >= e["score"] for e in doc["ranking"])
    for e in doc["ranking"]:
        assert 0 <= e["score"] <= 100
        assert all(0 <= v <= 100 for v in e["scores"].values())
        assert set(e["scores"]) == {"cost", "efficiency", "stability", "usability"}


def test_the_fit_rules_behind_the_scenarios_are_named(client: Client) -> None:
    big = entry(recommend(client, **LARGE_INSTITUTE), "self_built_cluster")
    assert {r["key"] for r in big["rules_applied"]} >= {
        "self_built_large_stable_demand",
        "self_built_professional_ops",
        "self_built_extreme_data_security",
    }
    poc = entry(recommend(client, **PROOF_OF_CONCEPT), "rented_gpu_instances")
    assert {r["key"] for r in poc["rules_applied"]} == {"rented_infrequent_training", "rented_small_and_short"}
    sme = entry(recommend(client, **SME_TEAM), "ai_compute_platform")
    assert [r["key"] for r in sme["rules_applied"]] == ["platform_frequent_sme_team"]
    assert sme["fit"] == 10


# ---- (7) infeasibility -------------------------------------------------------------------------


def test_a_start_sooner_than_procurement_makes_the_own_cluster_infeasible(client: Client) -> None:
    doc = recommend(client, **{**LARGE_INSTITUTE, "data_security": "standard", "start_within_days": 10})
    own = entry(doc, "self_built_cluster")
    assert own["feasible"] is False
    assert own["rank"] == 3
    assert doc["recommended_option"] != "self_built_cluster"
    blocker = own["reasons"][0]
    assert blocker.startswith("Not feasible:")
    assert "within 10 days" in blocker and "30–90 days" in blocker
    for other in OPTIONS - {"self_built_cluster"}:
        assert entry(doc, other)["feasible"] is True


def test_a_start_no_sooner_than_the_expected_procurement_is_feasible(client: Client) -> None:
    """Feasibility uses the expected lead time (60 days), not the best case (30)."""
    doc = recommend(client, **{**LARGE_INSTITUTE, "start_within_days": 60})
    own = entry(doc, "self_built_cluster")
    assert own["feasible"] is True
    assert doc["recommended_option"] == "self_built_cluster"
    sooner = entry(recommend(client, **{**LARGE_INSTITUTE, "start_within_days": 59}), "self_built_cluster")
    assert sooner["feasible"] is False


def test_every_option_infeasible_is_an_answer_with_the_reasons(client: Client) -> None:
    """Extreme data security rules out the shared cloud and platform; 10 days rule out buying."""
    doc = recommend(client, **{**LARGE_INSTITUTE, "start_within_days": 10})
    assert doc["recommended_option"] is None
    for r in doc["ranking"]:
        assert r["feasible"] is False
        assert r["reasons"][0].startswith("Not feasible:")
    shared = entry(doc, "rented_gpu_instances")["reasons"][0]
    assert "a shared public cloud" in shared and "extreme data security" in shared


def test_a_capex_budget_below_the_upfront_cost_makes_the_own_cluster_infeasible(client: Client) -> None:
    profile = {**LARGE_INSTITUTE, "data_security": "standard", "gpus": 8, "capex_budget": 1_000_000}
    doc = recommend(client, **profile)
    own = entry(doc, "self_built_cluster")
    assert own["feasible"] is False
    assert own["rank"] == 3
    assert any("1,500,000" in r and "1,000,000" in r for r in own["reasons"] if r.startswith("Not feasible:"))
    # no upfront cost: the budget cannot rule out renting or the platform, even at zero
    zero = recommend(client, **{**profile, "capex_budget": 0})
    for other in OPTIONS - {"self_built_cluster"}:
        assert entry(zero, other)["feasible"] is True
    assert entry(zero, "self_built_cluster")["feasible"] is False
    # a budget that covers the expected outlay (1.75 M) keeps it feasible; the best case alone does not
    enough = recommend(client, **{**profile, "capex_budget": 1_750_000})
    assert entry(enough, "self_built_cluster")["feasible"] is True
    short = recommend(client, **{**profile, "capex_budget": 1_600_000})
    assert entry(short, "self_built_cluster")["feasible"] is False


# ---- (8) provenance ------------------------------------------------------------------------------


def test_every_breakdown_line_names_knowledge_rows_that_exist(client: Client) -> None:
    prices = {str(p["id"]): p for p in client.get("/v1/prices", params={"limit": 500}).json()["items"]}
    assumptions = {
        f"{a['option']}/{a['key']}": a for a in client.get("/v1/assumptions", params={"limit": 500}).json()["items"]
    }
    servers = {s["key"]: s for s in client.get("/v1/servers", params={"limit": 500}).json()["items"]}
    rates = {str(r["id"]): r for r in client.get("/v1/exchange-rates", params={"limit": 500}).json()["items"]}
    catalog = {"price_items": prices, "assumptions": assumptions, "server_skus": servers, "exchange_rates": rates}
    seen_tables: set[str] = set()
    for body in (
        {"gpus": 8, "utilization": 0.5, "horizon_years": 1},
        {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "rental_plan": "reserved_1y"},
        {"gpus": 512, "utilization": 1.0, "horizon_years": 5},
    ):
        for it in compare(client, **body)["items"]:
            assert it["breakdown"], it["option"]
            annual = [0.0, 0.0]
            for line in it["breakdown"]:
                assert line["sources"], (it["option"], line["key"])
                annual[0] += line["annual"]["low"]
                annual[1] += line["annual"]["high"]
                for src in line["sources"]:
                    assert src["table"] in catalog, src
                    row = catalog[src["table"]].get(src["ref"])
                    assert row is not None, f"{it['option']}/{line['key']}: {src['table']} {src['ref']} not in catalog"
                    assert src["source"] == row["source"]
                    assert src["quality"] == row["source_quality"]
                    seen_tables.add(src["table"])
            # the lines add up to the annual cost
            assert annual[0] == pytest.approx(it["annual_cost"]["low"], abs=0.05)
            assert annual[1] == pytest.approx(it["annual_cost"]["high"], abs=0.05)
    assert seen_tables >= {"price_items", "assumptions"}


def test_the_rented_line_cites_the_articles_100_cny_an_hour(client: Client) -> None:
    prices = {str(p["id"]): p for p in client.get("/v1/prices", params={"limit": 500}).json()["items"]}
    rented = item(
        compare(client, gpus=8, utilization=0.5, horizon_years=1, rental_plan="on_demand"), "rented_gpu_instances"
    )
    cited = [prices[s["ref"]] for s in rented["breakdown"][0]["sources"] if s["table"] == "price_items"]
    assert [(p["item"], p["low"], p["high"]) for p in cited] == [("instance_hour", 100, 100)]


# ---- (9) stored recommendations ----------------------------------------------------------------


def test_a_recommendation_is_stored_with_its_location(client: Client) -> None:
    r = client.post("/v1/recommendations", json={"as_of": AS_OF, **SME_TEAM})
    assert r.status_code == 201
    body = r.json()
    assert r.headers["location"] == f"/v1/recommendations/{body['id']}"
    assert body["knowledge_version"] and body["methodology_version"]
    got = client.get(r.headers["location"])
    assert got.status_code == 200
    assert got.json() == body
    assert client.get("/v1/recommendations/00000000-0000-0000-0000-000000000000").status_code == 404


def _modified_seeds(tmp_path: Path) -> Path:
    """The reference seeds with the cost weight raised from 0.4 to 0.7 and the platform's pooled
    utilization lowered: a new knowledge version that changes the answer."""
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    scoring = target / "30-scoring-and-rules.yaml"
    text = scoring.read_text(encoding="utf-8")
    old = "key: weight_cost, unit: fraction, low: 0.4, high: 0.4"
    assert old in text
    scoring.write_text(text.replace(old, "key: weight_cost, unit: fraction, low: 0.7, high: 0.7"), encoding="utf-8")
    article = target / "20-article-reference.yaml"
    text = article.read_text(encoding="utf-8")
    old_pool = "key: pooled_utilization\n    unit: fraction\n    low: 0.72\n    expected: 0.77\n    high: 0.83"
    assert old_pool in text
    article.write_text(
        text.replace(
            old_pool, "key: pooled_utilization\n    unit: fraction\n    low: 0.6\n    expected: 0.65\n    high: 0.7"
        ),
        encoding="utf-8",
    )
    return target


def _wait_for_version(client: Client, old: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        label: str = client.get("/v1/knowledge-version").json()["version"]
        if label != old:
            return label
        time.sleep(0.1)
    raise AssertionError(f"knowledge version still {old} after {timeout} s")


def test_a_stored_recommendation_is_unchanged_after_a_new_knowledge_version(
    databases: Databases, tmp_path: Path
) -> None:
    url = databases.seeded("sqlite")
    with make_client(url) as client:
        r = client.post("/v1/recommendations", json={"as_of": AS_OF, **SME_TEAM})
        assert r.status_code == 201
        original = r.json()
        location = r.headers["location"]
        old_version = original["knowledge_version"]
        assert client.get("/v1/knowledge-version").json()["version"] == old_version

        plan = load_seeds(url, _modified_seeds(tmp_path), note="raise the cost weight")
        assert not plan.empty
        new_version = _wait_for_version(client, old_version)

        fresh = client.post("/v1/recommendations", json={"as_of": AS_OF, **SME_TEAM}).json()
        assert fresh["knowledge_version"] == new_version != old_version
        assert fresh["weights"]["cost"] == pytest.approx(0.7 / 1.3, abs=1e-4)
        assert entry(fresh, "ai_compute_platform")["cost"] != entry(original, "ai_compute_platform")["cost"]

        replay = client.get(location)
        assert replay.status_code == 200
        assert replay.json() == original
        assert replay.json()["weights"]["cost"] == pytest.approx(0.4, abs=1e-4)


# ---- (10) reasons in plain words -------------------------------------------------------------


def test_reasons_are_plain_sentences_with_the_figures(client: Client) -> None:
    doc = recommend(client, gpus=8, utilization=0.5, horizon_years=1, team_size=10, rental_plan="on_demand")
    rented = entry(doc, "rented_gpu_instances")["reasons"]
    assert any("876,000 CNY" in r and "8,760 hours" in r for r in rented), rented
    assert any("25.00 CNY per useful GPU-hour" in r for r in rented), rented
    assert any("10–30 minutes of set-up" in r for r in rented), rented
    own = entry(doc, "self_built_cluster")["reasons"]
    assert any("1,500,000–2,000,000 CNY" in r and "800,000–1,166,667 CNY" in r for r in own), own
    platform = entry(doc, "ai_compute_platform")["reasons"]
    assert any("72%–83% pooled utilization" in r for r in platform), platform
    placeholder = re.compile(r"\{[a-z_.]+\}")
    for e in doc["ranking"]:
        assert e["reasons"], e["option"]
        for reason in e["reasons"]:
            assert not placeholder.search(reason), reason
            assert "Range(" not in reason and "None" not in reason, reason
            assert (reason[0].isupper() or reason[0].isdigit()) and reason.endswith((".", " fit)")), reason
