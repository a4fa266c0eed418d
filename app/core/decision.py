"""From assessments to a ranked, explained decision for one profile (docs/methodology.md "Scores");
the scores and the order come from ``app.core.scoring``, as for batches and Monte Carlo runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.core import rules as rule_engine
from app.core import scoring
from app.core.errors import MissingKnowledge
from app.core.knowledge import Knowledge
from app.core.ranges import holds_anywhere
from app.core.text import num, pct, span
from app.core.types import Assessment, Profile
from app.core.vocab import DIMENSIONS


@dataclass(frozen=True, slots=True)
class AppliedRule:
    key: str
    effect: str
    points: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """One option's assessment, or why it could not be made."""

    option: str
    assessment: Assessment | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    option: str
    rank: int
    score: float
    raw_score: float
    scores: Mapping[str, float]
    fit: float
    feasible: bool
    reasons: tuple[str, ...]
    rules: tuple[AppliedRule, ...]
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Decision:
    recommended_option: str | None
    weights: Mapping[str, float]
    ranking: tuple[Ranked, ...]


def assess_all(options: Iterable[str], assess: Callable[[str], Assessment]) -> list[Outcome]:
    """Assess every option, isolating failures: a plugin that raises marks only its own option."""
    outcomes = []
    for option in options:
        try:
            outcomes.append(Outcome(option, assess(option)))
        except MissingKnowledge as exc:
            outcomes.append(Outcome(option, None, str(exc)))
        except Exception as exc:  # a plugin's bug must not take the other options down
            outcomes.append(Outcome(option, None, f"{type(exc).__name__}: {exc}"))
    return outcomes


def default_weights(knowledge: Knowledge) -> dict[str, float]:
    """The knowledge base's ``weight_<dimension>`` assumptions (read once per snapshot; a copy each time)."""
    found: dict[str, float] | None = knowledge.derived.get(("default_weights",))
    if found is None:
        found = {d: knowledge.assumption("*", f"weight_{d}").value.expected for d in DIMENSIONS}
        knowledge.derived[("default_weights",)] = found
    return dict(found)


def effective_cost(assessment: Assessment) -> Any:
    """What the cost score compares: the expected cost per effective GPU-hour (the one money scale)."""
    c = assessment.cost
    return (c.per_effective_gpu_hour or c.per_useful_gpu_hour).expected


def broken(assessment: Assessment) -> list[str]:
    """The reasons of the hard constraints the option's offer breaks."""
    return [v.reason for v in assessment.violations if holds_anywhere(v.violated)]


def dimension_scores(assessment: Assessment, cheapest: float) -> dict[str, float]:
    """The option's four dimension scores, the cheapest option's cost per effective GPU-hour given."""
    return scoring.dimension_scores(
        per_hour=effective_cost(assessment),
        cheapest=cheapest,
        productive=assessment.efficiency.productive_share.expected,
        goodput=assessment.stability.goodput.expected,
        focus=assessment.usability.model_focus_share.expected,
    )


@dataclass(frozen=True, slots=True)
class _Scored:
    outcome: Outcome
    feasible: bool
    raw: float
    scores: dict[str, float]
    fit: float
    reasons: tuple[str, ...]
    rules: tuple[AppliedRule, ...]


def decide(profile: Profile, outcomes: list[Outcome], knowledge: Knowledge, weights: Mapping[str, float]) -> Decision:
    weights = scoring.normalise_weights(weights)
    assessed = [o.assessment for o in outcomes if o.assessment is not None]
    cheapest = min((effective_cost(a) for a in assessed), default=0.0)
    rows: list[_Scored] = []
    for outcome in outcomes:
        a = outcome.assessment
        if a is None:
            reasons: tuple[str, ...] = (f"Could not be assessed: {outcome.error}",)
            rows.append(_Scored(outcome, False, 0.0, dict.fromkeys(DIMENSIONS, 0.0), 0.0, reasons, ()))
            continue
        scores = dimension_scores(a, cheapest)
        applied = _apply_rules(profile, a, knowledge)
        fit = sum((r.points or 0.0) * (1 if r.effect == "bonus" else -1) for r in applied if r.effect != "infeasible")
        feasible = not any(r.effect == "infeasible" for r in applied) and not broken(a)
        raw = scoring.total(weights, scores, fit)
        rows.append(
            _Scored(outcome, feasible, raw, scores, fit, _reasons(profile, a, cheapest, applied), tuple(applied))
        )

    order = scoring.ranked([(r.outcome.option, r.feasible, r.raw, sum(r.scores.values()) + r.fit) for r in rows])
    ranking = tuple(
        Ranked(
            option=r.outcome.option,
            rank=rank,
            score=scoring.shown(r.raw),
            raw_score=round(float(r.raw), 3),
            scores={d: scoring.shown(s) for d, s in r.scores.items()},
            fit=round(float(r.fit), 1),
            feasible=r.feasible,
            reasons=r.reasons,
            rules=r.rules,
            outcome=r.outcome,
        )
        for rank, r in enumerate((rows[i] for i in order), start=1)
    )
    recommended = next((r for r in ranking if r.feasible), None)
    if recommended is not None:
        ranking = tuple(_explain_premium(r, ranking, profile) if r is recommended else r for r in ranking)
    return Decision(None if recommended is None else recommended.option, weights, ranking)


