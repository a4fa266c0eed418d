"""Demand over time, declared once for every endpoint that takes it (capacity plans, recommendations,
price comparisons; docs/methodology.md "Capacity plans" and "Demand over time on recommendations and
comparisons"): consecutive phases, or the growth shorthand, instead of a plain ``gpus``/``utilization``.

A field out of its bounds (a phase without GPUs, a utilization outside 0–1) and a plain profile
without ``gpus`` or ``utilization`` answer ``400`` naming the field, the service's answer to a schema
violation; what the schema cannot say (phases whose months do not cover the horizon, more than 120
phases, both ``gpus`` and ``demand``) answers ``422`` naming the field (``check``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypedDict, get_args

import msgspec
from pydantic import ConfigDict, Field, TypeAdapter, ValidatorFunctionWrapHandler, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError
from pydantic_core.core_schema import ErrorType

from app.core.errors import DomainError, NothingAssessable
from app.core.knowledge import Knowledge
from app.core.offers import per_machine
from app.core.types import Profile
from app.domain.shared.advisor import Advisor
from app.domain.shared.convert import offer_read, range_read
from app.domain.shared.schemas import MAX_GPUS, MIN_UTILIZATION, OfferRead, ProfileCreate, ProfileFields, RangeRead
from app.engine import capacity as cap
from app.engine import decision
from app.engine.insights.common import Variant
from app.i18n import DEFAULT_LANG, Lang
from app.web.schemas import RequestModel

MAX_GROWTH_PER_YEAR = 10.0
_ERROR_TYPES = frozenset(get_args(ErrorType))
#: the fields a plain profile needs and a demand replaces, with the error type of a null one
_PLAIN = {"gpus": "int_type", "utilization": "float_type"}


def _given(name: str) -> dict[str, Any]:
    """JSON Schema: the body has ``name``, not null."""
    return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}


class InvalidDemand(DomainError):
    """The body's fields are each valid, but not together (422, naming the field)."""


class PhaseCreate(RequestModel):
    """A stretch of the horizon with one demand."""

    months: int = Field(ge=1, le=cap.MAX_PHASES, description="Length of the phase, whole months.")
    gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs the team needs in the phase.")
    utilization: float = Field(ge=MIN_UTILIZATION, le=1, description="The useful share of the phase, 0.001–1.")
    largest_job_gpus: int | None = Field(
        default=None,
        ge=1,
        le=MAX_GPUS,
        description="GPUs of the phase's largest job (default: the phase's `gpus`): one option's capacity must "
        "hold it, so a phase whose GPUs run smaller jobs may be split between options.",
    )


class GrowthCreate(RequestModel):
    """The shorthand of a growing demand: yearly phases of ceil(start_gpus × (1 + growth_per_year)^i) GPUs."""

    start_gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs in the first year.")
    growth_per_year: float = Field(
        ge=0, le=MAX_GROWTH_PER_YEAR, description="Yearly growth as a fraction: 1.0 doubles each year."
    )
    utilization: float | None = Field(
        default=None, ge=MIN_UTILIZATION, le=1, description="Utilization of every phase; default: `utilization`."
    )


