"""Properties of the pure decision core (no database): a knowledge snapshot built from the seed
files, the built-in plugins through the option host, and profiles drawn by hypothesis."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.knowledge import Knowledge, Price
from app.core.ranges import Range
from app.core.types import Assessment, Profile
from app.core.vocab import DIMENSIONS
from app.engine import decision
from app.host.manager import OptionHost, create_option_host
from app.settings import PROJECT_ROOT

SEEDS = PROJECT_ROOT / "seeds"
AS_OF = dt.date(2025, 6, 1)
OWN, RENTED = "self_built_cluster", "rented_gpu_instances"
OPTIONS = ("ai_compute_platform", "rented_gpu_instances", "self_built_cluster")
REL = 1e-9  # float slack for comparisons of values computed along different paths


from seed_snapshot import knowledge_from_seeds  # noqa: E402


def scale_prices(kb: Knowledge, option: str, factor: float) -> Knowledge:
    """``kb`` with every money price of ``option`` multiplied by ``factor`` (fractions such as a
    reservation discount are not prices of compute and stay as they are)."""

    def scaled(p: Price) -> Price:
        if p.option != option or p.unit == "fraction":
            return p
        v = p.value
        return dataclasses.replace(p, value=Range(v.low * factor, v.expected * factor, v.high * factor))

    return dataclasses.replace(kb, version=f"{kb.version}-x{factor}", prices=tuple(scaled(p) for p in kb.prices))


@functools.cache
def host() -> OptionHost:
    return create_option_host()


def outcomes(profile: Profile, kb: Knowledge) -> list[decision.Outcome]:
    h = host()
    return decision.assess_all(h.options, lambda o: h.assess(o, profile, kb))


def assess_all_options(profile: Profile, kb: Knowledge) -> list[Assessment]:
    found = [o.assessment for o in outcomes(profile, kb)]
    assert all(a is not None for a in found), [o.error for o in outcomes(profile, kb)]
    return [a for a in found if a is not None]


def decide(profile: Profile, kb: Knowledge, weights: Mapping[str, float] | None = None) -> decision.Decision:
    return decision.decide(profile, outcomes(profile, kb), kb, weights or decision.default_weights(kb))


# ---- strategies ------------------------------------------------------------------------------

utilizations = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)
profiles = st.builds(
    Profile,
    gpus=st.integers(min_value=1, max_value=4096),
    utilization=utilizations,
    horizon_years=st.floats(min_value=0.25, max_value=10, allow_nan=False),
    as_of=st.just(AS_OF),
    team_size=st.integers(min_value=1, max_value=500),
    ops_team=st.sampled_from(["none", "basic", "professional"]),
    data_security=st.sampled_from(["standard", "high", "extreme"]),
    start_within_days=st.integers(min_value=0, max_value=365),
    rental_plan=st.sampled_from(["on_demand", "reserved_1y"]),
    capex_budget=st.none() | st.floats(min_value=0, max_value=1e9, allow_nan=False),
)
weights = st.fixed_dictionaries({d: st.floats(min_value=0, max_value=10, allow_nan=False) for d in DIMENSIONS}).filter(
    lambda w: sum(w.values()) > 0.01
)

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True)


def _not_above(new: float, old: float) -> bool:
    return new <= old * (1 + REL) + 1e-12


# ---- the snapshot helper reproduces the article ---------------------------------------------


def test_the_seed_snapshot_reproduces_the_articles_rented_and_own_cluster_figures() -> None:
    """Guards the helper itself: the properties below run on the article's figures."""
    kb = knowledge_from_seeds()
    on_demand = Profile(gpus=8, utilization=0.5, horizon_years=1, as_of=AS_OF, rental_plan="on_demand")
    by_option = {a.option: a for a in assess_all_options(on_demand, kb)}
    assert set(by_option) == set(OPTIONS)
    rented = by_option["rented_gpu_instances"].cost
    assert (rented.annual.low, rented.annual.high) == (876_000, 876_000)
    own = by_option["self_built_cluster"].cost
    assert own.upfront.low == 1_500_000 and own.upfront.high == 2_000_000
    assert own.annual.low == pytest.approx(800_000) and own.annual.high == pytest.approx(3_500_000 / 3)


