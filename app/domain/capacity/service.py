"""Capacity plans: a profile with its demand over the horizon in; every single option's portfolio and
the cost-optimal mix out (``app.engine.capacity``), words in the request's language. With
``gpu_models``, the same plan once more per GPU model listed (``per_model``): the demand converted into
the model's GPUs by sustained throughput, and the model whose recommended portfolio costs least."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from app.core.errors import InconsistentProfile, NothingAssessable, UnknownReference
from app.core.knowledge import Knowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.offers import gpu_name
from app.core.text import Msg, money, msg, option_ref, pct
from app.core.types import Profile
from app.domain.capacity import schemas as s
from app.domain.decisions.schemas import ReasonCode
from app.domain.shared import demand
from app.domain.shared.advisor import Advisor
from app.domain.shared.convert import range_read
from app.domain.shared.schemas import RangeRead
from app.engine import capacity as cap
from app.i18n import DEFAULT_LANG, Lang, code_of, name_of, render

DAYS_PER_YEAR = 365.25


def check(req: s.CapacityPlanCreate) -> None:
    """What the schema cannot say, as ``422`` naming the field: the demand's (a plain profile is a
    phase too, so its horizon is whole months), and each owned entry's age."""
    demand.check(req, plain_in_months=True)
    for n, o in enumerate(req.owned):
        if (o.age_years is None) == (o.purchase_date is None):
            raise demand.InvalidDemand("give either age_years or purchase_date", field=f"owned[{n}].age_years")


@dataclass(frozen=True, slots=True)
class _Planned:
    """The plan on one GPU model: its demand (in that model's GPUs), profile and the planner's answer."""

    gpu_model: str | None
    factor: float
    phases: tuple[cap.Phase, ...]
    profile: Profile
    result: cap.CapacityPlan


