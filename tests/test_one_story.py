"""One story per answer (issue 34 item 5; docs/methodology.md "One story per answer"): headline figures
are the means of the distributions the confidence block samples, the recommendation is the most likely
best or says why not, an infeasible option is never best, and break-even and training plans refuse what a
comparison refuses. Hand calculations on the pure core; the answers through the API on SQLite and
PostgreSQL (the ``client`` fixture)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.ranges import Range, triangular_mean, triangular_mode
from app.core.types import Profile
from app.engine import decision, insights
from app.engine.insights.story import explained, sampling_error
from app.engine.insights.uncertainty import OptionUncertainty, Uncertainty
from app.host.manager import create_option_host
from app.kb.snapshot import assemble

AS_OF = dt.date(2025, 6, 1)


# ---- headline figures are means ------------------------------------------------------------------


def test_a_triangular_1_2_6_reads_as_its_mean_3_with_its_mode_2() -> None:
    r = Range.triangular(1, 2, 6)
    assert (r.low, r.expected, r.high) == (1.0, 3.0, 6.0)  # (1 + 2 + 6) ÷ 3
    assert triangular_mean(1, 2, 6) == 3.0
    assert triangular_mode(1, 3, 6) == 2.0  # 3 × 3 − 1 − 6
    assert Range.triangular(4, 4, 4) == Range.point(4)
    with pytest.raises(ValueError):
        Range.triangular(1, 7, 6)


def _row(**values: Any) -> SimpleNamespace:
    base = {
        "id": 1,
        "option": "*",
        "key": "k",
        "unit": "fraction",
        "source": "hand calculation",
        "source_quality": "assumption",
        "rationale": None,
    }
    return SimpleNamespace(**(base | values))


def test_a_knowledge_row_keeps_the_sources_most_likely_figure_as_mode_and_its_mean_as_expected() -> None:
    kb = assemble(
        "kv-test",
        dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        gpu_models=[],
        servers=[],
        prices=[],
        assumptions=[
            _row(key="skewed", low=1, expected=2, high=6),
            _row(id=2, key="unstated", low=1, expected=None, high=5),
            _row(id=3, key="point", low=0.5, expected=0.5, high=0.5),
        ],
        rules=[],
    )
    skewed, unstated, point = (kb.assumptions[("*", k)] for k in ("skewed", "unstated", "point"))
    assert skewed.mode == 2.0 and skewed.value == Range(1.0, 3.0, 6.0)
    assert unstated.mode == 3.0 and unstated.value == Range(1.0, 3.0, 5.0)  # no mode given: the midpoint
    assert point.mode == 0.5 and point.value == Range.point(0.5)


def test_the_seeds_engineer_cost_reads_as_its_triangular_mean() -> None:
    """The article's engineer cost, 200,000–500,000 CNY a year, most likely 330,000 (seeds/20): its headline
    is (200,000 + 330,000 + 500,000) ÷ 3 = 343,333.33."""
    kb = knowledge_from_seeds()
    row = next(p for p in kb.prices if p.item == "engineer_time" and p.currency == "CNY" and p.value.low == 200_000)
    assert row.mode == 330_000
    assert row.value.expected == pytest.approx(343_333.333, abs=1e-3)


def test_the_draws_of_a_row_average_to_its_expected_and_peak_at_its_mode() -> None:
    kb = assemble(
        "kv-test",
        dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        gpu_models=[],
        servers=[],
        prices=[],
        assumptions=[_row(key="skewed", low=1, expected=2, high=6)],
        rules=[],
    )
    draws = np.asarray(
        insights.sample_knowledge(kb, 40_000, np.random.default_rng(7)).assumptions[("*", "skewed")].value.low
    )
    # triangular(1, 2, 6): mean 3, standard deviation √(21 ÷ 18) = 1.080; 40,000 draws: standard error 0.0054
    assert draws.mean() == pytest.approx(3.0, abs=4 * 1.080 / 200)
    counts, edges = np.histogram(draws, bins=np.arange(1.0, 6.5, 0.5))
    assert edges[counts.argmax()] in (1.5, 2.0)  # the densest half-unit holds the mode 2


# ---- P(best) and the recommendation ------------------------------------------------------------------


def _uncertainty(profile: Profile, draws: int = 400) -> tuple[decision.Decision, Uncertainty]:
    kb = knowledge_from_seeds()
    host = create_option_host()
    weights = decision.default_weights(kb)
    outcomes = decision.assess_all(host.options, lambda o: host.assess(o, profile, kb))
    base = decision.decide(profile, outcomes, kb, weights)
    return base, insights.uncertainty(host, profile, kb, list(host.options), weights, draws=draws, base=base)


def test_an_infeasible_option_is_never_best_in_a_draw() -> None:
    """Extreme data security refuses rented and platform offers (shared or dedicated hosts, not the buyer's
    own premises): their P(best) is 0, whatever their sampled costs."""
    profile = Profile(gpus=16, utilization=0.6, horizon_years=2, as_of=AS_OF, data_security="extreme")
    base, u = _uncertainty(profile)
    infeasible = [r.option for r in base.ranking if not r.feasible]
    assert infeasible
    for option in infeasible:
        assert u.options[option].probability_first == 0.0
    assert sum(x.probability_first for x in u.options.values()) == pytest.approx(1.0)


def test_the_ranking_and_the_draws_score_cost_on_one_scale() -> None:
    """8 reference GPUs at 90 % for 3 years, no ops team: the ranking scores the platform first on cost per
    effective GPU-hour. Draws scored on cost per useful GPU-hour made renting best in 98.8 % of them (the
    recommendation's P(best) was 0.012); scored as the ranking scores, the recommendation is the most often
    best."""
    profile = Profile(gpus=8, utilization=0.9, horizon_years=3, team_size=20, as_of=AS_OF)
    base, u = _uncertainty(profile, draws=1000)
    assert base.recommended_option == insights.most_likely_best(u)
    assert u.options[base.recommended_option].probability_first > 0.5


def test_when_no_option_is_feasible_none_is_best() -> None:
    """512 GPUs within a day with extreme data security: the own cluster takes months, the others are not on
    the buyer's premises. No draw has a best option."""
    profile = Profile(
        gpus=512, utilization=0.85, horizon_years=5, as_of=AS_OF, data_security="extreme", start_within_days=1
    )
    base, u = _uncertainty(profile)
    assert base.recommended_option is None
    assert all(x.probability_first == 0.0 for x in u.options.values())


def _uncertain(p: dict[str, float], scores: dict[str, float], draws: int = 1000) -> Uncertainty:
    percentiles = {"p10": 0.0, "p50": 0.0, "p90": 0.0}
    return Uncertainty(draws, 0, {o: OptionUncertainty(percentiles, percentiles, p[o], scores[o]) for o in p}, {}, {})


def _decided(first: str) -> decision.Decision:
    kb = knowledge_from_seeds()
    host = create_option_host()
    profile = Profile(gpus=16, utilization=0.6, horizon_years=2, as_of=AS_OF)
    outcomes = decision.assess_all(host.options, lambda o: host.assess(o, profile, kb))
    found = decision.decide(profile, outcomes, kb, decision.default_weights(kb))
    return decision.Decision(first, found.weights, found.ranking)


def test_the_sampling_error_of_two_shares() -> None:
    # 0.5 and 0.45 of 1,000 draws: √((0.95 − 0.05²) ÷ 1,000) = 0.03078
    assert sampling_error(0.5, 0.45, 1000) == pytest.approx(0.030782, abs=1e-6)


@pytest.mark.parametrize(
    ("p", "scores", "code"),
    [
        # 0.48 against 0.46 of 1,000 draws: 2 × 0.0307 = 0.061 > 0.02 apart: a tie
        ({"a": 0.46, "b": 0.48, "c": 0.06}, {"a": 70.0, "b": 69.0, "c": 40.0}, "reason.confidence.tie"),
        # 0.70 against 0.30: not a tie; the first scores more on average over the draws
        ({"a": 0.30, "b": 0.70, "c": 0.0}, {"a": 72.0, "b": 69.0, "c": 40.0}, "reason.confidence.margins"),
        ({"a": 0.30, "b": 0.70, "c": 0.0}, {"a": 66.0, "b": 69.0, "c": 40.0}, "reason.confidence.skew"),
        ({"a": 0.70, "b": 0.30, "c": 0.0}, {"a": 72.0, "b": 69.0, "c": 40.0}, None),
    ],
)
def test_a_recommendation_not_most_often_best_says_why_in_one_sentence(
    p: dict[str, float], scores: dict[str, float], code: str | None
) -> None:
    base = _decided("self_built_cluster")
    names = {"a": "self_built_cluster", "b": "ai_compute_platform", "c": "rented_gpu_instances"}
    u = _uncertain({names[k]: v for k, v in p.items()}, {names[k]: v for k, v in scores.items()})
    told = explained(base, u)
    mine = next(r for r in told.ranking if r.option == "self_built_cluster")
    before = next(r for r in base.ranking if r.option == "self_built_cluster")
    assert told.recommended_option == base.recommended_option  # one ranking: only a sentence is added
    if code is None:
        assert mine.reasons == before.reasons
    else:
        assert len(mine.reasons) == len(before.reasons) + 1
        assert getattr(mine.reasons[0], "code", None) == code
        assert "AI compute platform" in mine.reasons[0] or "platform" in mine.reasons[0].lower()


PROFILES = [
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "team_size": 10, "start_within_days": 30},
    {"gpus": 8, "utilization": 0.9, "horizon_years": 3, "team_size": 20},
    {"gpus": 512, "utilization": 0.85, "horizon_years": 5, "team_size": 100, "ops_team": "professional",
     "data_security": "extreme", "start_within_days": 120},
    {"gpus": 8, "utilization": 0.08, "horizon_years": 1, "team_size": 3, "start_within_days": 2},
    {"gpus": 16, "utilization": 0.6, "horizon_years": 2, "team_size": 20, "start_within_days": 14},
    {"gpus": 64, "utilization": 0.9, "horizon_years": 3, "gpu_model": "h100_sxm", "as_of": "2026-12-01",
     "buyer_country": "US"},
    {"gpus": 256, "utilization": 0.4, "horizon_years": 2, "gpu_model": "h100_sxm", "as_of": "2026-12-01",
     "ops_team": "basic"},
]  # fmt: skip


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: f"{p['gpus']}gpus-{p['utilization']}")
def test_the_recommended_option_is_the_most_likely_best_or_says_why(client: Any, profile: dict[str, Any]) -> None:
    body = {"as_of": "2025-06-01", **profile}
    doc = client.post("/v1/recommendations", json=body).json()
    chosen, odds = doc["recommended_option"], doc["confidence"]["options"]
    for entry in doc["ranking"]:
        if not entry["feasible"] and entry["option"] in odds:
            assert odds[entry["option"]]["probability_first"] == 0.0
    if chosen is None:
        return
    best = max(x["probability_first"] for x in odds.values())
    mine = next(e for e in doc["ranking"] if e["option"] == chosen)
    if odds[chosen]["probability_first"] < best:
        assert mine["reason_codes"][0]["code"].startswith("reason.confidence."), mine["reasons"][0]
    else:
        assert not mine["reason_codes"][0]["code"].startswith("reason.confidence.")