def test_every_declared_rule_figure_is_in_an_assessment() -> None:
    from app.engine import rules

    kb = knowledge_from_seeds()
    profile = Profile(8, 0.5, 1, AS_OF)
    for a in assess_all_options(profile, kb):
        ctx = rules.Context.of(profile, a)
        assert set(ctx.metrics) == rules.ASSESSMENT_FIGURES
        assert ctx.resolve("assessment.annual_cost.low") == a.cost.annual.low
        assert ctx.resolve("assessment.annual_cost") == a.cost.annual.expected
        assert ctx.resolve("assessment.lead_time_days.high") == a.efficiency.lead_time_days.high


# ---- utilization is the hinge ----------------------------------------------------------------


@SETTINGS
@given(profile=profiles, u1=utilizations, u2=utilizations)
def test_more_utilization_never_raises_cost_per_useful_gpu_hour(profile: Profile, u1: float, u2: float) -> None:
    kb = knowledge_from_seeds()
    lower, higher = sorted((u1, u2))
    before = {
        a.option: a.cost.per_useful_gpu_hour
        for a in assess_all_options(dataclasses.replace(profile, utilization=lower), kb)
    }
    after = {
        a.option: a.cost.per_useful_gpu_hour
        for a in assess_all_options(dataclasses.replace(profile, utilization=higher), kb)
    }
    assert set(before) == set(after) == set(OPTIONS)
    for option in OPTIONS:
        for end in ("low", "expected", "high"):
            assert _not_above(getattr(after[option], end), getattr(before[option], end)), (option, end)


@SETTINGS
@given(profile=profiles)
def test_own_cluster_cost_per_useful_hour_is_inversely_proportional_to_utilization(profile: Profile) -> None:
    """An owned cluster costs the same whatever it does: halving utilization doubles its unit cost."""
    kb = knowledge_from_seeds()
    full = dataclasses.replace(profile, utilization=1.0)
    half = dataclasses.replace(profile, utilization=0.5)

    def own(p: Profile) -> Assessment:
        return next(a for a in assess_all_options(p, kb) if a.option == "self_built_cluster")

    a_full, a_half = own(full), own(half)
    assert a_half.cost.annual == a_full.cost.annual
    assert a_half.cost.per_useful_gpu_hour.expected == pytest.approx(2 * a_full.cost.per_useful_gpu_hour.expected)


# ---- price monotonicity ----------------------------------------------------------------------


@SETTINGS
@given(profile=profiles, option=st.sampled_from(OPTIONS), factor=st.floats(min_value=1.0, max_value=5.0))
def test_raising_an_options_prices_never_raises_its_cost_score(profile: Profile, option: str, factor: float) -> None:
    kb = knowledge_from_seeds()
    dearer = scale_prices(kb, option, factor)

    def cost_view(k: Knowledge) -> tuple[float, float, decision.Ranked]:
        assessed = assess_all_options(profile, k)
        cheapest = min(decision.effective_cost(a) for a in assessed)
        mine = next(a for a in assessed if a.option == option)
        ranked = next(r for r in decide(profile, k).ranking if r.option == option)
        return decision.dimension_scores(mine, cheapest)["cost"], mine.cost.per_useful_gpu_hour.expected, ranked

    score_before, unit_before, ranked_before = cost_view(kb)
    score_after, unit_after, ranked_after = cost_view(dearer)
    assert _not_above(score_after, score_before)
    assert ranked_after.scores["cost"] <= ranked_before.scores["cost"]
    if option == OWN:
        # the own cluster may bridge its procurement on rented instances, whose prices did not move
        assert unit_after >= unit_before * (1 - 1e-9)
    else:  # every cost line of renting and of the platform is linear in its prices
        assert unit_after == pytest.approx(unit_before * factor, rel=1e-9)


