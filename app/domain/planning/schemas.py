"""API v1 schemas of training-run plans (docs/training-plans.md)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Annotated, Any

import msgspec
from pydantic import ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from app.core.vocab import DataSecurity, OpsTeam
from app.domain.decisions.schemas import ReasonCode
from app.domain.shared.schemas import (
    MAX_GPUS,
    Key,
    OfferRead,
    OptionFieldName,
    OptionFieldValue,
    ProfileFields,
    RangeRead,
    Region,
)
from app.engine.throughput import Precision
from app.web.schemas import AsOf, RequestModel

#: physical bounds: below them a plan is not a training run (a model of 5e-324 parameters answered
#: "0 GPU-hours", an MFU of 1e-300 numbers of 300 digits); out of bounds is a 400 naming the field
MIN_PARAMETERS = 1e6
MAX_PARAMETERS = 1e13
MIN_TOKENS = 1e6
MAX_TOKENS = 1e16
MIN_FLOPS = 1e15
MAX_FLOPS = 1e30
#: the lowest MFU a run could have and still be called one (published runs: 0.2–0.6); 1 is the GPU's peak
MIN_MFU = 0.01
CURRENCY = r"^[A-Z]{3}$"
#: GPU models a request may list to compare (the knowledge base holds about ten)
MAX_GPU_MODELS = 20
MAX_FINISH_DAYS = 3650
#: the profile's fields a training plan reads as every pricing endpoint does: declared once, on
#: ``ProfileFields`` (the run itself gives gpus, utilization, horizon and the largest job)
PROFILE_FIELDS = ("providers", "regions", "team_size", "data_security", "start_within_days", "capex_budget",
                  "delay_cost_per_day", "preemptible_share", "held_share", "buyer_country",
                  "option_fields")  # fmt: skip


def _profile(name: str, **changed: Any) -> Any:
    """``ProfileFields``' declaration of ``name``: the same bounds, default and description (but those
    ``changed``)."""
    declared = ProfileFields.model_fields[name]
    return FieldInfo.merge_field_infos(declared, **changed) if changed else copy.copy(declared)


class TrainingPlanCreate(RequestModel):
    """A training run: the model's size and either its token budget or its FLOP budget."""

    # _tokens_or_flops, for the OpenAPI document (app.openapi.document copies it): exactly one of the two is a number.
    # anyOf, not oneOf: the branches exclude each other already, and a linter cannot tell that an optional
    # property of type null does (Redocly's no-illogical-composition-keywords)
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "anyOf": [
                {"required": [given], "properties": {given: {"type": "number"}, other: {"type": "null"}}}
                for given, other in (("tokens", "flops"), ("flops", "tokens"))
            ]
        },
    )

    parameters: float = Field(ge=MIN_PARAMETERS, le=MAX_PARAMETERS, description="Model parameters (dense).")
    tokens: float | None = Field(
        default=None,
        ge=MIN_TOKENS,
        le=MAX_TOKENS,
        description="Training tokens; give this or `flops`, not both.",
    )
    flops: float | None = Field(
        default=None,
        ge=MIN_FLOPS,
        le=MAX_FLOPS,
        description="Training FLOPs; give this or `tokens`, not both.",
    )
    gpu_model: str | None = Field(
        default=None,
        min_length=1,
        max_length=40,
        description="A key from /v1/gpus: plan the run on this GPU model alone (the answer lists `items`); absent: "
        "the run is planned on every GPU model (or those of `gpu_models`) and the answer ranks `candidates`.",
    )
    gpu_models: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_GPU_MODELS,
        description="Keys from /v1/gpus to compare; absent (and no `gpu_model`): every GPU model with a price valid "
        "on `as_of` that runs at `precision`.",
    )
    precision: Precision = Field(
        default="bf16",
        description="The training precision whose dense peak and MFU give the throughput: bf16, or fp8 on the parts "
        "that have it.",
    )
    finish_within_days: float | None = Field(
        default=None,
        gt=0,
        le=MAX_FINISH_DAYS,
        description="Days within which the run must be finished, lead time included; a candidate that needs longer "
        "is not feasible.",
    )
    gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs the run uses.")
    mfu: float | None = Field(
        default=None,
        ge=MIN_MFU,
        le=1,
        description="Model FLOPs utilization, 0.01–1; default: the knowledge base's range (assumption */mfu).",
    )
    rental_plan: str | None = _profile(
        "rental_plan",
        description="The plan to rent on, one the options sell (`rental_plans` of /v1/options: on_demand, spot, "
        "reserved_1y, committed_use_1y…); absent: the cheapest feasible plan is chosen.",
    )
    currency: str = Field(default="CNY", pattern=CURRENCY, json_schema_extra={"pattern": CURRENCY})
    as_of: AsOf
    ops_team: OpsTeam = "none"
    providers: list[Key] | None = _profile("providers")
    regions: list[Region] | None = _profile("regions")
    team_size: int = _profile("team_size")
    data_security: DataSecurity = _profile("data_security")
    start_within_days: int | None = _profile("start_within_days")
    capex_budget: float | None = _profile("capex_budget")
    delay_cost_per_day: float | None = _profile("delay_cost_per_day")
    preemptible_share: float = _profile("preemptible_share")
    held_share: float | None = _profile("held_share")
    buyer_country: str | None = _profile("buyer_country")
    option_fields: dict[OptionFieldName, OptionFieldValue] | None = _profile("option_fields")

    @model_validator(mode="after")
    def _tokens_or_flops(self) -> TrainingPlanCreate:
        if self.tokens is not None and self.flops is not None:
            raise _field_error("flops", "give either tokens or flops, not both", self.flops)
        if self.tokens is None and self.flops is None:
            raise _field_error("tokens", "give either tokens or flops", None)
        if self.gpu_model is not None and self.gpu_models is not None:
            raise _field_error("gpu_models", "give either gpu_model or gpu_models, not both", self.gpu_models)
        return self


