"""Training-run planner: ``POST /v1/training-plans`` (docs/training-plans.md).

A model size and a token (or FLOP) budget in; per option, how long the run takes on the calendar
and what it costs, each ``{low, expected, high}``.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

import msgspec
from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import Body
from pydantic import ConfigDict, Field, JsonValue, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from app.api import schemas as s
from app.api.errors import BODY_PROBLEMS
from app.core import planner
from app.core.knowledge import MissingKnowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.ranges import Range
from app.core.text import money_range, num, pct
from app.services import Advisor, NothingAssessable, UnknownReference

MAX_PARAMETERS = 1e13
MAX_TOKENS = 1e16
MAX_FLOPS = 1e30
CURRENCY = r"^[A-Z]{3}$"
#: Litestar's schema generation drops a ``gt=0`` (falsy) on an optional number: restate it for the document
POSITIVE: dict[str, JsonValue] = {"exclusiveMinimum": 0}


class TrainingPlanCreate(s.RequestModel):
    """A training run: the model's size and either its token budget or its FLOP budget."""

    # _tokens_or_flops, for the OpenAPI document (app.api.openapi copies it): exactly one of the two is a number
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "oneOf": [
                {"required": [given], "properties": {given: {"type": "number"}, other: {"type": "null"}}}
                for given, other in (("tokens", "flops"), ("flops", "tokens"))
            ]
        },
    )

    parameters: float = Field(gt=0, le=MAX_PARAMETERS, description="Model parameters (dense).")
    tokens: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TOKENS,
        description="Training tokens; give this or `flops`, not both.",
        json_schema_extra=POSITIVE,
    )
    flops: float | None = Field(
        default=None,
        gt=0,
        le=MAX_FLOPS,
        description="Training FLOPs; give this or `tokens`, not both.",
        json_schema_extra=POSITIVE,
    )
    gpu_model: str = Field(min_length=1, max_length=40, description="A key from /v1/gpus: whose throughput to use.")
    gpus: int = Field(ge=1, le=s.MAX_GPUS, description="GPUs the run uses.")
    mfu: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Model FLOPs utilization, 0–1; default: the knowledge base's range (assumption */mfu).",
        json_schema_extra=POSITIVE,
    )
    rental_plan: Literal["on_demand", "reserved_1y"] = "on_demand"
    currency: str = Field(default="CNY", pattern=CURRENCY, json_schema_extra={"pattern": CURRENCY})
    as_of: s.AsOf
    ops_team: Literal["none", "basic", "professional"] = "none"

    @model_validator(mode="after")
    def _tokens_or_flops(self) -> TrainingPlanCreate:
        if self.tokens is not None and self.flops is not None:
            raise _field_error("flops", "give either tokens or flops, not both", self.flops)
        if self.tokens is None and self.flops is None:
            raise _field_error("tokens", "give either tokens or flops", None)
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
    calendar_days: s.RangeRead | None
    training_days: s.RangeRead | None
    total_cost: s.RangeRead | None
    gpu_hours_billed: s.RangeRead | None
    lead_time_days: s.RangeRead | None = None
    interruptions: s.RangeRead | None = None
    hours_lost: s.RangeRead | None = None
    cost_per_useful_gpu_hour: s.RangeRead | None = None
    upfront_cost: s.RangeRead | None = None
    committed: bool | None = None
    error: str | None = None


class TrainingPlanRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    flops: float
    gpu_hours: s.RangeRead
    gpu_model: str
    gpus: int
    mfu: s.RangeRead
    pricing_basis: str | None
    notes: list[str]
    items: list[TrainingPlanItem]
    currency: str
    as_of: dt.date
    rental_plan: str
    ops_team: str


def _rng(r: Range, ndigits: int = 2) -> s.RangeRead:
    return s.RangeRead(round(r.low, ndigits), round(r.expected, ndigits), round(r.high, ndigits))


def _words(r: Range, unit: str) -> str:
    if r.is_point:
        return f"{num(r.expected)} {unit}"
    return f"{num(r.low)}–{num(r.high)} {unit} (expected {num(r.expected)})"


