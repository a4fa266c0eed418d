"""Decision insights (methodology v1, docs/methodology.md "Insights"): break-even points,
one-at-a-time sensitivity and the changes that would alter the recommendation.

Everything here re-runs the option plugins — the same model that prices and ranks — on varied
profiles or knowledge; nothing is a separate formula that could drift from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.core import decision
from app.core.knowledge import Assumption, Knowledge, Price, SourceRef
from app.core.ranges import Range
from app.core.types import DIMENSIONS, HOURS_PER_YEAR, Assessment, Profile, RentalPlan

#: assess(option, profile, knowledge) -> Assessment (raises when the option cannot be assessed)
Assess = Callable[[str, Profile, Knowledge], Assessment]
ENDS = ("low", "expected", "high")
OWN, RENTED, PLATFORM = "self_built_cluster", "rented_gpu_instances", "ai_compute_platform"
UTILIZATION_GRID = tuple(i / 50 for i in range(1, 51))  # 0.02 … 1.00
BISECTION_STEPS = 20


@dataclass(frozen=True, slots=True)
class Variant:
    """An option under a rental plan (the plan matters only to options that rent)."""

    option: str
    rental_plan: RentalPlan = "on_demand"

    @property
    def label(self) -> str:
        return self.option if self.option != RENTED else f"{self.option}:{self.rental_plan}"


BREAK_EVEN_PAIRS = (
    (Variant(OWN), Variant(RENTED, "on_demand")),
    (Variant(OWN), Variant(RENTED, "reserved_1y")),
    (Variant(OWN), Variant(PLATFORM)),
    (Variant(RENTED, "on_demand"), Variant(PLATFORM)),
)


@dataclass(frozen=True, slots=True)
class Crossing:
    """Where ``first`` and ``second`` cost the same per useful GPU-hour, per range end."""

    first: str
    second: str
    #: per end (low, expected, high): the break-even utilization, or None when they never cross
    utilization: Mapping[str, float | None]
    #: per end: which one is cheaper just above the crossing, or throughout when they never cross
    cheaper_above: Mapping[str, str | None]


@dataclass(frozen=True, slots=True)
class Payback:
    alternative: str
    #: months until the owned cluster has paid for itself, per end; None: never
    months: Mapping[str, float | None]
    within_horizon: Mapping[str, bool]


@dataclass(frozen=True, slots=True)
class BreakEven:
    crossings: tuple[Crossing, ...]
    #: smallest cluster (GPUs) from which owning is cheapest at the profile's utilization, per end
    own_cheapest_from_gpus: Mapping[str, int | None]
    paybacks: tuple[Payback, ...]
    errors: Mapping[str, str]


class _Costs:
    """Cost per useful GPU-hour of a variant at a utilization, memoised."""

    def __init__(self, assess: Assess, profile: Profile, knowledge: Knowledge) -> None:
        self.assess, self.profile, self.knowledge = assess, profile, knowledge
        self.cache: dict[tuple[str, str, float, int], Assessment] = {}

    def assessment(self, v: Variant, utilization: float, gpus: int | None = None) -> Assessment:
        key = (v.option, v.rental_plan, utilization, gpus or self.profile.gpus)
        if key not in self.cache:
            p = dataclasses.replace(
                self.profile, utilization=utilization, rental_plan=v.rental_plan, gpus=gpus or self.profile.gpus
            )
            self.cache[key] = self.assess(v.option, p, self.knowledge)
        return self.cache[key]

    def per_hour(self, v: Variant, utilization: float, end: str) -> float:
        return float(getattr(self.assessment(v, utilization).cost.per_useful_gpu_hour, end))


def _crossing(
    costs: _Costs,
    a: Variant,
    b: Variant,
    ends: Sequence[str] = ENDS,
    grid: Sequence[float] = UTILIZATION_GRID,
    steps: int = BISECTION_STEPS,
) -> Crossing:
    """Scan ``grid`` for the first sign change of the cost difference, then bisect it."""
    utilization: dict[str, float | None] = {}
    cheaper: dict[str, str | None] = {}
    for end in ends:

        def diff(u: float, end: str = end) -> float:
            return costs.per_hour(a, u, end) - costs.per_hour(b, u, end)

        found: float | None = None
        prev_u, prev_d = grid[0], diff(grid[0])
        for u in grid[1:]:
            d = diff(u)
            if (prev_d > 0) != (d > 0) and abs(prev_d - d) > 1e-12:
                lo, hi = prev_u, u
                for _ in range(steps):
                    mid = (lo + hi) / 2
                    if (diff(mid) > 0) == (prev_d > 0):
                        lo = mid
                    else:
                        hi = mid
                found, prev_d = round((lo + hi) / 2, 4), d
                break
            prev_u, prev_d = u, d
        utilization[end] = found
        last = diff(1.0)
        cheaper[end] = None if abs(last) < 1e-9 else (a.label if last < 0 else b.label)
    return Crossing(a.label, b.label, utilization, cheaper)


def _own_cheapest_from(costs: _Costs, others: Sequence[Variant], gpus_per_server: int) -> dict[str, int | None]:
    """Smallest cluster at the profile's utilization from which owning stays cheapest (per end)."""
    u = costs.profile.utilization
    sizes = [*range(1, 129), *range(144, 4097, 16)]  # servers
    result: dict[str, int | None] = {}
    for end in ENDS:
        first: int | None = None
        for servers in sizes:
            gpus = servers * gpus_per_server
            own = float(getattr(costs.assessment(Variant(OWN), u, gpus).cost.per_useful_gpu_hour, end))
            rest = min(float(getattr(costs.assessment(v, u, gpus).cost.per_useful_gpu_hour, end)) for v in others)
            first = (first or gpus) if own < rest else None  # must stay cheapest from there on
        result[end] = first
    return result