# ---- break-even and training plans refuse what a comparison refuses ------------------------------------

#: 512 H100 in one job, rented only from Lambda: its H100 offers are single 8-GPU instances without a
#: stated training fabric, so no rented offer can span the job
JOB_512 = {
    "gpus": 512,
    "utilization": 0.9,
    "horizon_years": 3,
    "gpu_model": "h100_sxm",
    "as_of": "2026-12-01",
    "providers": ["lambda"],
}


def test_break_even_refuses_a_rented_offer_that_cannot_span_a_512_gpu_job_as_the_comparison_does(
    client: Any,
) -> None:
    compared = client.post("/v1/price-comparisons", json={**JOB_512, "rental_plan": "on_demand"}).json()
    rented = next(i for i in compared["items"] if i["option"] == "rented_gpu_instances")
    assert rented["feasible"] is False and rented["infeasible_reasons"]
    doc = client.post("/v1/break-even", json=JOB_512).json()
    label = "rented_gpu_instances:on_demand"
    assert doc["error_codes"][label] == "multi-node"
    for reason in rented["infeasible_reasons"]:
        assert reason in doc["errors"][label]
    assert all(label not in (c["first"], c["second"]) for c in doc["crossings"])
    assert all(p["alternative"] != label for p in doc["paybacks"])