def plan(advisor: Advisor, req: TrainingPlanCreate) -> TrainingPlanRead:
    kb = advisor.knowledge()
    gpu = kb.gpus.get(req.gpu_model)
    if gpu is None:
        raise UnknownReference(f"unknown gpu_model '{req.gpu_model}' (see /v1/gpus)", field="gpu_model")
    if req.currency not in kb.currencies:
        raise UnknownReference(
            f"no prices in {req.currency}; the knowledge base has {', '.join(sorted(kb.currencies))}",
            field="currency",
        )
    if req.mfu is not None:
        mfu = Range.point(req.mfu)
        mfu_note = f"MFU {pct(req.mfu)} as given."
    else:
        try:
            row = kb.assumption("*", planner.MFU_KEY)
        except MissingKnowledge as exc:
            raise UnknownReference(f"{exc}: send mfu", field="mfu") from exc
        mfu = row.value
        mfu_note = (
            f"MFU {pct(mfu.low)}–{pct(mfu.high)} (expected {pct(mfu.expected)}), the knowledge base's "
            f"assumption {row.ref.ref}; the high MFU gives the low end of every time and cost."
        )
    flops = planner.training_flops(req.parameters, req.tokens) if req.tokens is not None else float(req.flops or 0)
    try:
        hours = planner.gpu_hours(flops, gpu.bf16_dense_tflops, mfu)
    except (planner.PlanError, ZeroDivisionError) as exc:
        raise UnknownReference(f"the run cannot be planned: {exc}", field="mfu") from exc

    pricing = planner.pricing(kb, req.gpu_model)
    profile = planner.run_profile(
        gpus=req.gpus,
        hours=hours,
        as_of=req.as_of or advisor.today(),
        currency=req.currency,
        rental_plan=req.rental_plan,
        ops_team=req.ops_team,
        gpu_model=pricing.profile_gpu_model,
    )
    host = advisor.host
    outcomes = planner.plan_all(host.options, lambda o: host.assess(o, profile, kb), profile, hours)
    if outcomes and all(o.plan is None for o in outcomes):
        raise NothingAssessable("; ".join(f"{o.option}: {o.error}" for o in outcomes))

    notes = [
        f"{flops:.3g} FLOPs on {req.gpus} × {gpu.name} ({num(gpu.bf16_dense_tflops)} dense BF16 TFLOPS): "
        f"{_words(hours, 'GPU-hours')}.",
        mfu_note,
    ]
    if pricing.note:
        notes.append(pricing.note)
    notes.append(
        "Each option is assessed at full load for the run's expected length "
        f"({num(profile.horizon_years * 365, 1)} days) and charged its own cost per useful GPU-hour."
    )
    items = []
    for o in outcomes:
        name = host.options[o.option].spec.name
        p = o.plan
        if p is None:
            items.append(TrainingPlanItem(o.option, name, None, None, None, None, error=o.error))
            continue
        if p.committed and o.assessment is not None:
            c = o.assessment.cost
            notes.append(
                f"{name} commits more than the run ({money_range(c.upfront, profile.currency)} upfront, "
                f"{money_range(c.annual, profile.currency)} a year); its cost here is the run's share at its "
                "full-load price per useful GPU-hour."
            )
        items.append(
            TrainingPlanItem(
                option=o.option,
                name=name,
                calendar_days=_rng(p.calendar_days),
                training_days=_rng(p.training_days),
                total_cost=_rng(p.total_cost),
                gpu_hours_billed=_rng(p.gpu_hours_billed),
                lead_time_days=_rng(p.lead_time_days, 4),
                interruptions=_rng(p.interruptions),
                hours_lost=_rng(p.hours_lost),
                cost_per_useful_gpu_hour=_rng(p.cost_per_useful_gpu_hour, 4),
                upfront_cost=_rng(p.upfront_cost),
                committed=p.committed,
            )
        )
    return TrainingPlanRead(
        knowledge_version=kb.version,
        methodology_version=METHODOLOGY_VERSION,
        flops=flops,
        gpu_hours=_rng(hours),
        gpu_model=req.gpu_model,
        gpus=req.gpus,
        mfu=_rng(mfu, 4),
        pricing_basis=pricing.server.key if pricing.server else None,
        notes=notes,
        items=items,
        currency=profile.currency,
        as_of=profile.as_of,
        rental_plan=profile.rental_plan,
        ops_team=profile.ops_team,
    )


class PlanningController(Controller):
    path = "/v1"
    tags = ["planning"]

    @post(
        "/training-plans",
        operation_id="createTrainingPlan",
        opt={"scope": "decisions:run"},
        summary="Plan a training run: calendar time and cost on each option",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def create_training_plan(
        self, advisor: NamedDependency[Advisor], data: Annotated[TrainingPlanCreate, Body()]
    ) -> TrainingPlanRead:
        return plan(advisor, data)
