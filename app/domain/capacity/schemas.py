"""API v1 schemas of capacity plans (docs/methodology.md "Capacity plans"): a team's profile with a
demand that changes over the horizon (``app.domain.shared.demand``, the declaration recommendations
and price comparisons share) and the GPUs it owns already; portfolios back.

With ``gpu_models`` the plan is answered once per GPU model listed as well (``per_model``): the demand,
counted in GPUs of ``gpu_model``, converted into each model's GPUs by sustained throughput; the
portfolios stay the demand's own model's.

A field out of its bounds answers ``400`` naming it, the service's answer to a schema violation; what
the schema cannot say (the demand's, and both or neither of an owned entry's ``age_years`` and
``purchase_date``) answers ``422`` naming the field (``app.domain.capacity.service.check``), and so
do an owned or listed GPU model the knowledge base lacks, a listed model without a dense peak at
``precision``, and ``gpu_models`` without ``gpu_model``."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import Field, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from app.domain.decisions.schemas import ReasonCode
from app.domain.shared.demand import DemandFields, GrowthCreate, PhaseCreate, PhaseRead, SegmentRead
from app.domain.shared.schemas import MAX_GPUS, ProfileCreate, RangeRead
from app.web.schemas import RequestModel

MAX_AGE_YEARS = 20.0
#: owned entries a plan takes (each costs work: ``app.domain.shared.costs.capacity_plan``)
MAX_OWNED = 20
#: GPU models a plan may be answered for (each is a plan of its own: ``app.domain.shared.costs.capacity_plan``)
MAX_PLAN_GPU_MODELS = 6


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


class CapacityPlanCreate(DemandFields, ProfileCreate):
    """A team's profile (as for recommendations) with its demand over the horizon: `demand` (phases or
    the growth shorthand), or a plain `gpus` and `utilization` (one phase); and the GPUs it owns."""

    owned: list[OwnedCreate] = Field(default_factory=list, max_length=MAX_OWNED, description="GPUs already owned.")
    gpu_models: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PLAN_GPU_MODELS,
        description="Keys from /v1/gpus to answer the plan on as well (`per_model`): the demand's GPUs, counted in "
        "`gpu_model` (required then), converted into each model's GPUs by sustained throughput at `precision` "
        "(every model listed must have a dense peak at it); the portfolios stay `gpu_model`'s.",
    )


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
    #: useful GPU-hours the demand asks for, and those the portfolio serves: a feasible one serves them all
    #: (within 0.1 %), so portfolios are compared at equal served demand
    demand_gpu_hours: float
    served_gpu_hours: float
    feasible: bool
    reasons: list[str]
    reason_codes: list[ReasonCode]


class PerModelRead(msgspec.Struct):
    """The plan answered on one GPU model: the demand converted into its GPUs, the same planner run on
    them, and its recommended portfolio's headline figures."""

    gpu_model: str
    name: str
    #: GPUs of this model one GPU of the demand's model is worth: sustained TFLOPS of the demand's model
    #: ÷ this model's, at the request's precision
    gpus_per_demand_gpu: float
    #: the demand in this model's GPUs, phase by phase: ceil(gpus × gpus_per_demand_gpu)
    gpus_by_phase: list[int]
    #: the recommended portfolio's key and name (null: no portfolio serves the demand on this model)
    recommended: str | None
    portfolio_name: str | None
    total_cost: RangeRead | None
    npv_cost: RangeRead | None
    #: the total cost ÷ the useful GPU-hours of the demand's model it serves (the demand's as asked × the
    #: share of this model's demand served), not this model's GPU-hours: so models compare
    cost_per_useful_gpu_hour: RangeRead | None
    effective_npv_cost: float | None
    feasible: bool
    optimal: bool
    #: the recommended portfolio's reasons; without one, why none serves (each option's, or the mix's)
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
    #: with `gpu_models`: the plan on each model listed, in the request's order; absent without
    per_model: list[PerModelRead] | UnsetType = UNSET
    #: with `gpu_models`: the model whose recommended portfolio has the lowest effective NPV among the
    #: feasible ones (null: none is), and why in one sentence
    recommended_gpu_model: str | UnsetType | None = UNSET
    gpu_model_reason: str | UnsetType = UNSET
    gpu_model_reason_code: ReasonCode | UnsetType = UNSET


__all__ = [
    "CapacityPlanCreate",
    "CapacityPlanRead",
    "GrowthCreate",
    "OwnedCreate",
    "PerModelRead",
    "PhaseCreate",
    "PhaseRead",
    "PortfolioRead",
    "SavingRead",
    "SegmentRead",
]
