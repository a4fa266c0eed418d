"""API v1 schemas of price comparisons, recommendations and batch evaluations."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import Field

from app.core.vocab import Language
from app.domain.shared.demand import PhaseRead, SegmentRead
from app.domain.shared.schemas import (
    ConfidenceRead,
    CostRead,
    DimensionScores,
    LineItemRead,
    OfferRead,
    ProfileAnswer,
    ProfileCreate,
    RangeRead,
)
from app.web.schemas import RequestModel

MAX_BATCH_PROFILES = 10_000
#: ``detail: "full"`` answers each profile's whole evaluation (about 11 KB and 15 ms a profile): at most this many
MAX_FULL_PROFILES = 500


class EvaluationCreate(RequestModel):
    profiles: list[ProfileCreate] = Field(min_length=1, max_length=MAX_BATCH_PROFILES)
    detail: Literal["scores", "full"] = Field(
        default="scores",
        description="`scores`: the ranking and scores of each profile, computed vectorised; `full`: also "
        "each profile's whole evaluation as POST /v1/recommendations answers it (reasons, figures), "
        f"several times the work and size of `scores`; at most {MAX_FULL_PROFILES} profiles (422 beyond).",
    )


class AlternativeRead(msgspec.Struct):
    """Another offer the option could buy, with its figures; why not, when it breaks a constraint."""

    offer: OfferRead
    annual_cost: RangeRead
    total_cost: RangeRead
    upfront_cost: RangeRead
    cost_per_useful_gpu_hour: RangeRead
    cost_per_effective_gpu_hour: RangeRead | None
    feasible: bool
    reasons: list[str]
    #: the cost per useful GPU-hour over the PFLOPS a GPU of the offer's model sustains at the profile's
    #: precision (null: the offer's GPU model is not named, or has no dense peak at the precision)
    cost_per_useful_pflop_hour: RangeRead | None = None


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
    #: why the option has no figures: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_code: str | None = None
    npv_cost: RangeRead | None = None
    equivalent_annual_cost: RangeRead | None = None
    cost_per_effective_gpu_hour: RangeRead | None = None
    #: cost per unit of work delivered: ``cost_per_useful_gpu_hour`` over the PFLOPS a GPU of the chosen
    #: offer's model sustains at the profile's ``precision`` (dense peak × MFU); null where the GPU model is
    #: not named (the source article's reference server) or has no dense peak at the precision
    cost_per_useful_pflop_hour: RangeRead | None = None
    #: what the effective cost adds to the cash: infrastructure work left to the team, waiting
    effective_extras: list[LineItemRead] = msgspec.field(default_factory=list)
    offer: OfferRead | None = None
    alternatives: list[AlternativeRead] = msgspec.field(default_factory=list)
    #: False when the chosen offer breaks a hard constraint of the profile (then every offer does)
    feasible: bool | None = None
    infeasible_reasons: list[str] = msgspec.field(default_factory=list)
    #: with a `demand` of several phases: the option's single portfolio (what it buys, commits or uses
    #: per phase); absent on a plain profile
    segments: list[SegmentRead] | UnsetType = UNSET


class ComparisonRead(ProfileAnswer):
    items: list[ComparisonItem]
    #: the `demand` as phases (absent on a plain profile); `gpus` and `utilization` are then its peak phase's
    demand: list[PhaseRead] | UnsetType = UNSET


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
    checkpoint_interval_hours: RangeRead | None = None


class UsabilityRead(msgspec.Struct):
    infra_fte_needed: RangeRead
    infra_fte_unmet: RangeRead
    setup_steps: str
    model_focus_share: RangeRead


class AppliedRuleRead(msgspec.Struct):
    key: str
    effect: str
    points: float | None
    reason: str


class ReasonCode(msgspec.Struct):
    """A reason as a message code with parameters (``app/i18n/locales``): parameters are strings in the
    answer's language, or nested ``{code, params}``; the code ``text.verbatim`` is a sentence shown as it is."""

    code: str
    params: dict[str, Any]


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
    #: why the option has no assessment: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_code: str | None = None
    offer: OfferRead | None = None
    #: cost per unit of work delivered, as a comparison item's: the cost per useful GPU-hour over the PFLOPS
    #: a GPU of the offer's model sustains at the profile's ``precision``; null where that is not known
    cost_per_useful_pflop_hour: RangeRead | None = None
    #: ``reasons`` as message codes with parameters, in the same order
    reason_codes: list[ReasonCode] = msgspec.field(default_factory=list)
    #: with a `demand` of several phases: the option's single portfolio (what it buys, commits or uses
    #: per phase); absent on a plain profile
    segments: list[SegmentRead] | UnsetType = UNSET


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
    #: the language of the sentences (``Accept-Language``; a stored recommendation keeps it)
    language: Language = "en"
    #: the `demand` as phases (absent on a plain profile); ``profile`` is then its peak phase's
    demand: list[PhaseRead] | UnsetType = UNSET


class RecommendationRead(Evaluation, kw_only=True):
    """A stored recommendation: the evaluation, with its id and time."""

    id: str
    created_at: dt.datetime


# gc=False: a batch of 10,000 profiles answers 30,000 entries and 10,000 results, whose tracking set off
# collections over the whole heap; neither holds anything that could lead back to it (an entry no
# container, a result only its list of entries), so neither can be part of a reference cycle
class ScoredEntry(msgspec.Struct, gc=False):
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
    cost_per_effective_gpu_hour: float | None = None
    #: why the option has no figures: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_code: str | None = None


class ScoredResult(msgspec.Struct, gc=False):
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
