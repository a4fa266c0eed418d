"""API v1 edge types: strict pydantic models in (``false`` is not a number), msgspec Structs out."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

MAX_GPUS = 1_000_000
MAX_HORIZON_YEARS = 10
MAX_TEAM_SIZE = 100_000
MAX_START_DAYS = 3650
MAX_BATCH_PROFILES = 10_000
#: below this a per-useful-GPU-hour cost overflows to infinity (JSON null): 0.001 is ~9 useful hours per GPU a year
MIN_UTILIZATION = 0.001


def _iso_date(value: Any) -> Any:
    """Inputs are validated strictly (no coercion), but JSON has no date type: accept ISO 8601 text."""
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError("must be a date in ISO 8601 form, YYYY-MM-DD") from None
    return value


def _integral(value: Any) -> Any:
    """JSON has one number type: ``8.0`` is the integer 8, as JSON Schema says; ``8.5``, ``"8"``, ``true`` are not."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


AsOf = Annotated[
    dt.date | None,
    BeforeValidator(_iso_date),
    Field(default=None, description="Price date (ISO 8601); default: today (UTC)."),
]


class RequestModel(BaseModel):
    """Strict request model: no coercion (``false`` is not a number, ``"8"`` not an int) and no unknown fields.

    A model-level ``json_schema_extra`` (``anyOf``, ``oneOf``, ``allOf``, ``not``) is copied into the OpenAPI
    document by ``app.api.openapi``: the place to state what a model validator checks.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        ints = {name for name, f in cls.model_fields.items() if f.annotation in (int, int | None)}
        return {k: _integral(v) if k in ints else v for k, v in data.items()}


class Weights(RequestModel):
    """Relative importance of the four dimensions; normalised to sum to 1. Missing ones count 0."""

    # _not_all_zero, for the OpenAPI document: at least one weight above 0
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [k], "properties": {k: {"type": "number", "exclusiveMinimum": 0}}}
                for k in ("cost", "efficiency", "stability", "usability")
            ]
        }
    )

    cost: float = Field(default=0.0, ge=0, le=1000)
    efficiency: float = Field(default=0.0, ge=0, le=1000)
    stability: float = Field(default=0.0, ge=0, le=1000)
    usability: float = Field(default=0.0, ge=0, le=1000)

    @model_validator(mode="after")
    def _not_all_zero(self) -> Weights:
        if self.cost + self.efficiency + self.stability + self.usability <= 0:
            raise ValueError("weights must not all be zero")
        return self


class ComparisonCreate(RequestModel):
    """A price comparison: the options' costs for this much compute."""

    gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs the team needs.")
    utilization: float = Field(ge=MIN_UTILIZATION, le=1, description="The team's useful share of the year, 0.001–1.")
    horizon_years: float = Field(ge=0.01, le=MAX_HORIZON_YEARS, description="Years the decision covers (0.01–10).")
    rental_plan: Literal["on_demand", "reserved_1y"] = "on_demand"
    currency: str = Field(default="CNY", pattern=r"^[A-Z]{3}$")
    as_of: AsOf
    gpu_model: str | None = Field(
        default=None,
        min_length=1,
        max_length=40,
        description="A key from /v1/gpus; default: the reference server.",
    )


class ProfileCreate(ComparisonCreate):
    """A team's profile, for a recommendation."""

    team_size: int = Field(default=10, ge=1, le=MAX_TEAM_SIZE)
    ops_team: Literal["none", "basic", "professional"] = "none"
    data_security: Literal["standard", "high", "extreme"] = "standard"
    start_within_days: int = Field(default=30, ge=0, le=MAX_START_DAYS)
    capex_budget: float | None = Field(
        default=None, ge=0, le=1e13, description="Largest upfront outlay allowed, in `currency`."
    )
    weights: Weights | None = None


class EvaluationCreate(RequestModel):
    profiles: list[ProfileCreate] = Field(min_length=1, max_length=MAX_BATCH_PROFILES)
    detail: Literal["scores", "full"] = Field(
        default="scores",
        description="`scores`: the ranking and scores of each profile, computed vectorised; `full`: also "
        "each profile's whole evaluation as POST /v1/recommendations answers it (reasons, figures), "
        "about a millisecond a profile.",
    )


# ---- out ------------------------------------------------------------------------------------


class RangeRead(msgspec.Struct):
    low: float
    expected: float
    high: float


class SourceRead(msgspec.Struct):
    table: str
    ref: str
    source: str
    quality: str


class LineItemRead(msgspec.Struct):
    key: str
    label: str
    annual: RangeRead
    upfront: RangeRead
    basis: str
    sources: list[SourceRead]


class ComparisonItem(msgspec.Struct):
    option: str
    name: str
    plugin: str
    annual_cost: RangeRead | None
    total_cost: RangeRead | None
    upfront_cost: RangeRead | None
    cost_per_useful_gpu_hour: RangeRead | None
    useful_gpu_hours_per_year: float | None
    paid_gpu_hours_per_year: RangeRead | None
    committed: bool | None
    breakdown: list[LineItemRead]
    error: str | None = None


class ComparisonRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    currency: str
    as_of: dt.date
    gpus: int
    utilization: float
    horizon_years: float
    rental_plan: str
    items: list[ComparisonItem]


class EfficiencyRead(msgspec.Struct):
    lead_time_days: RangeRead
    setup_minutes_per_run: RangeRead
    execution_efficiency: RangeRead
    productive_share: RangeRead