class CapacityService:
    def __init__(self, advisor: Advisor, time_limit: float = cap.TIME_LIMIT_SECONDS) -> None:
        self.advisor = advisor
        self.time_limit = time_limit

    def plan(self, req: s.CapacityPlanCreate, lang: Lang = DEFAULT_LANG) -> s.CapacityPlanRead:
        check(req)
        kb = self.advisor.knowledge()
        phases = demand.phases(req)
        if req.demand is None and req.largest_job_gpus is not None:  # a plain profile's job shape, as everywhere
            phases = cap.flat(phases[0].gpus, phases[0].utilization, req.horizon_years, req.largest_job_gpus)
        for n, o in enumerate(req.owned):
            if o.gpu_model not in kb.gpus:
                known = ", ".join(sorted(kb.gpus))
                raise UnknownReference(
                    f"unknown GPU model '{o.gpu_model}'; the GPU models are {known} (see /v1/gpus)",
                    field=f"owned[{n}].gpu_model",
                )
        models = None if req.gpu_models is None else self._models(kb, req)
        planned = self._planned(kb, req, phases, req.gpu_model)
        profile, result = planned.profile, planned.result
        if result.errors and len(result.errors) == len(self.advisor.options):
            raise NothingAssessable(
                "; ".join(f"{o}: {e[1]}" for o, e in result.errors.items()),
                field="gpu_model" if profile.gpu_model else None,
            )
        currency = profile.currency
        doc = s.CapacityPlanRead(
            knowledge_version=kb.version,
            methodology_version=METHODOLOGY_VERSION,
            currency=currency,
            as_of=profile.as_of,
            horizon_years=profile.horizon_years,
            gpu_model=profile.gpu_model,
            phases=demand.phase_reads(phases),
            portfolios=[self._portfolio(p, currency, lang) for p in result.portfolios],
            recommended=result.recommended,
            saving_vs_best_single=None
            if result.saving is None
            else s.SavingRead(
                against=result.saving[0], npv_cost=range_read(result.saving[1]), share=round(result.saving[2], 4)
            ),
            optimal=result.optimal,
            time_limit_seconds=self.time_limit,
            errors={o: e[1] for o, e in result.errors.items()},
            error_codes={o: e[0] for o, e in result.errors.items()},
            language=lang,
        )
        if models is None:
            return doc
        return self._per_model(kb, req, models, planned, doc, lang)

    def _planned(
        self,
        kb: Knowledge,
        req: s.CapacityPlanCreate,
        phases: tuple[cap.Phase, ...],
        gpu_model: str | None,
        factor: float = 1.0,
    ) -> _Planned:
        """The planner's answer for ``phases`` on ``gpu_model`` (the request's, or one it lists, the
        demand then ``factor`` of its GPUs for each of the request's): the profile of the peak phase,
        the GPUs owned counted in that model's GPUs by sustained throughput, the plan. The one step
        every GPU model's plan takes."""
        advisor = self.advisor
        peak = max(phases, key=lambda p: p.gpus)
        update: dict[str, object] = {"gpus": peak.gpus, "utilization": peak.utilization, "gpu_model": gpu_model}
        if req.largest_job_gpus is not None and gpu_model != req.gpu_model:  # a plain profile's, in the model's GPUs
            update["largest_job_gpus"] = peak.largest_job_gpus
        profile = advisor.profile(req.model_copy(update=update), kb)
        wanted = cap.demand_model(kb, profile.gpu_model)
        owned = []
        for o in req.owned:
            bought = o.purchase_date or profile.as_of  # the schema lets through one of the two
            age = o.age_years if o.age_years is not None else max(0.0, (profile.as_of - bought).days / DAYS_PER_YEAR)
            worth = cap.equivalent_factor(kb, o.gpu_model, wanted)
            owned.append(cap.Owned(o.gpu_model, o.count, age, worth, wanted is None or o.gpu_model == wanted))
        with advisor.tracer.start_as_current_span(
            "decision.capacity_plan", attributes={"knowledge.version": kb.version}
        ):
            result = cap.plan(
                advisor,
                kb,
                profile,
                phases,
                owned,
                **demand.planner_options(advisor, kb, profile.gpu_model),
                time_limit=self.time_limit,
            )
        return _Planned(profile.gpu_model, factor, phases, profile, result)

    def _models(self, kb: Knowledge, req: s.CapacityPlanCreate) -> list[str]:
        """The GPU models listed, each once in the request's order, checked before anything is planned:
        ``422`` naming ``gpu_models.<i>`` for one the knowledge base lacks, ``precision`` for one without a
        dense peak at it, and ``gpu_model`` where the demand's GPUs are of no named model (nothing to
        convert from)."""
        assert req.gpu_models is not None
        for i, key in enumerate(req.gpu_models):
            if key not in kb.gpus:
                text = f"unknown GPU model '{key}' (see /v1/gpus)"
                raise UnknownReference(
                    msg("problem.detail.unknown_gpu_model", text, gpu_model=key), field=f"gpu_models.{i}"
                )
            self.advisor.check_references(kb, currency=req.currency, gpu_model=key, precision=req.precision)
        if cap.demand_model(kb, req.gpu_model) is None:
            raise InconsistentProfile(
                "gpu_models needs gpu_model: the demand's GPUs are counted in it and converted into each listed "
                "model's by sustained throughput (without it they are the reference server's unnamed GPUs)",
                field="gpu_model",
            )
        return list(dict.fromkeys(req.gpu_models))

    def _per_model(
        self,
        kb: Knowledge,
        req: s.CapacityPlanCreate,
        models: Sequence[str],
        own: _Planned,
        doc: s.CapacityPlanRead,
        lang: Lang,
    ) -> s.CapacityPlanRead:
        """The plan answered on each GPU model listed (the demand's own model's plan is ``own``, not
        planned twice), and the model whose recommended portfolio has the lowest effective NPV."""
        wanted = cap.demand_model(kb, own.gpu_model)
        assert wanted is not None  # ``_models`` refused a demand in unnamed GPUs
        demand_hours = cap.useful_gpu_hours(own.phases)
        found: list[tuple[_Planned, cap.Portfolio | None]] = []
        for m in models:
            if m == own.gpu_model:
                planned = own
            else:
                factor = cap.equivalent_factor(kb, wanted, m, req.precision)
                planned = self._planned(kb, req, cap.in_gpus_of(own.phases, factor), m, factor)
            chosen = next((p for p in planned.result.portfolios if p.key == planned.result.recommended), None)
            found.append((planned, chosen))
        feasible = [(m, p) for m, p in found if p is not None]
        best = min(feasible, key=lambda f: f[1].objective, default=None)
        why = _why_model(kb, feasible, best, doc.currency)
        return msgspec.structs.replace(
            doc,
            per_model=[self._model_read(kb, m, p, demand_hours, doc.currency, lang) for m, p in found],
            recommended_gpu_model=None if best is None else best[0].gpu_model,
            gpu_model_reason=render(why, lang),
            gpu_model_reason_code=ReasonCode(**code_of(why, lang)),
        )

    def _model_read(
        self, kb: Knowledge, m: _Planned, p: cap.Portfolio | None, demand_hours: float, currency: str, lang: Lang
    ) -> s.PerModelRead:
        assert m.gpu_model is not None
        read = None if p is None else self._portfolio(p, currency, lang)
        reasons = list(p.reasons) if p is not None else _none_serves(m.result.portfolios)
        return s.PerModelRead(
            gpu_model=m.gpu_model,
            name=gpu_name(kb, m.gpu_model),
            gpus_per_demand_gpu=round(m.factor, 4),
            gpus_by_phase=[ph.gpus for ph in m.phases],
            recommended=None if p is None else p.key,
            portfolio_name=None if read is None else read.name,
            total_cost=None if read is None else read.total_cost,
            npv_cost=None if read is None else read.npv_cost,
            cost_per_useful_gpu_hour=None if p is None else _per_demand_gpu_hour(p, demand_hours),
            effective_npv_cost=None if read is None else read.effective_npv_cost,
            feasible=p is not None,
            optimal=m.result.optimal,
            reasons=[render(r, lang) for r in reasons],
            reason_codes=[ReasonCode(**code_of(r, lang)) for r in reasons],
        )

    def option_name(self, option: str, lang: Lang) -> str:
        return name_of(f"option.{option}.name", lang, self.advisor.options[option].spec.name)

    def _portfolio(self, p: cap.Portfolio, currency: str, lang: Lang) -> s.PortfolioRead:
        held = [g for g in p.segments if g.acquired != cap.BRIDGE]  # a bridge is its cluster's, not an option's
        if p.kind == cap.HYBRID and held and len({g.option for g in held}) == 1:  # a mix of one option: its name
            name = self.option_name(held[0].option, lang)
        elif p.kind == cap.HYBRID:
            name = name_of("capacity.hybrid", lang, "Cost-optimal mix")
        else:
            name = self.option_name(p.key.split(":", 1)[1], lang)
        priced = p.feasible and p.served_gpu_hours > 0
        return s.PortfolioRead(
            key=p.key,
            kind=p.kind,
            name=name,
            segments=demand.segment_reads(p, currency, lambda o: self.option_name(o, lang), lang),
            total_cost=range_read(p.price.total) if priced else None,
            npv_cost=range_read(p.price.npv) if priced else None,
            upfront_cost=range_read(p.price.upfront) if priced else None,
            cost_per_useful_gpu_hour=range_read(p.per_useful_gpu_hour, 4) if priced else None,
            cost_per_effective_gpu_hour=range_read(p.per_effective_gpu_hour, 4) if priced else None,
            effective_npv_cost=round(p.objective, 2) if priced else None,
            demand_gpu_hours=round(p.demand_gpu_hours, 1),
            served_gpu_hours=round(p.served_gpu_hours, 1) if p.segments else 0.0,
            feasible=p.feasible,
            reasons=[render(r, lang) for r in p.reasons],
            reason_codes=[ReasonCode(**code_of(r, lang)) for r in p.reasons],
        )