@SETTINGS
@given(profile=profiles, option=st.sampled_from(OPTIONS), factor=st.floats(min_value=1.01, max_value=5.0))
def test_raising_an_options_prices_leaves_the_other_options_unit_costs_alone(
    profile: Profile, option: str, factor: float
) -> None:
    kb = knowledge_from_seeds()
    before = {a.option: a.cost.per_useful_gpu_hour for a in assess_all_options(profile, kb)}
    after = {
        a.option: a.cost.per_useful_gpu_hour for a in assess_all_options(profile, scale_prices(kb, option, factor))
    }
    for other in set(OPTIONS) - {option}:
        if other == OWN and option == RENTED:
            # an own cluster bridges its procurement on rented instances only while that is cheaper
            # than waiting: dearer renting can raise its unit cost, never lower it
            assert after[other].expected >= before[other].expected * (1 - 1e-9)
        else:
            assert after[other] == before[other]
    assert after[option].expected > before[option].expected


# ---- scores stay within 0–100 ----------------------------------------------------------------


@SETTINGS
@given(profile=profiles, w=weights)
def test_all_scores_stay_within_0_and_100(profile: Profile, w: dict[str, float]) -> None:
    kb = knowledge_from_seeds()
    assessed = assess_all_options(profile, kb)
    cheapest = min(decision.effective_cost(a) for a in assessed)
    for a in assessed:  # the measures themselves, before any clamping
        for dim, value in decision.dimension_scores(a, cheapest).items():
            assert -1e-9 <= value <= 100 + 1e-9, (a.option, dim, value)
    result = decide(profile, kb, w)
    assert sum(result.weights.values()) == pytest.approx(1.0)
    assert [r.rank for r in result.ranking] == [1, 2, 3]
    for r in result.ranking:
        assert 0 <= r.score <= 100
        assert set(r.scores) == set(DIMENSIONS)
        for value in r.scores.values():
            assert 0 <= value <= 100
    feasible = [r for r in result.ranking if r.feasible]
    assert result.recommended_option == (feasible[0].option if feasible else None)
    # feasible options come first
    assert [r.feasible for r in result.ranking] == sorted((r.feasible for r in result.ranking), reverse=True)


# ---- determinism -----------------------------------------------------------------------------


def _ranking_view(d: decision.Decision) -> list[tuple[Any, ...]]:
    return [(r.option, r.rank, r.score, r.raw_score, dict(r.scores), r.fit, r.feasible, r.reasons) for r in d.ranking]


@SETTINGS
@given(profile=profiles, w=weights, order=st.permutations(OPTIONS))
def test_ranking_is_deterministic_for_the_same_input(profile: Profile, w: dict[str, float], order: list[str]) -> None:
    kb = knowledge_from_seeds()
    first = decide(profile, kb, w)
    again = decide(profile, kb, w)
    assert _ranking_view(first) == _ranking_view(again)
    assert first.recommended_option == again.recommended_option
    # nor does it depend on the order the plugins answered in
    by_option = {o.option: o for o in outcomes(profile, kb)}
    shuffled = decision.decide(profile, [by_option[k] for k in order], kb, w)
    assert _ranking_view(shuffled) == _ranking_view(first)
    # a fresh host (plugins loaded again) answers the same
    fresh = create_option_host()
    again_outcomes = decision.assess_all(fresh.options, lambda o: fresh.assess(o, profile, kb))
    assert _ranking_view(decision.decide(profile, again_outcomes, kb, w)) == _ranking_view(first)


# ---- Range arithmetic ------------------------------------------------------------------------

values = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
fractions = st.floats(min_value=0, max_value=1, allow_nan=False)


def ranges_of(element: st.SearchStrategy[float]) -> st.SearchStrategy[Range]:
    return st.lists(element, min_size=3, max_size=3).map(sorted).map(lambda v: Range(v[0], v[1], v[2]))


ranges = ranges_of(values)


def _ordered(r: Range) -> bool:
    return r.low <= r.expected <= r.high