class DemandFields(ProfileFields):
    """A profile whose demand is a plain `gpus` and `utilization` (one phase over the horizon), or
    `demand`: phases, or the growth shorthand."""

    # _plain_or_demand, for the OpenAPI document (app.openapi.document copies it): without `demand`, `gpus` and
    # `utilization` are required. Said with `not` rather than a model-level anyOf, which generators split
    # into a type per branch
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "not": {"anyOf": [{"not": {"anyOf": [_given("demand"), _given(name)]}} for name in ("gpus", "utilization")]}
        },
    )

    gpus: int | None = Field(  # type: ignore[assignment]
        default=None, ge=1, le=MAX_GPUS, description="GPUs the team needs (one phase); give this or `demand`."
    )
    utilization: float | None = Field(  # type: ignore[assignment]
        default=None,
        ge=MIN_UTILIZATION,
        le=1,
        description="The team's useful share of the year, 0.001–1 (one phase, and the growth shorthand's default).",
    )
    demand: list[PhaseCreate] | GrowthCreate | None = Field(
        default=None,
        description=f"Consecutive phases covering the horizon (their months sum to horizon_years × 12; at most "
        f"{cap.MAX_PHASES}), or `{{start_gpus, growth_per_year}}` expanded to yearly phases; instead of `gpus`.",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _plain_or_demand(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Without ``demand``, ``gpus`` and ``utilization`` are required as on a plain profile (``400``
        naming each, listed with the body's other errors)."""
        missing: list[InitErrorDetails] = []
        if isinstance(data, dict) and data.get("demand") is None:
            for name, kind in _PLAIN.items():
                if name not in data:
                    missing.append(InitErrorDetails(type="missing", loc=(name,), input=data))
                elif data[name] is None:
                    missing.append(InitErrorDetails(type=kind, loc=(name,), input=None))
        try:
            found = handler(data)
        except ValidationError as exc:
            if not missing:
                raise
            raise ValidationError.from_exception_data(cls.__name__, [*missing, *_details(exc)]) from None
        if missing:
            raise ValidationError.from_exception_data(cls.__name__, missing)
        return found

    @model_validator(mode="before")
    @classmethod
    def _demand_shape(cls, data: Any) -> Any:
        """``demand`` as phases (a list) or the growth shorthand (an object), its errors located under
        ``demand`` itself (``demand.0.gpus``), not under the name of a union member."""
        if not isinstance(data, dict) or data.get("demand") is None:
            return data
        value = data["demand"]
        shape: TypeAdapter[Any] = _PHASES if isinstance(value, list) else _GROWTH
        try:
            return {**data, "demand": shape.validate_python(value, strict=True)}
        except ValidationError as exc:
            raise ValidationError.from_exception_data(
                cls.__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError("demand", str(e["msg"])),
                        loc=("demand", *e["loc"]),
                        input=e.get("input"),
                    )
                    for e in exc.errors()
                ],
            ) from None


class ComparisonCreate(DemandFields):
    """A price comparison: the options' costs for this profile (a plain one, or a demand over time)."""


class RecommendationCreate(DemandFields, ProfileCreate):
    """A team's profile for a recommendation (a plain one, or a demand over time); its ranking weights
    the four dimensions."""


_PHASES: TypeAdapter[list[PhaseCreate]] = TypeAdapter(list[PhaseCreate])
_GROWTH: TypeAdapter[GrowthCreate] = TypeAdapter(GrowthCreate)


def _details(exc: ValidationError) -> list[InitErrorDetails]:
    """A validation error's errors, to raise again with others."""
    found: list[InitErrorDetails] = []
    for e in exc.errors():
        kind = e["type"]
        detail = InitErrorDetails(
            type=kind if kind in _ERROR_TYPES else PydanticCustomError(kind, str(e["msg"])),
            loc=e["loc"],
            input=e.get("input"),
        )
        if "ctx" in e and kind in _ERROR_TYPES:
            detail["ctx"] = e["ctx"]
        found.append(detail)
    return found


def check(req: DemandFields, *, plain_in_months: bool = False) -> None:
    """What the schema cannot say, as ``422`` naming the field. ``plain_in_months``: a plain profile
    is priced as a phase too (a capacity plan's), so its horizon is whole months as well."""
    months = req.horizon_years * cap.MONTHS_PER_YEAR
    if req.demand is not None and req.gpus is not None:
        raise InvalidDemand("give either gpus (one phase) or demand, not both", field="gpus")
    if req.demand is None and (req.gpus is None or req.utilization is None):
        raise InvalidDemand("give demand, or gpus and utilization", field="demand")
    if req.demand is not None and req.largest_job_gpus is not None:
        raise InvalidDemand(
            "with demand, give each phase's largest_job_gpus (demand[i].largest_job_gpus; default its gpus)",
            field="largest_job_gpus",
        )
    if req.demand is None and not plain_in_months:
        return  # a plain profile's horizon is any number of years where it is not priced as phases
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
    if isinstance(req.demand, GrowthCreate) and req.demand.utilization is None and req.utilization is None:
        raise InvalidDemand("give the growth's utilization, or utilization", field="demand.utilization")


def phases(req: DemandFields) -> tuple[cap.Phase, ...]:
    """The request's demand as phases (a plain ``gpus``/``utilization``: one phase). ``check`` first."""
    if isinstance(req.demand, list):
        return cap.phases([(p.months, p.gpus, p.utilization, p.largest_job_gpus) for p in req.demand])
    if isinstance(req.demand, GrowthCreate):
        u = req.demand.utilization if req.demand.utilization is not None else req.utilization
        assert u is not None  # ``check`` checks it
        return cap.growth(req.demand.start_gpus, req.demand.growth_per_year, u, req.horizon_years)
    assert req.gpus is not None and req.utilization is not None
    return cap.flat(req.gpus, req.utilization, req.horizon_years)


@dataclasses.dataclass(frozen=True, slots=True)
class Assessed:
    """A request's profile (with a demand: its peak phase's) and every option's outcome; with a demand,
    its phases and, where it has several, each option's single portfolio (by option)."""

    profile: Profile
    outcomes: list[decision.Outcome]
    phases: tuple[cap.Phase, ...] | None = None
    portfolios: dict[str, cap.Portfolio] | None = None


class PlannerOptions(TypedDict):
    """What the capacity planner is told of the options served (``cap.plan``, ``cap.singles``)."""

    options: list[str]
    variants: list[Variant]
    owner: str | None
    #: the model's server size (the reference server's for a model without a server SKU)
    unit: int


def planner_options(advisor: Advisor, kb: Knowledge, gpu_model: str | None) -> PlannerOptions:
    """The options served as the capacity planner is told of them: keys, variants, the hardware's owner
    and the model's server size."""
    return PlannerOptions(
        options=list(advisor.options),
        variants=advisor.variants(),
        owner=advisor.host.owner(),
        unit=per_machine(kb, 1, gpu_model),
    )


def assessed(advisor: Advisor, req: ProfileFields, kb: Knowledge) -> Assessed:
    """The request's profile and every option's outcome. With a ``demand`` (docs/methodology.md
    "Demand over time on recommendations and comparisons"): the profile is the peak phase's and each
    option is priced as its single portfolio on the demand (``app.engine.capacity.singles``, as
    capacity plans price it); a demand of one phase is the plain profile of that phase."""
    if not isinstance(req, DemandFields) or req.demand is None:
        if isinstance(req, DemandFields):
            check(req)
        profile = advisor.profile(req, kb)
        return Assessed(profile, advisor.outcomes(profile, kb))
    check(req)
    demand = phases(req)
    peak = max(demand, key=lambda p: p.gpus)
    job = None if peak.largest_job_gpus == peak.gpus else peak.largest_job_gpus
    plain = req.model_copy(
        update={"gpus": peak.gpus, "utilization": peak.utilization, "largest_job_gpus": job, "demand": None}
    )
    profile = advisor.profile(plain, kb)
    outcomes = advisor.outcomes(profile, kb)
    if len(demand) == 1:
        return Assessed(profile, outcomes, demand)
    with advisor.tracer.start_as_current_span("decision.demand", attributes={"knowledge.version": kb.version}):
        singles = cap.singles(
            advisor,
            kb,
            profile,
            demand,
            **planner_options(advisor, kb, profile.gpu_model),
        )
    portfolios = {p.key.split(":", 1)[1]: p for p in singles.portfolios}
    errors = singles.tables.errors
    priced = []
    for o in outcomes:
        if o.assessment is None:
            priced.append(o)
        elif o.option in errors:
            code, error = errors[o.option]
            priced.append(decision.Outcome(o.option, None, error, code))
        else:
            a = cap.assessment_on(o.assessment, portfolios[o.option], profile.horizon_years)
            priced.append(decision.Outcome(o.option, a))
    if all(o.assessment is None for o in priced):
        raise NothingAssessable(
            "; ".join(f"{o.option}: {o.error}" for o in priced), field="gpu_model" if profile.gpu_model else None
        )
    return Assessed(profile, priced, demand, portfolios)


# ---- out ------------------------------------------------------------------------------------------


class PhaseRead(msgspec.Struct):
    start_month: int
    months: int
    gpus: int
    utilization: float
    largest_job_gpus: int


class SegmentRead(msgspec.Struct):
    """GPUs of one option per phase, and how they are had: `buy` (an owned cluster's tranche, kept to the
    end), `commit` (a reservation or subscription in whole terms), `use` (billed as used), `owned`
    (GPUs held already, counted in the demand's GPU model by sustained throughput), `bridge` (rented from
    the first day until a first cluster is installed)."""

    option: str
    name: str
    offer: OfferRead | None
    plan: str | None
    gpus_by_phase: list[int]
    start_month: int
    acquired: str
    total_cost: RangeRead
    npv_cost: RangeRead
    upfront_cost: RangeRead
    #: a tranche or reservation: the day after `as_of` it is ordered (its phase's start less its lead time;
    #: 0: at once, bridged until installed) and its lead time in days
    order_day: float | None = None
    lead_time_days: float | None = None
    #: GPUs already owned: their model and count (`gpus_by_phase` counts them in the demand's GPU model)
    gpu_model: str | None = None
    owned_gpus: int | None = None


def phase_reads(demand: tuple[cap.Phase, ...]) -> list[PhaseRead]:
    return [
        PhaseRead(
            start_month=p.start_month,
            months=p.months,
            gpus=p.gpus,
            utilization=p.utilization,
            largest_job_gpus=p.largest_job_gpus,
        )
        for p in demand
    ]


def segment_reads(
    p: cap.Portfolio, currency: str, name: Callable[[str], str], lang: Lang = DEFAULT_LANG
) -> list[SegmentRead]:
    """A portfolio's segments as answers show them (``name``: an option's name in the answer's language,
    ``lang``; the offers named in it too)."""
    return [
        SegmentRead(
            option=g.option,
            name=name(g.option),
            offer=None if g.offer is None or g.offer.offer is None else offer_read(g.offer.offer, currency, lang),
            plan=g.plan,
            gpus_by_phase=list(g.gpus_by_phase),
            start_month=g.start_month,
            acquired=g.acquired,
            total_cost=range_read(g.price.total),
            npv_cost=range_read(g.price.npv),
            upfront_cost=range_read(g.price.upfront),
            order_day=None if g.order_day is None else round(g.order_day, 1),
            lead_time_days=None if g.lead_time_days is None else round(g.lead_time_days, 1),
            gpu_model=g.gpu_model,
            owned_gpus=g.owned_gpus,
        )
        for g in p.segments
    ]
