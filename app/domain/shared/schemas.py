"""API v1 schemas shared by the decision features: the profile a request sends, and the figures,
sources, scores and confidence answers carry. Strict pydantic models in (``false`` is not a number),
msgspec Structs out."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import msgspec
from pydantic import ConfigDict, Field, model_validator

from app.core.vocab import (
    DIMENSIONS,
    FIELD_NAME_PATTERN,
    PLAN_NAME_PATTERN,
    DataSecurity,
    OpsTeam,
    Precision,
    PriceBook,
)
from app.web.schemas import AsOf, RequestModel

MAX_GPUS = 1_000_000
MAX_HORIZON_YEARS = 10
MAX_TEAM_SIZE = 100_000
MAX_START_DAYS = 3650
#: below this a per-useful-GPU-hour cost overflows to infinity (JSON null): 0.001 is ~9 useful hours per GPU a year
MIN_UTILIZATION = 0.001
Key = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,60}$")]
Region = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_*-]+$")]
#: a profile field an option declares (``OptionSpec.profile_fields``): its name and a value of its kind
OptionFieldName = Annotated[str, Field(pattern=FIELD_NAME_PATTERN)]
OptionFieldValue = bool | int | float | Annotated[str, Field(max_length=64)]


class Weights(RequestModel):
    """Relative importance of the four dimensions; normalised to sum to 1. Missing ones count 0."""

    # _not_all_zero, for the OpenAPI document: at least one weight above 0
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [k], "properties": {k: {"type": "number", "exclusiveMinimum": 0}}} for k in DIMENSIONS
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


class ProfileFields(RequestModel):
    """A team's profile: what every endpoint that prices or ranks options reads, with the same meaning
    and the same defaults everywhere (a field absent from a request means the same on every endpoint;
    a constraint not given is no constraint)."""

    gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs the team needs.")
    utilization: float = Field(ge=MIN_UTILIZATION, le=1, description="The team's useful share of the year, 0.001–1.")
    horizon_years: float = Field(ge=0.01, le=MAX_HORIZON_YEARS, description="Years the decision covers (0.01–10).")
    rental_plan: str | None = Field(
        default=None,
        min_length=1,
        max_length=24,
        pattern=PLAN_NAME_PATTERN,
        description="The plan to rent on, one the options sell (`rental_plans` of /v1/options: on_demand, spot, "
        "reserved_1y, committed_use_1y…); absent: the cheapest feasible plan for the profile is chosen.",
    )
    currency: str = Field(
        default="CNY", pattern=r"^[A-Z]{3}$", description="Currency of every amount (see /v1/exchange-rates)."
    )
    as_of: AsOf
    gpu_model: str | None = Field(
        default=None,
        min_length=1,
        max_length=40,
        description="A key from /v1/gpus; default: the source article's reference server.",
    )
    providers: list[Key] | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        description="Only offers of these providers (keys from /v1/providers).",
    )
    regions: list[Region] | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        description="Only offers in these regions (as /v1/offers names them).",
    )

    team_size: int = Field(default=10, ge=1, le=MAX_TEAM_SIZE)
    ops_team: OpsTeam = "none"
    data_security: DataSecurity = "standard"
    start_within_days: int | None = Field(
        default=None,
        ge=0,
        le=MAX_START_DAYS,
        description="Days within which the compute is needed; absent: no deadline.",
    )
    capex_budget: float | None = Field(
        default=None, ge=0, le=1e13, description="Largest upfront outlay allowed, in `currency`."
    )
    delay_cost_per_day: float | None = Field(
        default=None,
        ge=0,
        le=1e12,
        description="What a day without the compute costs the team, in `currency`: prices waiting for it.",
    )
    largest_job_gpus: int | None = Field(
        default=None,
        ge=1,
        le=MAX_GPUS,
        description="GPUs of the largest single training job, 1–`gpus`; absent: `gpus`. A job larger than an "
        "offer's instance or server needs several of them joined by a training interconnect.",
    )
    preemptible_share: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of the work that tolerates preemption (0–1); spot capacity serves only a profile at 1.",
    )
    held_share: float | None = Field(
        default=None,
        ge=0.05,
        le=1,
        description="Share of the hours of held on-demand instances and held platform clusters the team turns into "
        "useful work (0.05–1); absent: the knowledge base's `held_utilization` (the article's 50 %).",
    )
    buyer_country: str | None = Field(
        default=None,
        pattern=r"^[A-Z]{2}$",
        description="ISO 3166-1 alpha-2 code of the buyer's jurisdiction (see /v1/regions): an own cluster's "
        "servers, staff, power and colocation come from there, and its availability rules apply.",
    )
    precision: Precision = Field(
        default="bf16",
        description="The precision the team trains at: each option's `cost_per_useful_pflop_hour` divides its cost "
        "per useful GPU-hour by the PFLOPS its offer's GPU model sustains at it (dense peak × MFU); `fp8` only "
        "on a `gpu_model` with an FP8 peak (see /v1/gpus), else 422. Prices do not depend on it.",
    )
    option_fields: dict[OptionFieldName, OptionFieldValue] | None = Field(
        default=None,
        max_length=64,
        description="Fields the loaded options declare beyond these, by name (`profile_fields` of /v1/options): "
        "each checked against its declaration; absent: its default.",
    )


class ProfileCreate(ProfileFields):
    """A team's profile, for a recommendation (its ranking weights the four dimensions)."""

    weights: Weights | None = None


# ---- out ------------------------------------------------------------------------------------


class StoredList(msgspec.Struct):
    """A page of stored rows: how many there are in all and the window asked for (its ``items`` follow)."""

    total: int
    limit: int
    offset: int


class ProfileAnswer(msgspec.Struct):
    """What an answer about one profile says first: the versions it was computed with and the profile's terms
    (its subclasses' own fields follow these)."""

    knowledge_version: str
    methodology_version: str
    currency: str
    as_of: dt.date
    gpus: int
    utilization: float
    horizon_years: float
    rental_plan: str | None


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
    #: cash over the horizon (capital: purchases and replacements less resale)
    total: RangeRead


class OfferRead(msgspec.Struct):
    """The offer an option was priced with: what procurement compares."""

    provider: str
    region: str
    gpu_model: str | None
    subject: str
    plan: str
    variant: str | None
    unit: str
    gpus_per_unit: int
    #: per ``unit``, in the answer's currency
    price: RangeRead
    currency: str
    quoted_price: RangeRead
    quoted_currency: str
    #: answer currency per quoted currency, when converted (through CNY, at the rates valid on as_of)
    exchange_rate: float | None
    valid_from: dt.date
    residency: str | None
    source: str
    source_quality: str
    #: ``list``: the price list every answer shares; ``org``: the organisation's private price book
    price_book: PriceBook
    #: the offer as people read it, in the answer's language: "AWS p5.48xlarge, us-east-1, Capacity Block"
    name: str | None = None


class CostRead(msgspec.Struct):
    annual_cost: RangeRead
    total_cost: RangeRead
    upfront_cost: RangeRead
    cost_per_useful_gpu_hour: RangeRead
    npv_cost: RangeRead | None = None
    equivalent_annual_cost: RangeRead | None = None
    cost_per_effective_gpu_hour: RangeRead | None = None


class DimensionScores(msgspec.Struct):
    cost: float
    efficiency: float
    stability: float
    usability: float


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
    #: per option in ``errors``: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_codes: dict[str, str] = msgspec.field(default_factory=dict)
