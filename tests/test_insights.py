"""Break-even, sensitivity and uncertainty against hand calculations from the reference data."""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np
import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.types import Profile
from app.engine import decision, insights
from app.host.manager import create_option_host

LARGE = {
    "gpus": 512,
    "utilization": 0.85,
    "horizon_years": 5,
    "team_size": 100,
    "ops_team": "professional",
    "data_security": "extreme",
    "start_within_days": 120,
}
SMALL = {
    "gpus": 8,
    "utilization": 0.5,
    "horizon_years": 1,
    "team_size": 10,
    "ops_team": "none",
    "data_security": "standard",
    "start_within_days": 30,
}
HOURS = 8760
RENT_PER_USEFUL_HOUR_BELOW_HALF = 100 / 8 / 0.5  # 25 CNY: instance price over held utilization


def _crossing(doc, first, second):
    return next(c for c in doc["crossings"] if c["first"] == first and c["second"] == second)


def _per_useful_hour(client, profile, utilization, option, end):
    body = {k: profile[k] for k in ("gpus", "horizon_years")} | {"utilization": utilization, "rental_plan": "on_demand"}
    doc = client.post("/v1/price-comparisons", json=body).json()
    return next(i for i in doc["items"] if i["option"] == option)["cost_per_useful_gpu_hour"][end]


def test_own_versus_rent_break_even_is_where_both_cost_the_same(client):
    doc = client.post("/v1/break-even", json=LARGE).json()
    c = _crossing(doc, "self_built_cluster", "rented_gpu_instances:on_demand")
    for end in ("low", "expected", "high"):
        u = c["utilization"][end]
        assert u is not None and 0 < u < 0.5  # renting costs 25 per useful hour below 50 %
        own = _per_useful_hour(client, LARGE, u, "self_built_cluster", end)
        rent = _per_useful_hour(client, LARGE, u, "rented_gpu_instances", end)
        assert rent == RENT_PER_USEFUL_HOUR_BELOW_HALF
        assert own == pytest.approx(rent, rel=2e-3)  # bisected to 20 steps
        assert c["cheaper_above"][end] == "self_built_cluster"
    assert f"above {c['utilization']['expected'] * 100:.0f}% utilization" in c["statement"]


def test_one_server_for_a_year_never_beats_renting_on_demand_at_the_expected_figures(client):
    doc = client.post("/v1/break-even", json=SMALL).json()
    c = _crossing(doc, "self_built_cluster", "rented_gpu_instances:on_demand")
    # bought, installed after two months, resold after a year: never cheaper than renting every hour
    assert c["utilization"]["expected"] is None
    assert c["cheaper_above"]["expected"] == "rented_gpu_instances:on_demand"
    assert _per_useful_hour(client, SMALL, 1.0, "self_built_cluster", "expected") > 12.5
    # in the best case (cheapest hardware, longest life, highest resale) owning wins above some utilization
    u = c["utilization"]["low"]
    assert u is not None
    assert _per_useful_hour(client, SMALL, u, "self_built_cluster", "low") == pytest.approx(
        _per_useful_hour(client, SMALL, u, "rented_gpu_instances", "low"), rel=2e-3
    )


def test_rented_and_platform_cost_the_same_once_every_hour_is_paid(client):
    doc = client.post("/v1/break-even", json=SMALL).json()
    c = _crossing(doc, "rented_gpu_instances:on_demand", "ai_compute_platform")
    # the platform bills useful ÷ pooled utilization until that reaches every hour, at renting's price;
    # pooled utilization 0.72 / 0.77 / 0.83, expected its triangle's mean (0.72 + 0.77 + 0.83) ÷ 3
    assert c["utilization"] == {
        "low": pytest.approx(0.83, abs=2e-4),
        "expected": pytest.approx((0.72 + 0.77 + 0.83) / 3, abs=2e-4),
        "high": pytest.approx(0.72, abs=2e-4),
    }
    assert c["cheaper_above"]["expected"] is None