def _per_demand_gpu_hour(p: cap.Portfolio, demand_hours: float) -> RangeRead | None:
    """A portfolio's total cost per useful GPU-hour of the demand's own model: over the demand's useful
    GPU-hours as asked, times the share of its own demand (in its model's GPUs) the portfolio serves;
    on the demand's own model, its ``cost_per_useful_gpu_hour``."""
    if not p.feasible or p.served_gpu_hours <= 0 or p.demand_gpu_hours <= 0:
        return None
    return range_read(p.price.total * (1 / (demand_hours * p.served_gpu_hours / p.demand_gpu_hours)), 4)


def _none_serves(portfolios: Sequence[cap.Portfolio]) -> list[Msg]:
    """Why no portfolio serves the demand on a GPU model: every portfolio's reasons, each once (the mix's
    first)."""
    return list(dict.fromkeys(r for p in portfolios for r in p.reasons))


def _portfolio_ref(p: cap.Portfolio) -> Msg:
    """How a sentence names a portfolio: its option's (a single option's, or a mix of one option), else the mix."""
    held = {g.option for g in p.segments if g.acquired != cap.BRIDGE}
    if p.kind == cap.SINGLE:
        return option_ref(p.key.split(":", 1)[1])
    if len(held) == 1:
        return option_ref(next(iter(held)))
    return msg("capacity.hybrid", "Cost-optimal mix")


def _why_model(
    kb: Knowledge,
    feasible: Sequence[tuple[_Planned, cap.Portfolio]],
    best: tuple[_Planned, cap.Portfolio] | None,
    currency: str,
) -> Msg:
    """Why the recommended GPU model: its recommended portfolio's effective NPV, against the next
    cheapest model's; or that it is the only one that serves the demand; or that none does."""
    if best is None:
        return msg(
            "capacity.gpu_model_none",
            "No GPU model listed can serve the demand: each model's reasons say why.",
        )
    m, p = best
    assert m.gpu_model is not None
    gpu, portfolio, npv = gpu_name(kb, m.gpu_model), _portfolio_ref(p), money(p.objective, currency)
    others = sorted((f for f in feasible if f[0] is not m), key=lambda f: f[1].objective)
    if not others:
        return msg(
            "capacity.gpu_model_only",
            f"{gpu} is the only GPU model listed that serves the demand: {portfolio}, at an effective NPV of {npv}.",
            gpu=gpu,
            portfolio=portfolio,
            npv=npv,
        )
    n, q = others[0]
    assert n.gpu_model is not None
    other, other_npv = gpu_name(kb, n.gpu_model), money(q.objective, currency)
    more = pct(q.objective / p.objective - 1) if p.objective > 0 else pct(0.0)
    return msg(
        "capacity.gpu_model_cheapest",
        f"{gpu} serves the demand at the lowest effective NPV of the GPU models listed: {portfolio}, at {npv}; "
        f"the next, {other}, costs {other_npv} ({more} more).",
        gpu=gpu,
        portfolio=portfolio,
        npv=npv,
        other=other,
        other_npv=other_npv,
        more=more,
    )


__all__ = ["CapacityService", "check"]