def _payback(own: Assessment, alt: Assessment, alt_label: str, horizon_years: float) -> Payback:
    """Months until the upfront outlay is recovered by paying less than the alternative each year.

    ``months = 12 × upfront ÷ (alternative's annual cost − own running cost)``; running costs
    are the breakdown lines without upfront (ops, power). Best case: own low, alternative high.
    """
    running = sum((li.annual for li in own.cost.breakdown if li.upfront.high == 0), Range.point(0))
    up, alt_annual = own.cost.upfront, alt.cost.annual
    pairs = {
        "low": (up.low, alt_annual.high - running.low),
        "expected": (up.expected, alt_annual.expected - running.expected),
        "high": (up.high, alt_annual.low - running.high),
    }
    months = {e: (12 * u / saving if saving > 0 else None) for e, (u, saving) in pairs.items()}
    within = {e: m is not None and m <= horizon_years * 12 for e, m in months.items()}
    return Payback(alt_label, {e: None if m is None else round(m, 1) for e, m in months.items()}, within)


def break_even(assess: Assess, profile: Profile, knowledge: Knowledge, options: Sequence[str]) -> BreakEven:
    costs = _Costs(assess, profile, knowledge)
    errors: dict[str, str] = {}
    usable = []
    for option in options:
        try:
            costs.assessment(Variant(option), profile.utilization)
            usable.append(option)
        except Exception as exc:
            errors[option] = f"{type(exc).__name__}: {exc}"
    crossings = tuple(_crossing(costs, a, b) for a, b in BREAK_EVEN_PAIRS if {a.option, b.option} <= set(usable))
    cheapest_from: dict[str, int | None] = dict.fromkeys(ENDS)
    paybacks: list[Payback] = []
    if OWN in usable:
        others = [Variant(o) for o in usable if o != OWN]
        if others:
            server = knowledge.server_for(profile.gpu_model)
            cheapest_from = _own_cheapest_from(costs, others, server.gpus_per_server)
        own = costs.assessment(Variant(OWN), profile.utilization)
        for v in [Variant(RENTED, "on_demand"), Variant(RENTED, "reserved_1y"), Variant(PLATFORM)]:
            if v.option in usable:
                alt = costs.assessment(v, profile.utilization)
                paybacks.append(_payback(own, alt, v.label, profile.horizon_years))
    return BreakEven(crossings, cheapest_from, tuple(paybacks), errors)