def test_payback_months_against_renting(client):
    doc = client.post("/v1/break-even", json=LARGE).json()
    p = next(x for x in doc["paybacks"] if x["alternative"] == "rented_gpu_instances:on_demand")
    rent = 512 * HOURS * 12.5  # every hour paid at 85 % utilization (held = useful ÷ 0.5 is capped)
    expected = 12 * 64 * 1_750_000 / (rent - 2 * 400_000)
    assert p["months"]["expected"] == pytest.approx(expected, abs=0.05)
    assert p["within_horizon"]["expected"] is True
    one = client.post("/v1/break-even", json=SMALL).json()
    q = next(x for x in one["paybacks"] if x["alternative"] == "rented_gpu_instances:on_demand")
    assert q["months"]["expected"] == pytest.approx(12 * 1_750_000 / (876_000 - 400_000), abs=0.05)
    assert q["within_horizon"]["expected"] is False
    assert "never within the 1-year horizon" in q["statement"]


def test_owning_is_cheapest_from_two_servers_at_85_percent(client):
    doc = client.post("/v1/break-even", json=LARGE).json()
    # 16 GPUs: (2 × 583,333 + 400,000) ÷ (16 × 0.85 × 8760) = 13.15 < 12.5 ÷ 0.85 = 14.71; 8 GPUs: 16.51
    assert doc["own_cheapest_from_gpus"]["expected"] == 16
    assert "from 16 GPUs" in doc["own_cheapest_statement"]


def test_recommendations_summarise_the_break_even_and_carry_confidence(client):
    rec = client.post("/v1/recommendations", json=LARGE).json()
    crossing = _crossing(
        client.post("/v1/break-even", json=LARGE).json(), "self_built_cluster", "rented_gpu_instances:on_demand"
    )
    u = crossing["utilization"]["expected"]
    assert (
        rec["break_even"]
        == f"With 512 GPUs, owning becomes cheaper than renting on demand above {u * 100:.0f}% utilization."
    )
    conf = rec["confidence"]
    assert conf["draws"] == 1000 and conf["seed"] == 0
    assert sum(o["probability_first"] for o in conf["options"].values()) == pytest.approx(1.0)
    assert conf["options"]["self_built_cluster"]["probability_first"] == 1.0


def test_sensitivity_orders_inputs_by_effect_and_finds_the_utilization_that_flips(client):
    doc = client.post("/v1/sensitivity", json=SMALL).json()
    swings = [i["swing"] for i in doc["inputs"]]
    assert swings == sorted(swings, reverse=True)
    refs = {i["ref"] for i in doc["inputs"]}
    assert "price_items:3" in refs or any(r.startswith("price_items:") for r in refs)
    assert {"profile.utilization", "profile.gpus", "profile.horizon_years"} <= refs
    change = doc["utilization_change"]
    assert change is not None and change["recommended_option"] != doc["recommended_option"]
    flipped = client.post("/v1/recommendations", json={**SMALL, "utilization": change["utilization"]}).json()
    assert flipped["recommended_option"] == change["recommended_option"]


def test_a_reported_weight_change_really_changes_the_recommendation(client):
    # a team of 3 training rarely for 3 years: the platform leads on cost; moving weight away from
    # cost lets renting's fit for infrequent training decide
    profile = {**SMALL, "utilization": 0.1, "horizon_years": 3, "team_size": 3, "start_within_days": 14}
    doc = client.post("/v1/sensitivity", json=profile).json()
    assert doc["recommended_option"] == "ai_compute_platform"
    change = doc["weight_change"]
    assert change["dimension"] != "cost" and change["recommended_option"] == "rented_gpu_instances"
    assert 0 < change["shift"] < 1 and sum(change["weights"].values()) == pytest.approx(1, abs=1e-3)
    again = client.post("/v1/recommendations", json={**profile, "weights": change["weights"]}).json()
    assert again["recommended_option"] == "rented_gpu_instances"
    # a slightly smaller shift keeps the platform first: the change found is the smallest
    t = change["shift"] - 0.01
    base = {"cost": 0.4, "efficiency": 0.2, "stability": 0.2, "usability": 0.2}
    smaller = {k: (1 - t) * w + (t if k == change["dimension"] else 0) for k, w in base.items()}
    kept = client.post("/v1/recommendations", json={**profile, "weights": smaller}).json()
    assert kept["recommended_option"] == "ai_compute_platform"


# ---- Monte Carlo, on the pure core -------------------------------------------------------------

PROFILE = Profile(
    gpus=16, utilization=0.6, horizon_years=2, team_size=20, start_within_days=14, as_of=dt.date(2025, 6, 1)
)