@settings(max_examples=100, deadline=None)
@given(a=ranges, b=ranges, c=ranges_of(positive), k=values, f=ranges_of(fractions), cap=values)
def test_range_arithmetic_keeps_low_expected_high_in_order(
    a: Range, b: Range, c: Range, k: float, f: Range, cap: float
) -> None:
    results = {
        "a+b": a + b,
        "a+k": a + k,
        "k+a": k + a,
        "a*b": a * b,
        "a*k": a * k,
        "k*a": k * a,
        "a/c": a / c,
        "a/k'": a / (k + 1),
        "k/c": k / c,
        "1-f": f.complement(),
        "f*a": f * a,
        "cap": a.cap(cap),
        "floor": a.floor_at(cap),
        "ceil": a.ceil(),
        "mix": (a + b) * f.complement() / c,
        "sum": sum((a, b, c), Range.point(0)),
    }
    for name, r in results.items():
        assert _ordered(r), (name, r)
    # the ends combine like ends: the sum's low is the sum of the lows
    assert (a + b).low == a.low + b.low and (a + b).high == a.high + b.high
    assert (a / c).low == a.low / c.high and (a / c).high == a.high / c.low
    assert f.complement().low == 1 - f.high


@settings(max_examples=50, deadline=None)
@given(low=values, high=values, expected=st.none() | values)
def test_range_of_orders_or_refuses(low: float, high: float, expected: float | None) -> None:
    in_order = low <= high and (expected is None or low <= expected <= high)
    if in_order:
        r = Range.of(low, high, expected)
        assert _ordered(r)
        assert r.expected == ((low + high) / 2 if expected is None else expected)
    else:
        with pytest.raises(ValueError, match="out of order"):
            Range.of(low, high, expected)


def test_division_by_a_range_reaching_zero_is_refused() -> None:
    with pytest.raises(ZeroDivisionError):
        Range(1, 2, 3) / Range(0, 1, 2)
    with pytest.raises(ZeroDivisionError):
        Range(1, 2, 3) / 0


# ---- the scores mean something (methodology v2) ----------------------------------------------


@SETTINGS
@given(profile=profiles, w=weights)
def test_a_cheaper_option_never_gets_a_lower_cost_score(profile: Profile, w: dict[str, float]) -> None:
    result = decide(profile, knowledge_from_seeds(), w)
    priced = [r for r in result.ranking if r.outcome.assessment is not None]
    for a in priced:
        for b in priced:
            if decision.effective_cost(a.outcome.assessment) < decision.effective_cost(b.outcome.assessment):  # type: ignore[arg-type]
                assert a.scores["cost"] >= b.scores["cost"], (a.option, b.option)


@SETTINGS
@given(profile=profiles, w=weights)
def test_an_option_no_better_anywhere_never_ranks_above_one_that_dominates_it(
    profile: Profile, w: dict[str, float]
) -> None:
    ranking = decide(profile, knowledge_from_seeds(), w).ranking
    for a in ranking:
        for b in ranking:
            no_worse = all(a.scores[d] >= b.scores[d] for d in DIMENSIONS) and a.fit >= b.fit
            better = any(a.scores[d] > b.scores[d] for d in DIMENSIONS) or a.fit > b.fit
            if no_worse and better and (a.feasible or not b.feasible):
                assert a.rank < b.rank, (a.option, a.scores, a.fit, b.option, b.scores, b.fit)


@SETTINGS
@given(profile=profiles, w=weights)
def test_a_recommendation_dearer_than_the_cheapest_feasible_option_says_why_with_the_figure(
    profile: Profile, w: dict[str, float]
) -> None:
    result = decide(profile, knowledge_from_seeds(), w)
    feasible = [r for r in result.ranking if r.feasible and r.outcome.assessment is not None]
    if not feasible:
        return
    chosen = feasible[0]
    cheapest = min(decision.effective_cost(r.outcome.assessment) for r in feasible)  # type: ignore[arg-type]
    mine = decision.effective_cost(chosen.outcome.assessment)  # type: ignore[arg-type]
    explained = chosen.reasons[0].startswith("Recommended although it costs")
    assert explained == (mine > cheapest * (1 + decision.PREMIUM_TO_EXPLAIN))
    if explained:
        assert f"{(mine / cheapest - 1) * 100:.0f}%" in chosen.reasons[0]