#: a recommendation dearer than this share above the cheapest feasible option says why
PREMIUM_TO_EXPLAIN = 0.20


def _explain_premium(chosen: Ranked, ranking: tuple[Ranked, ...], profile: Profile) -> Ranked:
    """When the recommended option costs more than 20 % above the cheapest feasible one per effective
    GPU-hour, one sentence with the figure and what outweighs it (dimension points and fit)."""
    feasible = [r for r in ranking if r.feasible and r.outcome.assessment is not None]
    assert chosen.outcome.assessment is not None
    mine = effective_cost(chosen.outcome.assessment)
    cheap = min(feasible, key=lambda r: effective_cost(r.outcome.assessment))  # type: ignore[arg-type]
    theirs = effective_cost(cheap.outcome.assessment)  # type: ignore[arg-type]
    if cheap is chosen or theirs <= 0 or mine <= theirs * (1 + PREMIUM_TO_EXPLAIN):
        return chosen
    gains = [
        f"{d} +{chosen.scores[d] - cheap.scores[d]:.0f}"
        for d in DIMENSIONS
        if chosen.scores[d] - cheap.scores[d] >= 0.5
    ]
    if chosen.fit != cheap.fit:
        gains.append(
            f"fit {chosen.fit - cheap.fit:+.0f} points ({'; '.join(r.reason for r in chosen.rules) or 'none'})"
        )
    sentence = (
        f"Recommended although it costs {(mine / theirs - 1) * 100:.0f}% more per effective GPU-hour than "
        f"{cheap.option} ({mine:,.2f} against {theirs:,.2f} {profile.currency}), because it scores higher on "
        f"{', '.join(gains) or 'the other dimensions'}."
    )
    return dataclasses.replace(chosen, reasons=(sentence, *chosen.reasons))


def _apply_rules(profile: Profile, assessment: Assessment, knowledge: Knowledge) -> list[AppliedRule]:
    ctx = rule_engine.Context.of(profile, assessment)
    applied = []
    for rule in knowledge.rules:
        if rule.option in (assessment.option, "*") and rule_engine.holds(rule, ctx):
            applied.append(AppliedRule(rule.key, rule.effect, rule.points, rule_engine.render(rule.reason, ctx)))
    return applied


def _reasons(profile: Profile, a: Assessment, cheapest: float, applied: list[AppliedRule]) -> tuple[str, ...]:
    cur = profile.currency
    per_hour = effective_cost(a)
    infeasible = [f"Not feasible: {r.reason}" for r in applied if r.effect == "infeasible"]
    infeasible += [f"Not feasible: {reason}." for reason in broken(a)]
    fits = [
        f"{r.reason} ({'+' if r.effect == 'bonus' else '−'}{num(r.points or 0)} fit)"
        for r in applied
        if r.effect != "infeasible"
    ]
    cost_line = (
        f"{a.cost.per_useful_gpu_hour.expected:,.2f} {cur} per useful GPU-hour; {per_hour:,.2f} per effective "
        "GPU-hour (after execution efficiency, goodput and the work left to the team)"
        + (", the cheapest option." if per_hour <= cheapest else f", against {cheapest:,.2f} for the cheapest option.")
    )
    e, s, u = a.efficiency, a.stability, a.usability
    return (
        *infeasible,
        *a.notes,
        cost_line,
        f"Compute available in {_duration(e.lead_time_days.low)}–{_duration(e.lead_time_days.high)}; "
        f"{span(e.setup_minutes_per_run, 'minutes')} of set-up before each run; "
        f"execution efficiency {pct(e.execution_efficiency.low)}–{pct(e.execution_efficiency.high)}.",
        f"About {num(s.interruptions_per_year.expected, 1)} interruptions a year, "
        f"{num(s.hours_lost_per_interruption.expected, 1)} hours lost each: "
        f"{pct(s.goodput.expected)} goodput ({num(s.lost_gpu_hours_per_year.expected)} GPU-hours lost a year).",
        f"Needs {num(u.infra_fte_needed.expected, 1)} FTE of infrastructure work, "
        f"{num(u.infra_fte_unmet.expected, 1)} of it on a team of {profile.team_size}: {u.setup_steps}.",
        *fits,
    )


def _duration(days: float) -> str:
    if days >= 2:
        return f"{days:,.0f} days"
    if days * 24 >= 2:
        return f"{days * 24:,.0f} hours"
    minutes = round(days * 24 * 60)
    return f"{minutes:,} minute{'' if minutes == 1 else 's'}"