def _field_error(field: str, message: str, value: object) -> ValidationError:
    """A validation error located at ``field`` (a model validator's own errors would name no field)."""
    return ValidationError.from_exception_data(
        "TrainingPlanCreate",
        [InitErrorDetails(type=PydanticCustomError("tokens_or_flops", message), loc=(field,), input=value)],
    )


class TrainingPlanItem(msgspec.Struct):
    option: str
    name: str
    calendar_days: RangeRead | None
    training_days: RangeRead | None
    total_cost: RangeRead | None
    gpu_hours_billed: RangeRead | None
    lead_time_days: RangeRead | None = None
    interruptions: RangeRead | None = None
    hours_lost: RangeRead | None = None
    cost_per_useful_gpu_hour: RangeRead | None = None
    upfront_cost: RangeRead | None = None
    committed: bool | None = None
    error: str | None = None
    #: why the option has no plan: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_code: str | None = None
    #: whether the plan's offer can serve the run: it breaks none of the hard constraints a comparison of
    #: the same run applies (job shape, capacity…); None without a plan
    feasible: bool | None = None
    #: why not, as a comparison says it (``infeasible_reasons``), and as message codes
    reasons: list[str] = msgspec.field(default_factory=list)
    reason_codes: list[ReasonCode] = msgspec.field(default_factory=list)


class TrainingPlanRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    flops: float
    gpu_hours: RangeRead
    gpu_model: str
    gpus: int
    mfu: RangeRead
    pricing_basis: str | None
    notes: list[str]
    items: list[TrainingPlanItem]
    currency: str
    as_of: dt.date
    rental_plan: str | None
    ops_team: str


# ---- across GPU models ------------------------------------------------------------------------------


class WorkRead(msgspec.Struct):
    """What one GPU of a model sustains on the run, and where the figures come from."""

    gpu_model: str
    name: str
    precision: str
    #: dense peak TFLOPS at ``precision`` (the GPU model's row)
    peak_tflops: float
    #: model FLOPs utilization (its own row ``mfu_<precision>_<gpu_model>``, else the general one)
    mfu: RangeRead
    #: peak × MFU
    sustained_tflops: RangeRead
    #: the run's compute in GPU-hours of this model (high MFU gives the low end)
    gpu_hours: RangeRead
    #: the run's tokens a second on ``gpus`` of this model, at full speed
    tokens_per_second: RangeRead
    #: the sources of the peak and the MFU, as people read them
    sources: list[str]


class CandidateRead(msgspec.Struct):
    """One GPU model on one option: the option's cheapest qualifying offer of that model for the run."""

    gpu_model: str
    option: str
    name: str
    offer: OfferRead | None
    gpus: int
    #: the run's compute on this model (as ``WorkRead.gpu_hours``)
    gpu_hours: RangeRead
    calendar_days: RangeRead | None
    total_cost: RangeRead | None
    cost_per_million_tokens: RangeRead | None
    feasible: bool
    reasons: list[str]
    reason_codes: list[ReasonCode]
    gpu_hours_billed: RangeRead | None = None
    training_days: RangeRead | None = None
    lead_time_days: RangeRead | None = None
    cost_per_useful_gpu_hour: RangeRead | None = None
    upfront_cost: RangeRead | None = None
    committed: bool | None = None
    #: why the option has no plan on this model: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error: str | None = None
    error_code: str | None = None


class Choice(msgspec.Struct):
    gpu_model: str
    option: str


class TrainingCandidatesRead(msgspec.Struct):
    """A run planned on several GPU models: every GPU model × option, feasible first, then cheapest per token."""

    knowledge_version: str
    methodology_version: str
    parameters: float
    tokens: float
    flops: float
    gpus: int
    precision: str
    finish_within_days: float | None
    work: list[WorkRead]
    candidates: list[CandidateRead]
    recommended: Choice | None
    #: why the recommended candidate, or why none
    recommendation: str
    notes: list[str]
    currency: str
    as_of: dt.date
    rental_plan: str | None
    ops_team: str
    buyer_country: str | None
