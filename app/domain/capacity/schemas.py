"""API v1 schemas of capacity plans (docs/methodology.md "Capacity plans"): a team's profile with a
demand that changes over the horizon and the GPUs it owns already; portfolios back.

A field out of its bounds (a phase without GPUs, a utilization outside 0–1) answers ``400`` naming it,
the service's answer to a schema violation; what the schema cannot say (phases whose months do not
cover the horizon, more than 120 phases, both ``gpus`` and ``demand``, both or neither of an owned
entry's ``age_years`` and ``purchase_date``) answers ``422`` naming the field
(``app.domain.capacity.service.check``), and so does an owned GPU model the knowledge base lacks."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
from pydantic import Field, TypeAdapter, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from app.core.capacity import MAX_PHASES
from app.domain.decisions.schemas import ReasonCode
from app.domain.shared.schemas import MAX_GPUS, MIN_UTILIZATION, OfferRead, ProfileCreate, RangeRead
from app.lib.schemas import RequestModel

MAX_GROWTH_PER_YEAR = 10.0
MAX_AGE_YEARS = 20.0


class PhaseCreate(RequestModel):
    """A stretch of the horizon with one demand."""

    months: int = Field(ge=1, le=MAX_PHASES, description="Length of the phase, whole months.")
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


class OwnedCreate(RequestModel):
    """GPUs the team holds already: used first, kept or resold as the plan says."""

    gpu_model: str = Field(min_length=1, max_length=40, description="A key from /v1/gpus.")
    count: int = Field(ge=1, le=MAX_GPUS, description="How many GPUs.")
    age_years: float | None = Field(default=None, ge=0, le=MAX_AGE_YEARS, description="Their age at `as_of`.")
    purchase_date: dt.date | None = Field(default=None, description="When they were bought (instead of `age_years`).")

    @model_validator(mode="before")
    @classmethod
    def _date(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("purchase_date"), str):
            try:
                return {**data, "purchase_date": dt.date.fromisoformat(data["purchase_date"])}
            except ValueError:
                raise _error(
                    "purchase_date", "must be a date in ISO 8601 form, YYYY-MM-DD", data["purchase_date"]
                ) from None
        return data


class CapacityPlanCreate(ProfileCreate):
    """A team's profile (as for recommendations) with its demand over the horizon: `demand` (phases or
    the growth shorthand), or a plain `gpus` and `utilization` (one phase)."""

    gpus: int | None = Field(  # type: ignore[assignment]
        default=None, ge=1, le=MAX_GPUS, description="GPUs the team needs (one phase); give this or `demand`."
    )
    utilization: float | None = Field(  # type: ignore[assignment]
        default=None,
        ge=MIN_UTILIZATION,
        le=1,
        description="The team's useful share of the year (one phase, and the growth shorthand's default).",
    )
    demand: list[PhaseCreate] | GrowthCreate | None = Field(
        default=None,
        description=f"Consecutive phases covering the horizon (their months sum to horizon_years × 12; at most "
        f"{MAX_PHASES}), or `{{start_gpus, growth_per_year}}` expanded to yearly phases.",
    )
    owned: list[OwnedCreate] = Field(default_factory=list, max_length=20, description="GPUs already owned.")

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
                "CapacityPlanCreate",
                [
                    InitErrorDetails(
                        type=PydanticCustomError("demand", str(e["msg"])),
                        loc=("demand", *e["loc"]),
                        input=e.get("input"),
                    )
                    for e in exc.errors()
                ],
            ) from None


_PHASES: TypeAdapter[list[PhaseCreate]] = TypeAdapter(list[PhaseCreate])
_GROWTH: TypeAdapter[GrowthCreate] = TypeAdapter(GrowthCreate)


def _error(field: str, message: str, value: object) -> ValidationError:
    """A validation error located at ``field`` (``a.b`` for a nested one)."""
    return ValidationError.from_exception_data(
        "CapacityPlanCreate",
        [
            InitErrorDetails(
                type=PydanticCustomError("capacity_plan", message), loc=tuple(field.split(".")), input=value
            )
        ],
    )


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
    (GPUs held already)."""

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


class SavingRead(msgspec.Struct):
    """What the recommended portfolio saves against the best single option."""

    against: str
    npv_cost: RangeRead
    #: the share of the single option's expected effective NPV saved
    share: float


class PortfolioRead(msgspec.Struct):
    key: str
    kind: str
    name: str
    segments: list[SegmentRead]
    total_cost: RangeRead | None
    npv_cost: RangeRead | None
    upfront_cost: RangeRead | None
    cost_per_useful_gpu_hour: RangeRead | None
    cost_per_effective_gpu_hour: RangeRead | None
    #: the expected NPV of the effective cost: what the optimiser minimises and portfolios are ranked by
    effective_npv_cost: float | None
    feasible: bool
    reasons: list[str]
    reason_codes: list[ReasonCode]


class CapacityPlanRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    currency: str
    as_of: dt.date
    horizon_years: float
    gpu_model: str | None
    phases: list[PhaseRead]
    portfolios: list[PortfolioRead]
    recommended: str | None
    saving_vs_best_single: SavingRead | None
    optimal: bool
    time_limit_seconds: float
    errors: dict[str, str]
    error_codes: dict[str, str]
    language: str
