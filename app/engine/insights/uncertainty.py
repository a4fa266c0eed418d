"""Monte Carlo over the knowledge base's ranges (docs/methodology.md "Uncertainty"): cost
percentiles and the probability that each option ranks first, scored as the ranking scores."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.engine import decision, scoring
from app.engine.insights.common import Model
from app.sdk.columns import EXPECTED
from app.sdk.errors import ISOLATED, failure
from app.sdk.kernel import Quote
from app.sdk.knowledge import Knowledge
from app.sdk.ranges import Range
from app.sdk.types import Profile


@dataclass(frozen=True, slots=True)
class OptionUncertainty:
    annual_cost: Mapping[str, float]  # p10, p50, p90
    total_cost: Mapping[str, float]
    probability_first: float


@dataclass(frozen=True, slots=True)
class Uncertainty:
    draws: int
    seed: int
    options: Mapping[str, OptionUncertainty]
    errors: Mapping[str, str]
    #: per option that could not be assessed: ``app.sdk.errors`` code (``no-offer``, ``option-failed`` …)
    error_codes: Mapping[str, str] = dataclasses.field(default_factory=dict)


def sample_knowledge(knowledge: Knowledge, draws: int, rng: np.random.Generator) -> Knowledge:
    """Each ranged row becomes ``draws`` triangular samples (mode = expected); points stay points.

    A sampled value is a Range whose three ends are the same array: the kernels then compute every
    draw at once, and a row used twice in a model uses the same draw twice.
    """

    def sample(r: Range) -> Range:
        if r.low == r.high:
            return r
        values = rng.triangular(r.low, r.expected, r.high, size=draws)
        return Range(values, values, values)  # type: ignore[arg-type]

    prices = tuple(dataclasses.replace(p, value=sample(p.value)) for p in sorted(knowledge.prices, key=lambda p: p.id))
    assumptions = {
        k: dataclasses.replace(knowledge.assumptions[k], value=sample(knowledge.assumptions[k].value))
        for k in sorted(knowledge.assumptions)
    }
    return dataclasses.replace(knowledge, prices=prices, assumptions=assumptions, draws=draws)


MAX_KEPT_SAMPLES = 4


def _samples(knowledge: Knowledge, draws: int, seed: int) -> Knowledge:
    """The samples depend on the snapshot, the draws and the seed only: recommendations (always
    1,000 draws, seed 0) draw them once per knowledge version."""
    key = ("samples", draws, seed)
    found = knowledge.derived.get(key)
    if found is None:
        found = sample_knowledge(knowledge, draws, np.random.default_rng(seed))
        if sum(1 for k in knowledge.derived if k[0] == "samples") < MAX_KEPT_SAMPLES:
            knowledge.derived[key] = found
    return found


#: the percentiles an answer gives, as fractions (``np.percentile`` divides its ``q`` by 100 the same way)
QUANTILES = np.true_divide(np.asarray((10, 50, 90)), 100)


def percentiles(values: np.ndarray) -> np.ndarray:
    """P10, P50 and P90 of ``values`` exactly as ``np.percentile(values, (10, 50, 90))`` computes them
    (linear interpolation between order statistics, NumPy's ``_lerp``), from one partition around the
    six order statistics they need, without NumPy's general machinery (a Monte Carlo answer takes six)."""
    n = values.shape[0]
    virtual = (n - 1) * QUANTILES
    below = np.floor(virtual)
    above = below + 1
    last = virtual >= n - 1  # at or past the largest: the largest
    below[last] = -1
    above[last] = -1
    below_i, above_i = below.astype(np.intp), above.astype(np.intp)
    ordered = np.partition(values, np.unique(np.concatenate(([0, -1], below_i, above_i))))
    a, b = ordered[below_i], ordered[above_i]
    gamma = virtual - below
    diff = b - a
    found: np.ndarray = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=found, where=gamma >= 0.5)
    if np.isnan(ordered[-1]):  # a NaN sorts last: every percentile of such draws is NaN
        found[:] = np.nan
    return found


def _percentiles(values: np.ndarray) -> dict[str, float]:
    p10, p50, p90 = percentiles(np.ascontiguousarray(values, dtype=float)).tolist()
    return {"p10": round(p10, 2), "p50": round(p50, 2), "p90": round(p90, 2)}


def uncertainty(
    model: Model,
    profile: Profile,
    knowledge: Knowledge,
    options: Sequence[str],
    weights: Mapping[str, float],
    *,
    draws: int = 10_000,
    seed: int = 0,
    base: decision.Decision | None = None,
) -> Uncertainty:
    """Monte Carlo over every range of the knowledge base (triangular, seeded, vectorised).

    Each draw scores the options exactly as ``decision`` does (cost relative to that draw's
    cheapest option); fit points and feasibility come from the deterministic assessment, since
    the scenario rules test the profile and range ends, not draws. ``base`` is that deterministic
    decision when the caller has already made it.
    """
    weights = scoring.normalise_weights(weights)
    if base is None:
        outcomes = decision.assess_all(options, lambda o: model.assess(o, profile, knowledge))
        base = decision.decide(profile, outcomes, knowledge, weights)
    sampled = _samples(knowledge, draws, seed)
    errors: dict[str, str] = {}
    codes: dict[str, str] = {}
    per_option: dict[str, Quote] = {}
    for option in sorted(options):
        try:
            per_option[option] = model.choose(option, profile, sampled, EXPECTED)[0]
        except ISOLATED as exc:
            codes[option], errors[option] = failure(exc)
    if not per_option:
        return Uncertainty(draws, seed, {}, errors, codes)

    def arr(x: float | np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(x, dtype=float), (draws,))

    names = list(per_option)  # sorted by key
    per_hour = {o: arr(per_option[o].cost.per_useful_gpu_hour.expected) for o in names}
    cheapest = np.min(np.stack(list(per_hour.values())), axis=0)
    fit = {r.option: r.fit for r in base.ranking}
    feasible = {r.option: r.feasible for r in base.ranking}
    totals = [
        scoring.total(
            weights,
            scoring.dimension_scores(
                per_hour=per_hour[o],
                cheapest=cheapest,
                productive=arr(per_option[o].efficiency.productive_share.expected),
                goodput=arr(per_option[o].stability.goodput.expected),
                focus=arr(per_option[o].usability.model_focus_share.expected),
            ),
            fit.get(o, 0.0),
        )
        for o in names
    ]
    first = scoring.first(names, [np.full(draws, feasible.get(o, False)) for o in names], totals)
    result = {}
    for i, o in enumerate(names):
        annual, total = arr(per_option[o].cost.annual.expected), arr(per_option[o].cost.total.expected)
        result[o] = OptionUncertainty(
            _percentiles(annual),
            _percentiles(total),
            round(float(np.mean(first == i)), 4),
        )
    return Uncertainty(draws, seed, result, errors, codes)
