"""A training run across GPU models (docs/training-plans.md "Across GPU models"): every GPU model × option a
candidate, ranked feasible first and then by cost per million trained tokens, and the recommended one with
the sentence why (docs/methodology.md "Work: throughput and cost per token")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from app.core.errors import NothingAssessable, UnknownReference
from app.core.knowledge import ANY, Knowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.offers import gpu_name
from app.core.ranges import Range
from app.core.text import Msg, money_range, msg, num, option_ref
from app.core.types import OfferInfo
from app.domain.decisions.schemas import ReasonCode
from app.domain.planning import run
from app.domain.planning.schemas import (
    CandidateRead,
    Choice,
    TrainingCandidatesRead,
    TrainingPlanCreate,
    WorkRead,
)
from app.domain.shared.advisor import Advisor
from app.domain.shared.convert import offer_read, range_read
from app.engine import planner, throughput
from app.i18n import Lang, code_of, render

#: the assumption of the bytes of model state per parameter a run keeps on its GPUs
STATE_BYTES_KEY = "training_state_bytes_per_parameter"
GIGA = 1e9
MILLION = 1e6
#: decimals of a cost per million tokens in a sentence
PRICE_DIGITS = 2

# ---- across GPU models --------------------------------------------------------------------------------


def _models(advisor: Advisor, kb: Knowledge, req: TrainingPlanCreate) -> tuple[list[str], list[Msg]]:
    """The GPU models to plan on: those the request lists (422 naming ``gpu_models.<i>`` for an unknown one,
    ``precision`` for one without a peak at it), else every GPU model with a price valid on ``as_of`` that
    runs at the precision (the others named in a note)."""
    if req.gpu_models is not None:
        for i, key in enumerate(req.gpu_models):
            if key not in kb.gpus:
                text = f"unknown GPU model '{key}' (see /v1/gpus)"
                raise UnknownReference(
                    msg("problem.detail.unknown_gpu_model", text, gpu_model=key), field=f"gpu_models.{i}"
                )
            advisor.check_references(kb, currency=req.currency, gpu_model=key, precision=req.precision)
        return list(dict.fromkeys(req.gpu_models)), []
    day = req.as_of or advisor.today()
    priced = sorted({p.gpu_model for p in kb.prices if p.gpu_model in kb.gpus and p.valid_on(day)})
    runs = [g for g in priced if throughput.supports(kb, g, req.precision)]
    skipped = [gpu_name(kb, g) for g in priced if g not in runs]
    notes = []
    if skipped:
        names = ", ".join(skipped)
        notes.append(
            msg(
                "training.precision_skipped",
                f"Not planned at {req.precision.upper()}: {names} (no dense {req.precision.upper()} peak).",
                precision=req.precision.upper(),
                gpus=names,
            )
        )
    return runs, notes


def _memory(kb: Knowledge, req: TrainingPlanCreate, gpu_model: str) -> Msg | None:
    """Why the run's model state cannot fit ``gpus`` GPUs of ``gpu_model``, or None: parameters × the bytes of
    state a parameter keeps (weights, gradients, optimizer; the row's low end, so only a run that cannot fit
    is refused) against the GPUs' memory together, as a run that shards its state across every GPU holds it
    (activations not counted)."""
    per_parameter = kb.assumption("*", STATE_BYTES_KEY).value.low  # the row is there (the caller checked)
    needed = req.parameters * per_parameter / GIGA
    spec = kb.gpus[gpu_model]
    held = req.gpus * spec.memory_gb
    if needed <= held:
        return None
    return msg(
        "training.memory",
        f"The model's training state ({num(needed)} GB at {num(per_parameter)} bytes a parameter) does not fit "
        f"{req.gpus} × {spec.name} ({num(held)} GB together).",
        needed=num(needed),
        per_parameter=num(per_parameter),
        gpus=str(req.gpus),
        gpu=spec.name,
        held=num(held),
    )


def _deadline(days: Range, within: float | None) -> Msg | None:
    if within is None or days.expected <= within:
        return None
    return msg(
        "training.deadline",
        f"Finishes in {num(days.expected, 1)} days (lead time included), after the {num(within, 1)} days asked.",
        days=num(days.expected, 1),
        within=num(within, 1),
    )


@dataclass(frozen=True, slots=True)
class _Candidate:
    gpu_model: str
    outcome: planner.PlanOutcome
    reasons: tuple[Msg | str, ...]
    #: the reasons other than the deadline (a candidate the deadline alone refuses is the cheapest that misses it)
    blocked: bool
    per_million: Range | None
    #: the run's compute in GPU-hours of ``gpu_model``
    hours: Range
    #: the offer the option's plan is priced on (None without a plan)
    offer: OfferInfo | None = None

    @property
    def feasible(self) -> bool:
        return self.outcome.plan is not None and not self.reasons

    def order(self) -> tuple[int, float, float, str, str]:
        p = self.outcome.plan
        if p is None or self.per_million is None:
            return (2, 0.0, 0.0, self.gpu_model, self.outcome.option)
        rank = 0 if self.feasible else 1
        return (rank, self.per_million.expected, p.calendar_days.expected, self.gpu_model, self.outcome.option)


def candidates(
    advisor: Advisor, kb: Knowledge, req: TrainingPlanCreate, flops: float, lang: Lang
) -> TrainingCandidatesRead:
    models, notes = _models(advisor, kb, req)
    tokens = req.tokens if req.tokens is not None else flops / (planner.FLOPS_PER_PARAMETER_TOKEN * req.parameters)
    works: list[tuple[str, run.Work]] = []
    sized = (ANY, STATE_BYTES_KEY) in kb.assumptions
    if not sized:
        notes.append(
            msg(
                "training.memory_unchecked",
                "Whether the model's training state fits the GPUs' memory is not checked: the knowledge base has "
                "no bytes of state per parameter.",
            )
        )
    found: list[_Candidate] = []
    for gpu_model in models:
        work = run.work(kb, req, gpu_model, flops)
        works.append((gpu_model, work))
        profile = run.run_profile(advisor, kb, req, gpu_model, work.hours)
        memory = _memory(kb, req, gpu_model) if sized else None
        for o in run.outcomes(advisor, kb, profile, work.hours):
            reasons: list[Msg | str] = []
            per_million, offer = None, None
            if o.plan is not None and o.profile is not None:
                assessed = run.assessed(advisor, kb, o)  # once: the offer and what it breaks
                offer = assessed.offer
                reasons.extend(run.refusal(advisor, kb, o, assessed))
                if memory is not None:
                    reasons.append(memory)
                blocked = bool(reasons)
                if (late := _deadline(o.plan.calendar_days, req.finish_within_days)) is not None:
                    reasons.append(late)
                per_million = o.plan.total_cost * (MILLION / tokens)
            else:
                blocked = True
            found.append(_Candidate(gpu_model, o, tuple(reasons), blocked, per_million, work.hours, offer))
    if found and all(c.outcome.plan is None for c in found):
        raise NothingAssessable("; ".join(f"{c.gpu_model}/{c.outcome.option}: {c.outcome.error}" for c in found))
    found.sort(key=_Candidate.order)
    best = found[0] if found and found[0].feasible else None
    sentence = _recommendation(kb, found, best, req.currency)
    if req.mfu is None:
        notes.insert(0, _mfu_note())
    notes.append(
        msg(
            "training.full_load_each",
            "Each candidate is assessed at full load for the run's expected length on its GPU model and charged "
            "its own cost per useful GPU-hour; one that commits more than the run (a cluster bought, a reservation) "
            "is charged the run's share, and its upfront cost says what it commits.",
        )
    )
    currency = req.currency
    return TrainingCandidatesRead(
        knowledge_version=kb.version,
        methodology_version=METHODOLOGY_VERSION,
        parameters=req.parameters,
        tokens=tokens,
        flops=flops,
        gpus=req.gpus,
        precision=req.precision,
        finish_within_days=req.finish_within_days,
        work=[_work_read(kb, req, g, w) for g, w in works],
        candidates=[_candidate_read(advisor, kb, c, req, lang) for c in found],
        recommended=None if best is None else Choice(best.gpu_model, best.outcome.option),
        recommendation=render(sentence, lang),
        notes=[render(n, lang) for n in notes],
        currency=currency,
        as_of=req.as_of or advisor.today(),
        rental_plan=req.rental_plan,
        ops_team=req.ops_team,
        buyer_country=req.buyer_country,
    )


def _mfu_note() -> Msg:
    return msg(
        "training.mfu_per_model",
        "Each GPU model runs at its own sustained share of its dense peak (MFU, listed per GPU model), from published "
        "large-model training runs; the high MFU gives the low end of every time and cost.",
    )


def _work_read(kb: Knowledge, req: TrainingPlanCreate, gpu_model: str, w: run.Work) -> WorkRead:
    sustained = w.rate.sustained
    per_second = throughput.tokens_per_second(w.rate, req.gpus, req.parameters)
    return WorkRead(
        gpu_model=gpu_model,
        name=gpu_name(kb, gpu_model),
        precision=req.precision,
        peak_tflops=w.rate.peak_tflops,
        mfu=range_read(w.mfu, 4),
        sustained_tflops=range_read(sustained),
        gpu_hours=range_read(w.hours),
        tokens_per_second=range_read(per_second),
        sources=[s.source for s in w.rate.sources] if req.mfu is None else [w.rate.sources[0].source],
    )


def _candidate_read(
    advisor: Advisor, kb: Knowledge, c: _Candidate, req: TrainingPlanCreate, lang: Lang
) -> CandidateRead:
    o, p = c.outcome, c.outcome.plan
    head = CandidateRead(
        gpu_model=c.gpu_model,
        option=o.option,
        name=run.option_name(advisor, o.option, lang),
        offer=None if c.offer is None else offer_read(c.offer, req.currency, lang),
        gpus=req.gpus,
        gpu_hours=range_read(c.hours),
        calendar_days=None,
        total_cost=None,
        cost_per_million_tokens=None,
        feasible=c.feasible,
        reasons=[render(r, lang) for r in c.reasons],
        reason_codes=[ReasonCode(**code_of(r, lang)) for r in c.reasons],
        error=o.error,
        error_code=o.error_code,
    )
    if p is None:
        return head
    return msgspec.structs.replace(
        head,
        calendar_days=range_read(p.calendar_days),
        total_cost=range_read(p.total_cost),
        cost_per_million_tokens=None if c.per_million is None else range_read(c.per_million, 4),
        gpu_hours_billed=range_read(p.gpu_hours_billed),
        training_days=range_read(p.training_days),
        lead_time_days=range_read(p.lead_time_days, 4),
        cost_per_useful_gpu_hour=range_read(p.cost_per_useful_gpu_hour, 4),
        upfront_cost=range_read(p.upfront_cost),
        committed=p.committed,
    )


def _recommendation(kb: Knowledge, found: Sequence[_Candidate], best: _Candidate | None, currency: str) -> Msg:
    """Why the recommended candidate: the lowest cost per million tokens, or the lowest of those that finish
    within the deadline when a cheaper one would not; or why none."""
    if best is None or best.per_million is None or best.outcome.plan is None:
        return msg(
            "training.none_feasible",
            "No GPU model and option can run it as asked; every candidate says why.",
        )
    gpu, option = gpu_name(kb, best.gpu_model), option_ref(best.outcome.option)
    cost = money_range(best.per_million, currency, PRICE_DIGITS)
    days = num(best.outcome.plan.calendar_days.expected, 1)
    late = [
        c
        for c in found
        if c.outcome.plan is not None
        and c.per_million is not None
        and not c.blocked
        and not c.feasible
        and c.per_million.expected < best.per_million.expected
    ]
    if late:
        cheaper = min(late, key=lambda c: c.per_million.expected if c.per_million is not None else 0.0)
        assert cheaper.outcome.plan is not None and cheaper.per_million is not None
        return msg(
            "training.recommended_deadline",
            f"{gpu} on {option}: the lowest cost per million tokens of the candidates that finish in time ({cost}, "
            f"{days} days); {gpu_name(kb, cheaper.gpu_model)} on {option_ref(cheaper.outcome.option)} costs "
            f"{money_range(cheaper.per_million, currency, PRICE_DIGITS)} but needs "
            f"{num(cheaper.outcome.plan.calendar_days.expected, 1)} days.",
            gpu=gpu,
            option=option,
            cost=cost,
            days=days,
            other_gpu=gpu_name(kb, cheaper.gpu_model),
            other_option=option_ref(cheaper.outcome.option),
            other_cost=money_range(cheaper.per_million, currency, PRICE_DIGITS),
            other_days=num(cheaper.outcome.plan.calendar_days.expected, 1),
        )
    total = money_range(best.outcome.plan.total_cost, currency)
    upfront = best.outcome.plan.upfront_cost
    if best.outcome.plan.committed and upfront.expected > 0:
        return msg(
            "training.recommended_cost_commits",
            f"{gpu} on {option}: the lowest cost per million tokens ({cost}; {total} for the run's share), finishing "
            f"in {days} days; it commits {money_range(upfront, currency)} upfront, more than the run.",
            gpu=gpu,
            option=option,
            cost=cost,
            total=total,
            days=days,
            upfront=money_range(upfront, currency),
        )
    return msg(
        "training.recommended_cost",
        f"{gpu} on {option}: the lowest cost per million tokens ({cost}; {total} for the run), finishing in "
        f"{days} days.",
        gpu=gpu,
        option=option,
        cost=cost,
        total=total,
        days=days,
    )