def own_vs_rent_sentence(assess: Assess, profile: Profile, knowledge: Knowledge) -> str | None:
    """The recommendation's one-line summary of the own-versus-rent break-even, if both assess."""
    own, rent = Variant(OWN), Variant(RENTED, "on_demand")
    try:  # bisection over the whole range (one crossing at most): ~30 assessments, not a grid scan
        crossing = _crossing(_Costs(assess, profile, knowledge), own, rent, ("expected",), (0.01, 1.0), steps=10)
    except Exception:
        return None
    u, cheaper = crossing.utilization["expected"], crossing.cheaper_above["expected"]
    if u is not None and cheaper == own.label:
        return (
            f"With {profile.gpus:,} GPUs, owning becomes cheaper than renting on demand above "
            f"{u * 100:.0f}% utilization."
        )
    if u is None and cheaper == rent.label:
        return f"With {profile.gpus:,} GPUs, owning costs more than renting on demand at any utilization."
    if u is None and cheaper == own.label:
        return f"With {profile.gpus:,} GPUs, owning costs less than renting on demand at any utilization."
    return None


# ---- sensitivity ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Effect:
    cost_low: float
    cost_high: float
    score_low: float
    score_high: float


@dataclass(frozen=True, slots=True)
class InputSensitivity:
    kind: str  # "assumption" | "price" | "profile"
    ref: str
    label: str
    unit: str
    low: float
    high: float
    effects: Mapping[str, Effect]
    #: largest score change of any option across the input's range
    swing: float


@dataclass(frozen=True, slots=True)
class WeightChange:
    dimension: str
    #: share of the total weight moved onto ``dimension`` (0–1)
    shift: float
    weights: Mapping[str, float]
    recommended_option: str


@dataclass(frozen=True, slots=True)
class UtilizationChange:
    utilization: float
    recommended_option: str


@dataclass(frozen=True, slots=True)
class Sensitivity:
    recommended_option: str | None
    baseline: Mapping[str, tuple[float, float]]  # option -> (cost per useful GPU-hour, score)
    inputs: tuple[InputSensitivity, ...]
    weight_change: WeightChange | None
    utilization_change: UtilizationChange | None


def pointwise(knowledge: Knowledge) -> Knowledge:
    """The knowledge base with every range collapsed to its expected value."""
    return dataclasses.replace(
        knowledge,
        prices=tuple(dataclasses.replace(p, value=Range.point(p.value.expected)) for p in knowledge.prices),
        assumptions={
            k: dataclasses.replace(a, value=Range.point(a.value.expected)) for k, a in knowledge.assumptions.items()
        },
    )


def _with_value(knowledge: Knowledge, row: Price | Assumption, value: float) -> Knowledge:
    if isinstance(row, Price):
        return dataclasses.replace(
            knowledge,
            prices=tuple(
                dataclasses.replace(p, value=Range.point(value)) if p.id == row.id else p for p in knowledge.prices
            ),
        )
    return dataclasses.replace(
        knowledge,
        assumptions={
            **knowledge.assumptions,
            (row.option, row.key): dataclasses.replace(row, value=Range.point(value)),
        },
    )


PROFILE_SWEEPS: Mapping[str, tuple[float, float]] = {
    # field: (factor down, factor up) — documented in docs/methodology.md
    "utilization": (0.5, 1.5),
    "gpus": (0.5, 2.0),
    "horizon_years": (0.5, 2.0),
    "team_size": (0.5, 2.0),
    "start_within_days": (0.5, 2.0),
}


def _profile_at(profile: Profile, field: str, factor: float) -> Profile:
    value = getattr(profile, field) * factor
    if field == "utilization":
        value = min(1.0, max(0.01, value))
    elif field in ("gpus", "team_size"):
        value = max(1, round(value))
    elif field == "start_within_days":
        value = max(0, round(value))
    return dataclasses.replace(profile, **{field: value})


class _Decider:
    def __init__(self, assess: Assess, options: Sequence[str], weights: Mapping[str, float]) -> None:
        self.assess, self.options, self.weights = assess, options, weights

    def __call__(self, profile: Profile, knowledge: Knowledge) -> decision.Decision:
        outcomes = decision.assess_all(self.options, lambda o: self.assess(o, profile, knowledge))
        return decision.decide(profile, outcomes, knowledge, self.weights)


def _summary(d: decision.Decision) -> dict[str, tuple[float, float]]:
    return {
        r.option: (r.outcome.assessment.cost.per_useful_gpu_hour.expected if r.outcome.assessment else 0.0, r.raw_score)
        for r in d.ranking
    }


