"""A training run on one GPU model, the steps both answers of ``POST /v1/training-plans`` share
(docs/training-plans.md): the run's compute on the model (its throughput, or the MFU given), the profile the
options are assessed for, every option's plan, and the words of what an option's plan breaks."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from app.core.errors import MissingKnowledge, UnknownReference
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.text import Msg, msg, pct
from app.core.types import Assessment, Profile
from app.domain.planning.schemas import (
    PROFILE_FIELDS,
    TrainingPlanCreate,
)
from app.domain.shared.advisor import Advisor
from app.domain.shared.schemas import ProfileFields
from app.engine import decision, planner, throughput
from app.i18n import Lang, name_of


@dataclass(frozen=True, slots=True)
class Work:
    """The run on one GPU model: its throughput at the MFU used (the request's or the knowledge base's),
    the run's GPU-hours and the sentence that says where the MFU comes from."""

    rate: throughput.Throughput
    hours: Range
    mfu_note: Msg

    @property
    def mfu(self) -> Range:
        return self.rate.mfu


def work(kb: Knowledge, req: TrainingPlanCreate, gpu_model: str, flops: float) -> Work:
    """The run's compute on ``gpu_model`` at the request's precision (checked: the part has a peak at it);
    422 naming ``mfu`` where the numbers leave the plan's range."""
    try:
        rate = throughput.throughput(kb, gpu_model, req.precision)
    except MissingKnowledge as exc:  # the precision was checked: the general MFU row is missing
        raise UnknownReference(f"{exc}: send mfu", field="mfu") from exc
    if req.mfu is not None:
        rate = dataclasses.replace(rate, mfu=Range.point(req.mfu))
        note = msg("training.mfu_given", f"MFU {pct(req.mfu)} as given.", mfu=pct(req.mfu))
    else:
        mfu = rate.mfu
        low, high, expected = pct(mfu.low), pct(mfu.high), pct(mfu.expected)
        note = msg(
            "training.mfu_assumed",
            f"MFU {low}–{high} (expected {expected}), the knowledge base's assumption of model FLOPs "
            "utilization; the high MFU gives the low end of every time and cost.",
            low=low,
            high=high,
            expected=expected,
        )
    try:
        hours = planner.gpu_hours(flops, rate.peak_tflops, rate.mfu)
    except (planner.PlanError, ZeroDivisionError) as exc:
        raise UnknownReference(f"the run cannot be planned: {exc}", field="mfu") from exc
    return Work(rate, hours, note)


def run_profile(
    advisor: Advisor, kb: Knowledge, req: TrainingPlanCreate, gpu_model: str | None, hours: Range
) -> Profile:
    """The profile an option is assessed for: the run's GPUs at full load over the run's length, in one
    synchronous job across all of them, with the request's profile fields as every pricing endpoint reads
    them (``Advisor.profile``)."""
    fields = ProfileFields.model_construct(
        **{name: getattr(req, name) for name in PROFILE_FIELDS},
        gpus=req.gpus,
        largest_job_gpus=req.gpus,
        utilization=1.0,
        horizon_years=planner.horizon_years(hours, req.gpus),
        as_of=req.as_of,
        currency=req.currency,
        rental_plan=req.rental_plan,
        ops_team=req.ops_team,
        gpu_model=gpu_model,
        precision=req.precision,
    )
    return advisor.profile(fields, kb)


def outcomes(advisor: Advisor, kb: Knowledge, profile: Profile, hours: Range) -> list[planner.PlanOutcome]:
    def owned_years(option: str) -> float:
        try:
            return kb.assumption(option, "depreciation_years").value.expected
        except MissingKnowledge:
            return profile.horizon_years

    return planner.plan_all(advisor.options, lambda o, p: advisor.choose(o, p, kb)[0], profile, hours, owned_years)


def option_name(advisor: Advisor, option: str, lang: Lang) -> str:
    return name_of(f"option.{option}.name", lang, advisor.options[option].spec.name)


def assessed(advisor: Advisor, kb: Knowledge, o: planner.PlanOutcome) -> Assessment:
    """The option's assessment of the plan's profile: the offer the plan chose (``o.assessment``, quoted at
    every end) with its words, as a comparison of the same run gives them — materialised, not chosen again;
    assessed anew where the outcome holds no quote."""
    assert o.profile is not None
    if o.assessment is None:
        return advisor.assess(o.option, o.profile, kb)
    return advisor.materialise(o.option, o.profile, kb, o.assessment)


def refusal(advisor: Advisor, kb: Knowledge, o: planner.PlanOutcome, found: Assessment | None = None) -> list[str]:
    """The sentences of the hard constraints an option's plan breaks, as a comparison of the same run gives
    them (``assessed``, or ``found`` where the caller has it); none when it can serve the run."""
    if not o.refused or o.profile is None:
        return []
    return decision.broken(found or assessed(advisor, kb, o))
