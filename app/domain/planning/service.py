"""Training-run plans: a model size and a token (or FLOP) budget in; per option, how long the run
takes on the calendar and what it costs (docs/training-plans.md). With one ``gpu_model`` the run is
planned on it; without, on every GPU model (or those of ``gpu_models``), and the answer ranks the
candidates — GPU model × option — by cost per million trained tokens (docs/methodology.md "Work:
throughput and cost per token")."""

from __future__ import annotations

from app.core.errors import NothingAssessable
from app.core.knowledge import Knowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.ranges import Range
from app.core.text import Msg, money_range, msg, num, option_ref
from app.core.types import Profile
from app.domain.decisions.schemas import ReasonCode
from app.domain.planning import run
from app.domain.planning.candidates import candidates
from app.domain.planning.schemas import (
    TrainingCandidatesRead,
    TrainingPlanCreate,
    TrainingPlanItem,
    TrainingPlanRead,
)
from app.domain.shared.advisor import Advisor
from app.domain.shared.convert import range_read
from app.engine import planner
from app.i18n import DEFAULT_LANG, Lang, code_of, render


def _gpu_hours(r: Range) -> Msg:
    if r.is_point:
        return msg("unit.gpu_hours", f"{num(r.expected)} GPU-hours", value=num(r.expected))
    low, high, expected = num(r.low), num(r.high), num(r.expected)
    return msg(
        "unit.gpu_hours_range",
        f"{low}–{high} GPU-hours (expected {expected})",
        low=low,
        high=high,
        expected=expected,
    )


def plan(
    advisor: Advisor, req: TrainingPlanCreate, lang: Lang = DEFAULT_LANG
) -> TrainingPlanRead | TrainingCandidatesRead:
    """The run planned: on the request's ``gpu_model`` alone, else on every GPU model (or those of
    ``gpu_models``) as ranked candidates; the request's references checked first (422 naming the field)."""
    kb = advisor.knowledge()
    _check_references(advisor, kb, req)
    flops = planner.training_flops(req.parameters, req.tokens) if req.tokens is not None else float(req.flops or 0)
    if req.gpu_model is not None:
        return _single(advisor, kb, req, req.gpu_model, flops, lang)
    return candidates(advisor, kb, req, flops, lang)


def _check_references(advisor: Advisor, kb: Knowledge, req: TrainingPlanCreate) -> None:
    """Every key the request names is one the knowledge base knows (``Advisor.check_references``)."""
    advisor.check_references(
        kb,
        currency=req.currency,
        gpu_model=req.gpu_model,
        providers=req.providers,
        regions=req.regions,
        buyer_country=req.buyer_country,
        rental_plan=req.rental_plan,
        precision=req.precision,
    )


def _commits_note(o: planner.PlanOutcome, currency: str) -> Msg | None:
    if o.plan is None or not o.plan.committed or o.assessment is None:
        return None
    c = o.assessment.cost
    upfront, annual = money_range(c.upfront, currency), money_range(c.annual, currency)
    return msg(
        "training.commits",
        f"{option_ref(o.option)} commits more than the run ({upfront} upfront, {annual} a year); its "
        "cost here is the run's share at its full-load price per useful GPU-hour.",
        option=option_ref(o.option),
        upfront=upfront,
        annual=annual,
    )


def _full_load(profile: Profile) -> Msg:
    days = num(profile.horizon_years * 365, 1)
    return msg(
        "training.full_load",
        f"Each option is assessed at full load for the run's expected length ({days} days) and charged "
        "its own cost per useful GPU-hour.",
        days=days,
    )


# ---- one GPU model ------------------------------------------------------------------------------------


def _single(
    advisor: Advisor, kb: Knowledge, req: TrainingPlanCreate, gpu_model: str, flops: float, lang: Lang
) -> TrainingPlanRead:
    """The run on ``gpu_model``: its compute, then every option's plan (calendar days, cost, what it
    breaks), with the notes that say how it was computed; 422 when no option can be assessed."""
    work = run.work(kb, req, gpu_model, flops)
    pricing = planner.pricing(kb, gpu_model, req.as_of or advisor.today())
    profile = run.run_profile(advisor, kb, req, pricing.profile_gpu_model, work.hours)
    outcomes = run.outcomes(advisor, kb, profile, work.hours)
    if outcomes and all(o.plan is None for o in outcomes):
        raise NothingAssessable("; ".join(f"{o.option}: {o.error}" for o in outcomes))
    notes = [
        _compute_note(kb, req, gpu_model, flops, work),
        work.mfu_note,
        *([pricing.note] if pricing.note else []),
        _full_load(profile),
    ]
    items = [_item(advisor, kb, o, lang) for o in outcomes]
    notes += [note for o in outcomes if (note := _commits_note(o, profile.currency)) is not None]
    return TrainingPlanRead(
        knowledge_version=kb.version,
        methodology_version=METHODOLOGY_VERSION,
        flops=flops,
        gpu_hours=range_read(work.hours),
        gpu_model=gpu_model,
        gpus=req.gpus,
        mfu=range_read(work.mfu, 4),
        pricing_basis=pricing.server.key if pricing.server else pricing.profile_gpu_model,
        notes=[render(n, lang) for n in notes],
        items=items,
        currency=profile.currency,
        as_of=profile.as_of,
        rental_plan=profile.rental_plan,
        ops_team=profile.ops_team,
    )


def _compute_note(kb: Knowledge, req: TrainingPlanCreate, gpu_model: str, flops: float, work: run.Work) -> Msg:
    """The run's compute in a sentence: its FLOPs on the GPUs at their dense peak, in GPU-hours."""
    gpu = kb.gpus[gpu_model]
    shown_flops, tflops, gpu_hours = f"{flops:.3g}", num(work.rate.peak_tflops), _gpu_hours(work.hours)
    precision = req.precision.upper()
    return msg(
        "training.compute",
        f"{shown_flops} FLOPs on {req.gpus} × {gpu.name} ({tflops} dense {precision} TFLOPS): {gpu_hours}.",
        flops=shown_flops,
        gpus=str(req.gpus),
        gpu=gpu.name,
        tflops=tflops,
        precision=precision,
        gpu_hours=gpu_hours,
    )


def _item(advisor: Advisor, kb: Knowledge, o: planner.PlanOutcome, lang: Lang) -> TrainingPlanItem:
    """An option's plan as answered: its figures, whether it is feasible and why not; or why it has none."""
    name = run.option_name(advisor, o.option, lang)
    p = o.plan
    if p is None:
        return TrainingPlanItem(
            option=o.option,
            name=name,
            calendar_days=None,
            training_days=None,
            total_cost=None,
            gpu_hours_billed=None,
            error=o.error,
            error_code=o.error_code,
        )
    refused = run.refusal(advisor, kb, o)
    return TrainingPlanItem(
        option=o.option,
        name=name,
        calendar_days=range_read(p.calendar_days),
        training_days=range_read(p.training_days),
        total_cost=range_read(p.total_cost),
        gpu_hours_billed=range_read(p.gpu_hours_billed),
        lead_time_days=range_read(p.lead_time_days, 4),
        interruptions=range_read(p.interruptions),
        hours_lost=range_read(p.hours_lost),
        cost_per_useful_gpu_hour=range_read(p.cost_per_useful_gpu_hour, 4),
        upfront_cost=range_read(p.upfront_cost),
        committed=p.committed,
        feasible=not o.refused,
        reasons=[render(r, lang) for r in refused],
        reason_codes=[ReasonCode(**code_of(r, lang)) for r in refused],
    )