def _refs(d: decision.Decision) -> list[SourceRef]:
    refs: list[SourceRef] = []
    for r in d.ranking:
        a = r.outcome.assessment
        if a is None:
            continue
        for li in a.cost.breakdown:
            refs.extend(li.sources)
        refs.extend(a.efficiency.sources + a.stability.sources + a.usability.sources)
    return list(dict.fromkeys(refs))


def sensitivity(
    assess: Assess, profile: Profile, knowledge: Knowledge, options: Sequence[str], weights: Mapping[str, float]
) -> Sensitivity:
    decide = _Decider(assess, options, decision.normalise_weights(weights))
    base_kb = pointwise(knowledge)
    base = decide(profile, base_kb)
    baseline = _summary(base)
    rows: dict[str, Price | Assumption] = {}
    by_price_id = {str(p.id): p for p in knowledge.prices}
    by_assumption = {f"{a.option}/{a.key}": a for a in knowledge.assumptions.values()}
    for source in _refs(base):
        row = by_price_id.get(source.ref) if source.table == "price_items" else by_assumption.get(source.ref)
        if row is not None and row.value.low < row.value.high:
            rows[f"{source.table}:{source.ref}"] = row

    def effects(low: decision.Decision, high: decision.Decision) -> dict[str, Effect]:
        lo, hi = _summary(low), _summary(high)
        return {
            o: Effect(round(lo[o][0], 4), round(hi[o][0], 4), round(lo[o][1], 2), round(hi[o][1], 2))
            for o in baseline
            if o in lo and o in hi
        }

    def swing(eff: Mapping[str, Effect]) -> float:
        return round(
            max(
                (max(abs(e.score_low - baseline[o][1]), abs(e.score_high - baseline[o][1])) for o, e in eff.items()),
                default=0.0,
            ),
            3,
        )

    results: list[InputSensitivity] = []
    for ref, row in rows.items():
        eff = effects(
            decide(profile, _with_value(base_kb, row, row.value.low)),
            decide(profile, _with_value(base_kb, row, row.value.high)),
        )
        kind = "price" if isinstance(row, Price) else "assumption"
        label = f"{row.option} {row.item}" if isinstance(row, Price) else f"{row.option} {row.key}"
        results.append(InputSensitivity(kind, ref, label, row.unit, row.value.low, row.value.high, eff, swing(eff)))
    for field, (down, up) in PROFILE_SWEEPS.items():
        p_low, p_high = _profile_at(profile, field, down), _profile_at(profile, field, up)
        eff = effects(decide(p_low, base_kb), decide(p_high, base_kb))
        results.append(
            InputSensitivity(
                "profile",
                f"profile.{field}",
                field,
                "profile",
                float(getattr(p_low, field)),
                float(getattr(p_high, field)),
                eff,
                swing(eff),
            )
        )
    results.sort(key=lambda s: (-s.swing, s.ref))
    return Sensitivity(
        base.recommended_option,
        baseline,
        tuple(results),
        _weight_change(decide, profile, base_kb, base),
        _utilization_change(decide, profile, base_kb, base),
    )


def _weight_change(
    decide: _Decider, profile: Profile, knowledge: Knowledge, base: decision.Decision
) -> WeightChange | None:
    """The smallest shift of weight onto one dimension that puts another feasible option first.

    Moving a share ``t`` of the weight onto dimension ``d`` gives ``w' = (1 − t)·w + t·e_d``; each
    option's total is linear in ``t``, so the crossing with the leader is solved exactly.
    """
    feasible = [r for r in base.ranking if r.feasible and r.outcome.assessment is not None]
    if len(feasible) < 2:
        return None
    leader = feasible[0]

    def slope(r: decision.Ranked, d: str) -> float:
        weighted = r.raw_score - r.fit  # Σ w·score before the fit points
        return r.scores[d] - weighted

    candidates = []
    for challenger in feasible[1:]:
        gap_now = leader.raw_score - challenger.raw_score  # ≥ 0
        for d in DIMENSIONS:
            closing = slope(leader, d) - slope(challenger, d)  # gap(t) = gap_now + t·closing
            if closing < 0:
                candidates.append((gap_now / -closing, d))
    weights = decide.weights
    for t, d in sorted(candidates):
        t = round(t + 0.0005, 4)  # just past the tie, where the order really changes
        if not 0 < t < 1:
            continue
        new = {k: (1 - t) * w + (t if k == d else 0.0) for k, w in weights.items()}
        shifted = decision.decide(profile, [r.outcome for r in base.ranking], knowledge, new)
        if shifted.recommended_option not in (None, base.recommended_option):
            return WeightChange(d, t, {k: round(v, 4) for k, v in new.items()}, shifted.recommended_option)
    return None