def _mc(kb, **kw):
    host = create_option_host()
    return insights.uncertainty(host, PROFILE, kb, list(host.options), decision.default_weights(kb), **kw)


def test_monte_carlo_is_reproducible_with_a_seed_and_varies_without():
    kb = knowledge_from_seeds()
    a, b, c = _mc(kb, draws=2000, seed=3), _mc(kb, draws=2000, seed=3), _mc(kb, draws=2000, seed=4)
    assert a == b
    assert a.options["ai_compute_platform"].annual_cost != c.options["ai_compute_platform"].annual_cost


def test_monte_carlo_median_sits_near_the_expected_value():
    kb = knowledge_from_seeds()
    host = create_option_host()
    result = _mc(kb, draws=20_000, seed=1)
    for option in ("ai_compute_platform", "self_built_cluster"):
        expected = host.assess(option, PROFILE, kb).cost.annual.expected
        assert result.options[option].annual_cost["p50"] == pytest.approx(expected, rel=0.02)
        p = result.options[option].annual_cost
        assert p["p10"] < p["p50"] < p["p90"]


def test_monte_carlo_spread_vanishes_when_every_range_is_a_point():
    kb = insights.pointwise(knowledge_from_seeds())
    result = _mc(kb, draws=500, seed=1)
    for o in result.options.values():
        assert o.annual_cost["p10"] == o.annual_cost["p50"] == o.annual_cost["p90"]
        assert o.probability_first in (0.0, 1.0)


def test_probability_first_matches_the_ranking_when_nothing_is_uncertain():
    kb = insights.pointwise(knowledge_from_seeds())
    host = create_option_host()
    outcomes = decision.assess_all(host.options, lambda o: host.assess(o, PROFILE, kb))
    best = decision.decide(PROFILE, outcomes, kb, decision.default_weights(kb)).recommended_option
    assert _mc(kb, draws=200).options[best].probability_first == 1.0


def test_uncertainty_endpoint_validates_draws_and_is_seedable(client):
    body = {**SMALL, "draws": 5000, "seed": 11}
    first, second = client.post("/v1/uncertainty", json=body), client.post("/v1/uncertainty", json=body)
    assert first.status_code == 200 and first.json()["options"] == second.json()["options"]
    bad = client.post("/v1/uncertainty", json={**SMALL, "draws": 10})
    assert bad.status_code == 400 and bad.json()["field"] == "draws"


def test_sampled_ranges_stay_within_their_bounds():
    import numpy as np

    kb = knowledge_from_seeds()
    sampled = insights.sample_knowledge(kb, 1000, np.random.default_rng(0))
    for key, row in sampled.assumptions.items():
        original = kb.assumptions[key].value
        values = np.asarray(row.value.expected)
        assert values.min() >= original.low and values.max() <= original.high
    assert dataclasses.replace(sampled, version="x").version == "x"


@pytest.mark.parametrize("n", [1, 2, 3, 10, 999, 1000, 1001, 10_000])
def test_percentiles_are_numpys_bit_for_bit(n: int) -> None:
    """The Monte Carlo answer's P10/P50/P90 come from one partition (``uncertainty.percentiles``), as
    ``np.percentile`` computes them: random draws, ties, constants, and NaN."""
    from app.engine.insights.uncertainty import percentiles, percentiles_of

    rng = np.random.default_rng(n)
    samples = [
        rng.triangular(10.0, 12.5, 20.0, size=n),
        np.round(rng.uniform(0, 5, size=n)),  # ties
        np.full(n, 3.25),
        rng.lognormal(size=n) * 1e6,
    ]
    with_nan = rng.uniform(size=n)
    with_nan[n // 2] = np.nan
    samples.append(with_nan)
    for values in samples:
        expected = np.percentile(values, (10, 50, 90))
        got = percentiles(values)
        assert np.array_equal(got, expected, equal_nan=True), (values[:5], got, expected)
    # several samples at once, one row each (a Monte Carlo answer's annual and total costs of every option):
    # each row's percentiles as if computed alone
    together = percentiles_of(samples)
    for values, got in zip(samples, together, strict=True):
        assert np.array_equal(got, np.percentile(values, (10, 50, 90)), equal_nan=True), (values[:5], got)
