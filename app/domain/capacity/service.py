"""Capacity plans: a profile with its demand over the horizon in; every single option's portfolio and
the cost-optimal mix out (``app.core.capacity``), words in the request's language."""

from __future__ import annotations

import dataclasses

from app.core import capacity as cap
from app.core.errors import DomainError, NothingAssessable, UnknownReference
from app.core.model import METHODOLOGY_VERSION
from app.domain.capacity import schemas as s
from app.domain.decisions.schemas import ReasonCode
from app.domain.shared.convert import offer_read, range_read
from app.domain.shared.engine import Engine
from app.lib.i18n import DEFAULT_LANG, Lang, code_of, name_of, render

DAYS_PER_YEAR = 365.25


class InvalidDemand(DomainError):
    """The body's fields are each valid, but not together (422, naming the field)."""


def check(req: s.CapacityPlanCreate) -> None:
    """What the schema cannot say, as ``422`` naming the field."""
    months = req.horizon_years * cap.MONTHS_PER_YEAR
    if req.demand is not None and req.gpus is not None:
        raise InvalidDemand("give either gpus (one phase) or demand, not both", field="gpus")
    if req.demand is None and (req.gpus is None or req.utilization is None):
        raise InvalidDemand("give demand, or gpus and utilization", field="demand")
    if abs(months - round(months)) > 1e-9:
        raise InvalidDemand("horizon_years × 12 must be a whole number of months", field="horizon_years")
    if isinstance(req.demand, list):
        if not 1 <= len(req.demand) <= cap.MAX_PHASES:
            raise InvalidDemand(f"give 1 to {cap.MAX_PHASES} phases, not {len(req.demand)}", field="demand")
        total = sum(p.months for p in req.demand)
        if total != round(months):
            raise InvalidDemand(
                f"the phases' months sum to {total}, but horizon_years × 12 is {round(months)}", field="demand"
            )
    if isinstance(req.demand, s.GrowthCreate) and req.demand.utilization is None and req.utilization is None:
        raise InvalidDemand("give the growth's utilization, or utilization", field="demand.utilization")
    for n, o in enumerate(req.owned):
        if (o.age_years is None) == (o.purchase_date is None):
            raise InvalidDemand("give either age_years or purchase_date", field=f"owned[{n}].age_years")


class CapacityService:
    def __init__(self, engine: Engine, time_limit: float = cap.TIME_LIMIT_SECONDS) -> None:
        self.engine = engine
        self.time_limit = time_limit

    def demand(self, req: s.CapacityPlanCreate) -> tuple[cap.Phase, ...]:
        """The request's demand as phases (a plain ``gpus``/``utilization``: one phase)."""
        if isinstance(req.demand, list):
            return cap.phases([(p.months, p.gpus, p.utilization, p.largest_job_gpus) for p in req.demand])
        if isinstance(req.demand, s.GrowthCreate):
            u = req.demand.utilization if req.demand.utilization is not None else req.utilization
            assert u is not None  # the schema checks it
            return cap.growth(req.demand.start_gpus, req.demand.growth_per_year, u, req.horizon_years)
        assert req.gpus is not None and req.utilization is not None
        return cap.flat(req.gpus, req.utilization, req.horizon_years)

    def plan(self, req: s.CapacityPlanCreate, lang: Lang = DEFAULT_LANG) -> s.CapacityPlanRead:
        check(req)
        engine = self.engine
        kb = engine.knowledge()
        demand = self.demand(req)
        peak = max(demand, key=lambda p: p.gpus)
        profile = engine.profile(req.model_copy(update={"gpus": peak.gpus, "utilization": peak.utilization}), kb)
        owned = []
        for n, o in enumerate(req.owned):
            if o.gpu_model not in kb.gpus:
                raise UnknownReference(
                    f"unknown gpu_model '{o.gpu_model}' (see /v1/gpus)", field=f"owned[{n}].gpu_model"
                )
            bought = o.purchase_date or profile.as_of  # the schema lets through one of the two
            age = o.age_years if o.age_years is not None else max(0.0, (profile.as_of - bought).days / DAYS_PER_YEAR)
            owned.append(cap.Owned(o.gpu_model, o.count, age))
        with engine.tracer.start_as_current_span(
            "decision.capacity_plan", attributes={"knowledge.version": kb.version}
        ):
            result = cap.plan(
                engine,
                kb,
                profile,
                demand,
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
            phases=[s.PhaseRead(**dataclasses.asdict(p)) for p in demand],
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
        if p.kind == cap.HYBRID:
            name = name_of("capacity.hybrid", lang, "Cost-optimal mix")
        else:
            name = self.option_name(p.key.split(":", 1)[1], lang)
        priced = p.feasible and p.served_gpu_hours > 0
        return s.PortfolioRead(
            key=p.key,
            kind=p.kind,
            name=name,
            segments=[
                s.SegmentRead(
                    option=g.option,
                    name=self.option_name(g.option, lang),
                    offer=None if g.offer is None or g.offer.offer is None else offer_read(g.offer.offer, currency),
                    plan=g.plan,
                    gpus_by_phase=list(g.gpus_by_phase),
                    start_month=g.start_month,
                    acquired=g.acquired,
                    total_cost=range_read(g.price.total),
                    npv_cost=range_read(g.price.npv),
                    upfront_cost=range_read(g.price.upfront),
                )
                for g in p.segments
            ],
            total_cost=range_read(p.price.total) if priced else None,
            npv_cost=range_read(p.price.npv) if priced else None,
            upfront_cost=range_read(p.price.upfront) if priced else None,
            cost_per_useful_gpu_hour=range_read(p.per_useful_gpu_hour, 4) if priced else None,
            cost_per_effective_gpu_hour=range_read(p.per_effective_gpu_hour, 4) if priced else None,
            effective_npv_cost=round(p.objective, 2) if priced else None,
            feasible=p.feasible,
            reasons=[render(r, lang) for r in p.reasons],
            reason_codes=[ReasonCode(**code_of(r, lang)) for r in p.reasons],
        )
