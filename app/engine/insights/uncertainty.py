"""Monte Carlo over the knowledge base's ranges (docs/methodology.md "Uncertainty"): cost
percentiles and the probability that each option ranks first, scored as the ranking scores."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.columns import EXPECTED
from app.core.errors import ISOLATED, failure
from app.core.kernel import Quote
from app.core.knowledge import Knowledge
from app.core.ranges import Range, triangular_mode
from app.core.types import Profile
from app.engine import decision, scoring
from app.engine.insights.common import Model


@dataclass(frozen=True, slots=True)
class OptionUncertainty:
    annual_cost: Mapping[str, float]  # p10, p50, p90
    total_cost: Mapping[str, float]
    #: share of the draws in which the option is feasible and ranks first (0 for an infeasible option)
    probability_first: float
    #: the option's total score averaged over the draws (what ``app.engine.insights.story`` compares)
    mean_score: float = 0.0


@dataclass(frozen=True, slots=True)
class Uncertainty:
    draws: int
    seed: int
    options: Mapping[str, OptionUncertainty]
    errors: Mapping[str, str]
    #: per option that could not be assessed: ``app.core.errors`` code (``no-offer``, ``option-failed`` …)
    error_codes: Mapping[str, str] = dataclasses.field(default_factory=dict)


def sample_knowledge(knowledge: Knowledge, draws: int, rng: np.random.Generator) -> Knowledge:
    """Each ranged row becomes ``draws`` samples of its triangular distribution; points stay points.

    A row's Range holds the triangle's ends and its mean (``Range.triangular``): the mode sampled is
    the one that mean implies, ``3 × expected − low − high`` — the source's most likely figure (the
    row's ``mode``) for a row as loaded — so the draws average to the ``expected`` the headline uses.
    A sampled value is a Range whose three ends are the same array: the kernels then compute every
    draw at once, and a row used twice in a model uses the same draw twice.
    """

    def sample(r: Range) -> Range:
        if r.low == r.high:
            return r
        values = rng.triangular(r.low, triangular_mode(r.low, r.expected, r.high), r.high, size=draws)
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
    found: np.ndarray = percentiles_of([values])[0]
    return found


@functools.lru_cache(maxsize=8)
def _order_statistics(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where P10, P50 and P90 of ``n`` values lie between two order statistics (``np.percentile``'s
    virtual indexes): the lower and upper ones, the weight of the upper, and every index to partition at."""
    virtual = (n - 1) * QUANTILES
    below = np.floor(virtual)
    above = below + 1
    last = virtual >= n - 1  # at or past the largest: the largest
    below[last] = -1
    above[last] = -1
    below_i, above_i = below.astype(np.intp), above.astype(np.intp)
    kth = np.unique(np.concatenate(([0, -1], below_i, above_i)))
    found = (below_i, above_i, virtual - below, kth)
    for shared in found:  # kept for every later sample of ``n`` draws: never written
        shared.flags.writeable = False
    return found


def percentiles_of(samples: Sequence[np.ndarray]) -> np.ndarray:
    """``percentiles`` of several samples of one length, one row each: each sample partitioned on its own
    (no copy of them all at once: a Monte Carlo answer's samples are large), the interpolation done once."""
    below_i, above_i, gamma, kth = _order_statistics(samples[0].shape[0])
    a = np.empty((len(samples), 3))
    b = np.empty((len(samples), 3))
    largest = np.empty(len(samples))
    for i, sample in enumerate(samples):
        ordered = np.partition(np.asarray(sample, dtype=float), kth)
        a[i], b[i], largest[i] = ordered[below_i], ordered[above_i], ordered[-1]
    diff = b - a
    found: np.ndarray = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=found, where=gamma >= 0.5)
    found[np.isnan(largest)] = np.nan  # a NaN sorts last: every percentile of such draws is NaN
    return found


def _percentiles(row: Sequence[float]) -> dict[str, float]:
    p10, p50, p90 = row
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
    cheapest option); fit points come from the deterministic assessment, since the scenario rules
    test the profile and range ends, not draws. An option is first in a draw only where it is
    feasible: feasible in the deterministic assessment and its offer of that draw breaking no hard
    constraint; a draw in which no option is feasible has no first, so an infeasible option's
    P(first) is 0. ``base`` is that deterministic decision when the caller has already made it.
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
        if isinstance(x, np.ndarray) and x.shape == (draws,) and x.dtype == float:
            seen = x.view()  # a figure of the draws already: read-only, as broadcasting would give it
            seen.flags.writeable = False
            return seen
        return np.broadcast_to(np.asarray(x, dtype=float), (draws,))

    names = list(per_option)  # sorted by key
    # the cost score compares cost per effective GPU-hour, as the ranking's does (``decision.effective_cost``)
    per_hour = {o: arr(per_option[o].effective.expected) for o in names}
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
    usable = [
        np.full(draws, feasible.get(o, False)) & ~np.broadcast_to(np.asarray(per_option[o].broken(), bool), (draws,))
        for o in names
    ]
    first = np.where(np.any(np.stack(usable), axis=0), scoring.first(names, usable, totals), -1)
    # every option's annual and total cost, interpolated at once: row 2i its annual, 2i + 1 its total
    figures = [arr(getattr(per_option[o].cost, figure).expected) for o in names for figure in ("annual", "total")]
    shown = percentiles_of(figures).tolist()
    result = {}
    for i, o in enumerate(names):
        result[o] = OptionUncertainty(
            _percentiles(shown[2 * i]),
            _percentiles(shown[2 * i + 1]),
            round(float(np.mean(first == i)), 4),
            round(float(np.mean(arr(totals[i]))), 3),
        )
    return Uncertainty(draws, seed, result, errors, codes)
