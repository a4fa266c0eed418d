"""Capacity plans: a profile with its demand over the horizon in; every single option's portfolio and
the cost-optimal mix out (``app.engine.capacity``), words in the request's language."""

from __future__ import annotations

from app.domain.capacity import schemas as s
from app.domain.decisions.schemas import ReasonCode
from app.domain.shared import demand
from app.domain.shared.convert import range_read
from app.domain.shared.engine import Engine
from app.engine import capacity as cap
from app.i18n import DEFAULT_LANG, Lang, code_of, name_of, render
from app.sdk.errors import NothingAssessable, UnknownReference
from app.sdk.model import METHODOLOGY_VERSION

DAYS_PER_YEAR = 365.25


def check(req: s.CapacityPlanCreate) -> None:
    """What the schema cannot say, as ``422`` naming the field: the demand's (a plain profile is a
    phase too, so its horizon is whole months), and each owned entry's age."""
    demand.check(req, plain_in_months=True)
    for n, o in enumerate(req.owned):
        if (o.age_years is None) == (o.purchase_date is None):
            raise demand.InvalidDemand("give either age_years or purchase_date", field=f"owned[{n}].age_years")


class CapacityService:
    def __init__(self, engine: Engine, time_limit: float = cap.TIME_LIMIT_SECONDS) -> None:
        self.engine = engine
        self.time_limit = time_limit

    def plan(self, req: s.CapacityPlanCreate, lang: Lang = DEFAULT_LANG) -> s.CapacityPlanRead:
        check(req)
        engine = self.engine
        kb = engine.knowledge()
        phases = demand.phases(req)
        if req.demand is None and req.largest_job_gpus is not None:  # a plain profile's job shape, as everywhere
            phases = cap.flat(phases[0].gpus, phases[0].utilization, req.horizon_years, req.largest_job_gpus)
        peak = max(phases, key=lambda p: p.gpus)
        profile = engine.profile(req.model_copy(update={"gpus": peak.gpus, "utilization": peak.utilization}), kb)
        for n, o in enumerate(req.owned):
            if o.gpu_model not in kb.gpus:
                known = ", ".join(sorted(kb.gpus))
                raise UnknownReference(
                    f"unknown GPU model '{o.gpu_model}'; the GPU models are {known} (see /v1/gpus)",
                    field=f"owned[{n}].gpu_model",
                )
        wanted = cap.demand_model(kb, profile.gpu_model)
        owned = []
        for o in req.owned:
            bought = o.purchase_date or profile.as_of  # the schema lets through one of the two
            age = o.age_years if o.age_years is not None else max(0.0, (profile.as_of - bought).days / DAYS_PER_YEAR)
            factor = cap.equivalent_factor(kb, o.gpu_model, wanted)
            owned.append(cap.Owned(o.gpu_model, o.count, age, factor, wanted is None or o.gpu_model == wanted))
        with engine.tracer.start_as_current_span(
            "decision.capacity_plan", attributes={"knowledge.version": kb.version}
        ):
            result = cap.plan(
                engine,
                kb,
                profile,
                phases,
                owned,
                options=list(engine.options),
                variants=engine.variants(),
                owner=engine.host.owner(),
                unit=kb.server_for(profile.gpu_model).gpus_per_server,
                time_limit=self.time_limit,
            )
        if result.errors and len(result.errors) == len(engine.options):
            raise NothingAssessable(
                "; ".join(f"{o}: {e[1]}" for o, e in result.errors.items()),
                field="gpu_model" if profile.gpu_model else None,
            )
        currency = profile.currency
        return s.CapacityPlanRead(
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

    def option_name(self, option: str, lang: Lang) -> str:
        return name_of(f"option.{option}.name", lang, self.engine.options[option].spec.name)

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
