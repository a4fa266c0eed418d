"""From assessments to a ranked, explained decision for one profile (docs/methodology.md "Scores");
the scores and the order come from ``app.engine.scoring``, as for batches and Monte Carlo runs."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from app.core.errors import ISOLATED, OPTION_FAILED, failure, said
from app.core.knowledge import Knowledge
from app.core.ranges import holds_anywhere
from app.core.text import Composed, Msg, joined, msg, num, option_ref, pct, span
from app.core.types import Assessment, Profile
from app.core.vocab import DIMENSIONS
from app.engine import rules as rule_engine
from app.engine import scoring


@dataclass(frozen=True, slots=True)
class AppliedRule:
    key: str
    effect: str
    points: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """One option's assessment, or why it could not be made: ``error_code`` (``app.core.errors``:
    ``no-offer``, ``missing-knowledge``, ``option-failed``) and a sentence safe to show."""

    option: str
    assessment: Assessment | None
    error: str | None = None
    error_code: str | None = None
    #: ``error`` as a sentence to render in the request's language (``app.core.errors.said``)
    said: str | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    option: str
    rank: int
    score: float
    raw_score: float
    scores: Mapping[str, float]
    fit: float
    feasible: bool
    reasons: Sequence[str]
    rules: tuple[AppliedRule, ...]
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Decision:
    recommended_option: str | None
    weights: Mapping[str, float]
    ranking: tuple[Ranked, ...]


def assess_all(options: Iterable[str], assess: Callable[[str], Assessment]) -> list[Outcome]:
    """Assess every option, isolating failures: a gap in the knowledge base or a failed plugin
    (``app.core.errors.ISOLATED``) marks only its own option; anything else is a defect of the core
    and propagates."""
    outcomes = []
    for option in options:
        try:
            outcomes.append(Outcome(option, assess(option)))
        except ISOLATED as exc:
            code, error = failure(exc)
            outcomes.append(Outcome(option, None, error, code, said(exc)))
    return outcomes


def default_weights(knowledge: Knowledge) -> Mapping[str, float]:
    """The knowledge base's ``weight_<dimension>`` assumptions: read once per snapshot, and the same
    read-only mapping every time (a batch's profiles without weights of their own share it, and are
    grouped by it once rather than once each)."""
    found: Mapping[str, float] | None = knowledge.derived.get(("default_weights",))
    if found is None:
        read = {d: knowledge.assumption("*", f"weight_{d}").value.expected for d in DIMENSIONS}
        found = knowledge.derived[("default_weights",)] = MappingProxyType(read)
    return found


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
    reasons: Sequence[str]
    rules: tuple[AppliedRule, ...]


def decide(profile: Profile, outcomes: list[Outcome], knowledge: Knowledge, weights: Mapping[str, float]) -> Decision:
    weights = scoring.normalise_weights(weights)
    assessed = [o.assessment for o in outcomes if o.assessment is not None]
    cheapest = min((effective_cost(a) for a in assessed), default=0.0)
    rows: list[_Scored] = []
    for outcome in outcomes:
        a = outcome.assessment
        if a is None:
            reasons: tuple[str, ...] = (_not_assessed(outcome),)
            rows.append(_Scored(outcome, False, 0.0, dict.fromkeys(DIMENSIONS, 0.0), 0.0, reasons, ()))
            continue
        scores = dimension_scores(a, cheapest)
        applied = _apply_rules(profile, a, knowledge)
        fit = sum((r.points or 0.0) * (1 if r.effect == "bonus" else -1) for r in applied if r.effect != "infeasible")
        feasible = not any(r.effect == "infeasible" for r in applied) and not broken(a)
        raw = scoring.total(weights, scores, fit)
        rows.append(_Scored(outcome, feasible, raw, scores, fit, (), tuple(applied)))
    # the reasons compare each option's cost with the cheapest option that can be chosen
    feasible_costs = [
        (effective_cost(r.outcome.assessment), r.outcome.option)
        for r in rows
        if r.feasible and r.outcome.assessment is not None
    ]
    cheapest_feasible = min(feasible_costs, default=None, key=lambda c: float(c[0]))
    rows = [
        r
        if r.outcome.assessment is None
        else dataclasses.replace(
            r,  # composed where an answer reads them (an evaluation's entries; a batch's scores do not)
            reasons=Composed(
                functools.partial(
                    _reasons, profile, r.outcome.assessment, cheapest_feasible, list(r.rules), feasible=r.feasible
                )
            ),
        )
        for r in rows
    ]

    order = scoring.ranked([(r.outcome.option, r.feasible, r.raw, scoring.spread(r.scores, r.fit)) for r in rows])
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


#: a recommendation dearer than this share above the cheapest feasible option says why (half a per
#: cent: every premium the sentence would show as 1 % or more)
PREMIUM_TO_EXPLAIN = 0.005


def _explain_premium(chosen: Ranked, ranking: tuple[Ranked, ...], profile: Profile) -> Ranked:
    """When the recommended option costs more than the cheapest feasible one per effective GPU-hour
    (by :data:`PREMIUM_TO_EXPLAIN` or more), one sentence with the figure and what outweighs it
    (dimension points and fit)."""
    feasible = [r for r in ranking if r.feasible and r.outcome.assessment is not None]
    assert chosen.outcome.assessment is not None
    mine = effective_cost(chosen.outcome.assessment)
    cheap = min(feasible, key=lambda r: effective_cost(r.outcome.assessment))  # type: ignore[arg-type]
    theirs = effective_cost(cheap.outcome.assessment)  # type: ignore[arg-type]
    if cheap is chosen or theirs <= 0 or mine <= theirs * (1 + PREMIUM_TO_EXPLAIN):
        return chosen
    gains: list[str] = [
        msg("reason.gain", f"{d} +{points:.0f}", dimension=msg(f"dimension.{d}", d), points=f"{points:.0f}")
        for d in DIMENSIONS
        if (points := chosen.scores[d] - cheap.scores[d]) >= 0.5
    ]
    if chosen.fit != cheap.fit:
        rules = joined("; ", [r.reason for r in chosen.rules]) if chosen.rules else msg("reason.none", "none")
        gains.append(
            msg(
                "reason.gain_fit",
                f"fit {chosen.fit - cheap.fit:+.0f} points ({rules})",
                points=f"{chosen.fit - cheap.fit:+.0f}",
                rules=rules,
            )
        )
    gained = joined(", ", gains) if gains else msg("reason.other_dimensions", "the other dimensions")
    premium, mine_s, theirs_s = f"{(mine / theirs - 1) * 100:.0f}", f"{mine:,.2f}", f"{theirs:,.2f}"
    sentence = msg(
        "reason.premium",
        f"Recommended although it costs {premium}% more per effective GPU-hour than "
        f"{option_ref(cheap.option)} ({mine_s} against {theirs_s} {profile.currency}), because it scores "
        f"higher on {gained}.",
        premium=premium,
        cheapest=option_ref(cheap.option),
        mine=mine_s,
        theirs=theirs_s,
        currency=profile.currency,
        gains=gained,
    )
    return dataclasses.replace(chosen, reasons=(sentence, *chosen.reasons))


def _apply_rules(profile: Profile, assessment: Assessment, knowledge: Knowledge) -> list[AppliedRule]:
    ctx = rule_engine.Context.of(profile, assessment)
    applied = []
    for rule in knowledge.rules:
        if rule.option in (assessment.option, "*") and rule_engine.holds(rule, ctx):
            applied.append(
                AppliedRule(
                    rule.key, rule.effect, rule.points, rule_engine.render(rule.reason, ctx, code=f"rule.{rule.key}")
                )
            )
    return applied


def _reasons(
    profile: Profile,
    a: Assessment,
    cheapest: tuple[float, str] | None,
    applied: list[AppliedRule],
    *,
    feasible: bool,
) -> tuple[str, ...]:
    """The option's sentences: what makes it infeasible, its notes, its cost against the cheapest
    feasible option's (``cheapest``: that cost and option; None when no option is feasible), its
    efficiency, stability and usability, and the rules that fit it."""
    return (
        *_infeasible_reasons(a, applied),
        *a.notes,
        _cost_reason(profile, a, cheapest, feasible=feasible),
        _efficiency_reason(a),
        _stability_reason(a),
        _usability_reason(profile, a),
        *_fit_reasons(applied),
    )


def _infeasible_reasons(a: Assessment, applied: list[AppliedRule]) -> list[str]:
    """What makes the option infeasible: the rules that say so, then the hard constraints its offer breaks."""
    infeasible: list[str] = [
        msg("reason.not_feasible", f"Not feasible: {r.reason}", reason=r.reason)
        for r in applied
        if r.effect == "infeasible"
    ]
    return infeasible + [
        msg("reason.not_feasible_offer", f"Not feasible: {reason}.", reason=reason) for reason in broken(a)
    ]


def _fit_reasons(applied: list[AppliedRule]) -> list[str]:
    """The rules that fit the option (a bonus) or do not (a penalty), with their points."""
    return [
        msg(
            f"reason.fit_{r.effect}",
            f"{r.reason} ({'+' if r.effect == 'bonus' else '−'}{num(r.points or 0)} fit)",
            reason=r.reason,
            points=num(r.points or 0),
        )
        for r in applied
        if r.effect != "infeasible"
    ]


def _cost_reason(profile: Profile, a: Assessment, cheapest: tuple[float, str] | None, *, feasible: bool) -> Msg:
    """The option's cost per useful and per effective GPU-hour, against the cheapest feasible option's (or
    that it is the cheapest, or that no option is feasible to compare it with)."""
    cur, per_hour = profile.currency, effective_cost(a)
    useful, effective = f"{a.cost.per_useful_gpu_hour.expected:,.2f}", f"{per_hour:,.2f}"
    head = (
        f"{useful} {cur} per useful GPU-hour; {effective} per effective "
        "GPU-hour (after execution efficiency, goodput and the work left to the team)"
    )
    figures = {"per_useful": useful, "currency": cur, "per_effective": effective}
    if cheapest is None:
        return msg("reason.cost_alone", head + "; no option is feasible to compare it with.", **figures)
    if feasible and per_hour <= cheapest[0]:
        return msg("reason.cost_cheapest", head + ", the cheapest feasible option.", **figures)
    cheapest_s, option = f"{cheapest[0]:,.2f}", option_ref(cheapest[1])
    return msg(
        "reason.cost",
        head + f", against {cheapest_s} for {option}, the cheapest feasible option.",
        **figures,
        cheapest=cheapest_s,
        option=option,
    )


def _efficiency_reason(a: Assessment) -> Msg:
    """How soon the compute is available, the set-up before each run, and the execution efficiency."""
    e = a.efficiency
    soonest, latest = _duration(e.lead_time_days.low), _duration(e.lead_time_days.high)
    setup = span(e.setup_minutes_per_run, "minutes")
    eff_low, eff_high = pct(e.execution_efficiency.low), pct(e.execution_efficiency.high)
    return msg(
        "reason.efficiency",
        f"Compute available in {soonest}–{latest}; {setup} of set-up before each run; "
        f"execution efficiency {eff_low}–{eff_high}.",
        soonest=soonest,
        latest=latest,
        setup=msg("unit.minutes", setup, value=setup.removesuffix(" minutes")),
        efficiency_low=eff_low,
        efficiency_high=eff_high,
    )


def _stability_reason(a: Assessment) -> Msg:
    """How often the work is interrupted, the hours each interruption loses, and the goodput left."""
    s = a.stability
    interruptions, lost_each = num(s.interruptions_per_year.expected, 1), num(s.hours_lost_per_interruption.expected, 1)
    goodput, lost = pct(s.goodput.expected), num(s.lost_gpu_hours_per_year.expected)
    return msg(
        "reason.stability",
        f"About {interruptions} interruptions a year, {lost_each} hours lost each: "
        f"{goodput} goodput ({lost} GPU-hours lost a year).",
        interruptions=interruptions,
        hours_lost=lost_each,
        goodput=goodput,
        lost_gpu_hours=lost,
    )


def _usability_reason(profile: Profile, a: Assessment) -> Msg:
    """The infrastructure work the option needs, how much of it the team cannot cover, and its set-up steps."""
    u = a.usability
    fte, unmet = num(u.infra_fte_needed.expected, 1), num(u.infra_fte_unmet.expected, 1)
    return msg(
        "reason.usability",
        f"Needs {fte} FTE of infrastructure work, {unmet} of it on a team of {profile.team_size}: {u.setup_steps}.",
        fte=fte,
        unmet=unmet,
        team_size=str(profile.team_size),
        setup_steps=u.setup_steps,
    )


def _not_assessed(outcome: Outcome) -> Msg:
    """Why an option has no assessment, in words (the code says which kind of failure)."""
    if outcome.error_code == OPTION_FAILED:
        return msg("reason.option_failed", "Could not be assessed: the option's computation failed (logged).")
    error = outcome.said or str(outcome.error)
    return msg("reason.not_assessed", f"Could not be assessed: {error}", error=error)


def _duration(days: float) -> Msg:
    if days >= 2:
        return msg("unit.days", f"{days:,.0f} days", value=f"{days:,.0f}")
    if days * 24 >= 2:
        return msg("unit.hours", f"{days * 24:,.0f} hours", value=f"{days * 24:,.0f}")
    minutes = round(days * 24 * 60)
    if minutes == 1:
        return msg("unit.minute", "1 minute", value="1")
    return msg("unit.minutes", f"{minutes:,} minutes", value=f"{minutes:,}")