def _utilization_change(
    decide: _Decider, profile: Profile, knowledge: Knowledge, base: decision.Decision
) -> UtilizationChange | None:
    """The nearest utilization (in steps of 0.01) at which another option is recommended."""
    current = base.recommended_option
    steps = [round(profile.utilization + sign * i / 100, 2) for i in range(1, 100) for sign in (-1, 1)]
    for u in steps:
        if 0 < u <= 1:
            d = decide(dataclasses.replace(profile, utilization=u), knowledge)
            if d.recommended_option != current and d.recommended_option is not None:
                return UtilizationChange(u, d.recommended_option)
    return None


__all__ = ["HOURS_PER_YEAR", "BreakEven", "Sensitivity", "break_even", "own_vs_rent_sentence", "sensitivity"]


# ---- uncertainty ------------------------------------------------------------------------------


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


def sample_knowledge(knowledge: Knowledge, draws: int, rng: np.random.Generator) -> Knowledge:
    """Each ranged row becomes ``draws`` triangular samples (mode = expected); points stay points.

    A sampled value is a Range whose three ends are the same array: the plugins' range arithmetic
    then computes every draw at once, and a row used twice in a model uses the same draw twice.
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
    return dataclasses.replace(knowledge, prices=prices, assumptions=assumptions)


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


def _percentiles(values: np.ndarray) -> dict[str, float]:
    p10, p50, p90 = np.percentile(values, (10, 50, 90))
    return {"p10": round(float(p10), 2), "p50": round(float(p50), 2), "p90": round(float(p90), 2)}


def uncertainty(
    assess: Assess,
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
    weights = decision.normalise_weights(weights)
    if base is None:
        outcomes = decision.assess_all(options, lambda o: assess(o, profile, knowledge))
        base = decision.decide(profile, outcomes, knowledge, weights)
    sampled = _samples(knowledge, draws, seed)
    errors: dict[str, str] = {}
    per_option: dict[str, Assessment] = {}
    for option in sorted(options):
        try:
            per_option[option] = assess(option, profile, sampled)
        except Exception as exc:
            errors[option] = f"{type(exc).__name__}: {exc}"
    if not per_option:
        return Uncertainty(draws, seed, {}, errors)

    def arr(x: float | np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(x, dtype=float), (draws,))

    names = list(per_option)
    per_hour = np.stack([arr(per_option[o].cost.per_useful_gpu_hour.expected) for o in names])
    cheapest = per_hour.min(axis=0)
    fit = {r.option: r.fit for r in base.ranking}
    feasible = {r.option: r.feasible for r in base.ranking}
    totals = np.stack(
        [
            weights["cost"] * 100 * cheapest / arr(per_option[o].cost.per_useful_gpu_hour.expected)
            + weights["efficiency"] * 100 * arr(per_option[o].efficiency.productive_share.expected)
            + weights["stability"] * 100 * arr(per_option[o].stability.goodput.expected)
            + weights["usability"] * 100 * arr(per_option[o].usability.model_focus_share.expected)
            + fit.get(o, 0.0)
            for o in names
        ]
    )
    # infeasible options rank after feasible ones, exactly as in the ranking
    totals = totals - np.array([[0.0 if feasible.get(o, False) else 1e6] for o in names])
    first = np.argmax(totals, axis=0)  # ties go to the earlier key, as in the ranking
    result = {}
    for i, o in enumerate(names):
        annual, total = arr(per_option[o].cost.annual.expected), arr(per_option[o].cost.total.expected)
        result[o] = OptionUncertainty(
            _percentiles(annual),
            _percentiles(total),
            round(float(np.mean(first == i)), 4),
        )
    return Uncertainty(draws, seed, result, errors)
