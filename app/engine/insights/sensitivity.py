"""One-at-a-time sensitivity (docs/methodology.md "Sensitivity"): every knowledge row an assessment
used moved across its range, every profile field moved by a factor, and the smallest changes of
weights and of utilization that change the recommendation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.core.knowledge import Assumption, Knowledge, Price, SourceRef
from app.core.ranges import Range
from app.core.types import Profile
from app.core.vocab import DIMENSIONS
from app.engine import decision, scoring
from app.engine.insights.common import Decider, Model


@dataclass(frozen=True, slots=True)
class Effect:
    """One option's cost per useful GPU-hour and score with an input at the low and at the high end of its range."""

    cost_low: float
    cost_high: float
    score_low: float
    score_high: float


@dataclass(frozen=True, slots=True)
class InputSensitivity:
    """How each option moves while one input (a knowledge row or a profile field) goes from its low to its
    high end, the others at their expected values."""

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
    """The smallest shift of weight onto one dimension that recommends another option."""

    dimension: str
    #: share of the total weight moved onto ``dimension`` (0–1)
    shift: float
    weights: Mapping[str, float]
    recommended_option: str


@dataclass(frozen=True, slots=True)
class UtilizationChange:
    """The nearest utilization at which another option is recommended."""

    utilization: float
    recommended_option: str


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """The recommendation at the expected values, and what moves it: each input across its range, the weights,
    the utilization."""

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
    model: Model, profile: Profile, knowledge: Knowledge, options: Sequence[str], weights: Mapping[str, float]
) -> Sensitivity:
    decide = Decider(model, options, scoring.normalise_weights(weights))
    base_kb = pointwise(knowledge)
    base = decide(profile, base_kb)
    baseline = _summary(base)
    rows: dict[str, Price | Assumption] = {}
    # a price row by how answers cite it: the list's (price_items) or an organisation's private book's (org_prices)
    by_price = {(r.table, r.ref): p for p in knowledge.prices for r in (p.ref,)}
    by_assumption = {f"{a.option}/{a.key}": a for a in knowledge.assumptions.values()}
    for source in _refs(base):
        row = (
            by_assumption.get(source.ref) if source.table == "assumptions" else by_price.get((source.table, source.ref))
        )
        if row is not None and row.value.low < row.value.high:
            rows[f"{source.table}:{source.ref}"] = row

    def effects(low: decision.Decision, high: decision.Decision) -> dict[str, Effect]:
        lo, hi = _summary(low), _summary(high)
        return {
            o: Effect(*(round(float(x), n) for x, n in ((lo[o][0], 4), (hi[o][0], 4), (lo[o][1], 2), (hi[o][1], 2))))
            for o in baseline
            if o in lo and o in hi
        }

    def swing(eff: Mapping[str, Effect]) -> float:
        gaps = (max(abs(e.score_low - baseline[o][1]), abs(e.score_high - baseline[o][1])) for o, e in eff.items())
        return round(float(max(gaps, default=0.0)), 3)

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
        if getattr(profile, field) is None:  # a constraint the profile does not set has no range to move
            continue
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
    decide: Decider, profile: Profile, knowledge: Knowledge, base: decision.Decision
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
    decide: Decider, profile: Profile, knowledge: Knowledge, base: decision.Decision
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