def test_a_training_plan_refuses_spot_capacity_for_a_run_that_tolerates_no_preemption_as_a_comparison_does(
    client: Any,
) -> None:
    """One synchronous run on 64 H100 on spot: a comparison of the same job shape (no work tolerates
    preemption, a comparison's default) refuses every spot offer, and so does the training plan, with the
    same sentence."""
    run = {"gpu_model": "h100_sxm", "gpus": 64, "as_of": "2026-12-01", "rental_plan": "spot"}
    doc = client.post("/v1/training-plans", json={"parameters": 7e9, "tokens": 1e12, **run}).json()
    planned = next(i for i in doc["items"] if i["option"] == "rented_gpu_instances")
    compared = client.post("/v1/price-comparisons", json={**run, "utilization": 1.0, "horizon_years": 1}).json()
    item = next(i for i in compared["items"] if i["option"] == "rented_gpu_instances")
    assert item["feasible"] is False
    assert planned["feasible"] is False
    assert "violation.preemptible" in {c["code"] for c in planned["reason_codes"]}
    preemption = [r for r in item["infeasible_reasons"] if "preemption" in r]
    assert preemption and preemption[0] in planned["reasons"]
    assert planned["total_cost"] is not None  # its figures stay, as a comparison shows them
    others = [i for i in doc["items"] if i["option"] != "rented_gpu_instances" and i["feasible"] is not None]
    assert all(i["reasons"] == [] for i in others if i["feasible"])