class StabilityRead(msgspec.Struct):
    interruptions_per_year: RangeRead
    hours_lost_per_interruption: RangeRead
    lost_gpu_hours_per_year: RangeRead
    goodput: RangeRead


class UsabilityRead(msgspec.Struct):
    infra_fte_needed: RangeRead
    infra_fte_unmet: RangeRead
    setup_steps: str
    model_focus_share: RangeRead


class CostRead(msgspec.Struct):
    annual_cost: RangeRead
    total_cost: RangeRead
    upfront_cost: RangeRead
    cost_per_useful_gpu_hour: RangeRead


class DimensionScores(msgspec.Struct):
    cost: float
    efficiency: float
    stability: float
    usability: float


class AppliedRuleRead(msgspec.Struct):
    key: str
    effect: str
    points: float | None
    reason: str


class RankingEntry(msgspec.Struct):
    option: str
    name: str
    rank: int
    score: float
    scores: DimensionScores
    fit: float
    feasible: bool
    reasons: list[str]
    rules_applied: list[AppliedRuleRead]
    cost: CostRead | None
    efficiency: EfficiencyRead | None
    stability: StabilityRead | None
    usability: UsabilityRead | None
    error: str | None = None


class Percentiles(msgspec.Struct):
    p10: float
    p50: float
    p90: float


class OptionUncertaintyRead(msgspec.Struct):
    annual_cost: Percentiles
    total_cost: Percentiles
    probability_first: float


class ConfidenceRead(msgspec.Struct):
    """Monte Carlo over the knowledge base's ranges (docs/methodology.md "Uncertainty")."""

    draws: int
    seed: int
    distribution: str
    options: dict[str, OptionUncertaintyRead]
    errors: dict[str, str]


class Evaluation(msgspec.Struct):
    recommended_option: str | None
    knowledge_version: str
    methodology_version: str
    profile: dict[str, Any]
    weights: DimensionScores
    ranking: list[RankingEntry]
    #: how likely each option is best, given the ranges (recommendations only)
    confidence: ConfidenceRead | None = None
    #: the own-versus-rent break-even in one sentence (recommendations only)
    break_even: str | None = None


class RecommendationRead(Evaluation, kw_only=True):
    """A stored recommendation: the evaluation, with its id and time."""

    id: str
    created_at: dt.datetime


class ScoredEntry(msgspec.Struct):
    option: str
    rank: int
    score: float
    scores: DimensionScores
    fit: float
    feasible: bool
    annual_cost: float | None
    total_cost: float | None
    cost_per_useful_gpu_hour: float | None
    error: str | None = None


class ScoredResult(msgspec.Struct):
    """One profile's ranking: what a recommendation would rank, without its sentences."""

    recommended_option: str | None
    ranking: list[ScoredEntry]


class EvaluationsRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    detail: str
    results: list[ScoredResult]
    #: with ``detail: full``: each profile's whole evaluation, in the order of ``profiles``
    evaluations: list[Evaluation] | None = None


class OptionRead(msgspec.Struct):
    key: str
    name: str
    description: str
    plugin: str
    plugin_version: str


class Page(msgspec.Struct):
    knowledge_version: str
    total: int
    limit: int
    offset: int


class OptionList(msgspec.Struct):
    items: list[OptionRead]


class GpuRead(msgspec.Struct):
    key: str
    vendor: str
    name: str
    memory_gb: float
    memory_bandwidth_gbps: float | None
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None
    interconnect: str
    interconnect_gbps: float | None
    tdp_w: int | None
    source: str
    source_quality: str
    notes: str | None


class GpuList(Page):
    items: list[GpuRead]


class ServerRead(msgspec.Struct):
    key: str
    name: str
    gpu_model_key: str | None
    gpus_per_server: int
    power_kw: float | None
    reference: bool
    source: str
    source_quality: str
    notes: str | None


class ServerList(Page):
    items: list[ServerRead]


class PriceRead(msgspec.Struct):
    id: int
    option: str
    provider: str
    item: str
    subject: str
    unit: str
    low: float
    expected: float
    high: float
    currency: str
    region: str
    valid_from: dt.date
    valid_to: dt.date | None
    source: str
    source_quality: str
    notes: str | None


class PriceList(Page):
    items: list[PriceRead]


class AssumptionRead(msgspec.Struct):
    option: str
    key: str
    unit: str
    low: float
    expected: float
    high: float
    source: str
    source_quality: str
    rationale: str | None


class AssumptionList(Page):
    items: list[AssumptionRead]


class ConditionRead(msgspec.Struct):
    field: str
    op: str
    value: Any


class RuleRead(msgspec.Struct):
    key: str
    option: str
    description: str
    match: str
    conditions: list[ConditionRead]
    effect: str
    points: float | None
    reason: str
    rationale: str
    source: str
    source_quality: str


class RuleList(Page):
    items: list[RuleRead]


class KnowledgeVersionRead(msgspec.Struct):
    version: str
    content_hash: str
    created_at: dt.datetime
    note: str
    summary: dict[str, Any]


class HealthRead(msgspec.Struct):
    status: Literal["ok", "unavailable"]
    checks: dict[str, Any]


class FieldError(msgspec.Struct):
    field: str
    message: str


class Problem(msgspec.Struct, omit_defaults=True):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    field: str | None = None
    errors: list[FieldError] | None = None
    request_id: str | None = None
