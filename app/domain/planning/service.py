"""Training-run plans: a model size and a token (or FLOP) budget in; per option, how long the run
takes on the calendar and what it costs (docs/training-plans.md)."""

from __future__ import annotations

from app.domain.decisions.schemas import ReasonCode
from app.domain.planning.schemas import TrainingPlanCreate, TrainingPlanItem, TrainingPlanRead
from app.domain.shared.convert import range_read
from app.domain.shared.engine import Engine
from app.engine import decision, planner
from app.i18n import DEFAULT_LANG, Lang, code_of, name_of, render
from app.sdk.errors import MissingKnowledge, NothingAssessable, UnknownReference
from app.sdk.knowledge import Knowledge
from app.sdk.model import METHODOLOGY_VERSION
from app.sdk.ranges import Range
from app.sdk.text import Msg, money_range, msg, num, option_ref, pct


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


def plan(engine: Engine, req: TrainingPlanCreate, lang: Lang = DEFAULT_LANG) -> TrainingPlanRead:
    kb = engine.knowledge()
    engine.check_references(kb, currency=req.currency, gpu_model=req.gpu_model, rental_plan=req.rental_plan)
    gpu = kb.gpus[req.gpu_model]
    if req.mfu is not None:
        mfu = Range.point(req.mfu)
        mfu_note = msg("training.mfu_given", f"MFU {pct(req.mfu)} as given.", mfu=pct(req.mfu))
    else:
        try:
            row = kb.assumption("*", planner.MFU_KEY)
        except MissingKnowledge as exc:
            raise UnknownReference(f"{exc}: send mfu", field="mfu") from exc
        mfu = row.value
        low, high, expected = pct(mfu.low), pct(mfu.high), pct(mfu.expected)
        mfu_note = msg(
            "training.mfu_assumed",
            f"MFU {low}–{high} (expected {expected}), the knowledge base's assumption of model FLOPs "
            "utilization; the high MFU gives the low end of every time and cost.",
            low=low,
            high=high,
            expected=expected,
        )
    flops = planner.training_flops(req.parameters, req.tokens) if req.tokens is not None else float(req.flops or 0)
    try:
        hours = planner.gpu_hours(flops, gpu.bf16_dense_tflops, mfu)
    except (planner.PlanError, ZeroDivisionError) as exc:
        raise UnknownReference(f"the run cannot be planned: {exc}", field="mfu") from exc

    pricing = planner.pricing(kb, req.gpu_model, req.as_of or engine.today())
    profile = planner.run_profile(
        gpus=req.gpus,
        hours=hours,
        as_of=req.as_of or engine.today(),
        currency=req.currency,
        rental_plan=req.rental_plan,
        ops_team=req.ops_team,
        gpu_model=pricing.profile_gpu_model,
    )

    def owned_years(option: str) -> float:
        try:
            return kb.assumption(option, "depreciation_years").value.expected
        except MissingKnowledge:
            return profile.horizon_years

    outcomes = planner.plan_all(engine.options, lambda o, p: engine.choose(o, p, kb)[0], profile, hours, owned_years)
    if outcomes and all(o.plan is None for o in outcomes):
        raise NothingAssessable("; ".join(f"{o.option}: {o.error}" for o in outcomes))

    shown_flops, tflops, gpu_hours = f"{flops:.3g}", num(gpu.bf16_dense_tflops), _gpu_hours(hours)
    notes: list[str] = [
        msg(
            "training.compute",
            f"{shown_flops} FLOPs on {req.gpus} × {gpu.name} ({tflops} dense BF16 TFLOPS): {gpu_hours}.",
            flops=shown_flops,
            gpus=str(req.gpus),
            gpu=gpu.name,
            tflops=tflops,
            gpu_hours=gpu_hours,
        ),
        mfu_note,
    ]
    if pricing.note:
        notes.append(pricing.note)
    days = num(profile.horizon_years * 365, 1)
    notes.append(
        msg(
            "training.full_load",
            f"Each option is assessed at full load for the run's expected length ({days} days) and charged "
            "its own cost per useful GPU-hour.",
            days=days,
        )
    )
    items = []
    for o in outcomes:
        name = name_of(f"option.{o.option}.name", lang, engine.options[o.option].spec.name)
        p = o.plan
        if p is None:
            items.append(
                TrainingPlanItem(
                    option=o.option,
                    name=name,
                    calendar_days=None,
                    training_days=None,
                    total_cost=None,
                    gpu_hours_billed=None,
                    error=o.error,
                    error_code=o.error_code,
                )
            )
            continue
        refused = _refusal(engine, kb, o)
        if p.committed and o.assessment is not None:
            c = o.assessment.cost
            upfront, annual = money_range(c.upfront, profile.currency), money_range(c.annual, profile.currency)
            notes.append(
                msg(
                    "training.commits",
                    f"{option_ref(o.option)} commits more than the run ({upfront} upfront, {annual} a year); its "
                    "cost here is the run's share at its full-load price per useful GPU-hour.",
                    option=option_ref(o.option),
                    upfront=upfront,
                    annual=annual,
                )
            )
        items.append(
            TrainingPlanItem(
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
        )
    return TrainingPlanRead(
        knowledge_version=kb.version,
        methodology_version=METHODOLOGY_VERSION,
        flops=flops,
        gpu_hours=range_read(hours),
        gpu_model=req.gpu_model,
        gpus=req.gpus,
        mfu=range_read(mfu, 4),
        pricing_basis=pricing.server.key if pricing.server else pricing.profile_gpu_model,
        notes=[render(n, lang) for n in notes],
        items=items,
        currency=profile.currency,
        as_of=profile.as_of,
        rental_plan=profile.rental_plan,
        ops_team=profile.ops_team,
    )


def _refusal(engine: Engine, kb: Knowledge, o: planner.PlanOutcome) -> list[str]:
    """The sentences of the hard constraints an option's plan breaks, as a comparison of the same run gives
    them (the option's assessment of the plan's profile); none when it can serve the run."""
    if not o.refused or o.profile is None:
        return []
    return decision.broken(engine.assess(o.option, o.profile, kb))
