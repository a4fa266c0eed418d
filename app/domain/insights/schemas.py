"""API v1 schemas of the decision insights (break-even, sensitivity, uncertainty)."""

from __future__ import annotations

import msgspec
from pydantic import Field

from app.domain.shared.schemas import OptionUncertaintyRead, ProfileAnswer, ProfileCreate, RangeRead

MAX_DRAWS = 100_000


class UncertaintyCreate(ProfileCreate):
    """A profile plus the Monte Carlo settings."""

    draws: int = Field(default=10_000, ge=100, le=MAX_DRAWS, description="Monte Carlo draws.")
    seed: int = Field(default=0, ge=0, le=2**32 - 1, description="Random seed: the same seed, the same answer.")


class NullableRange(msgspec.Struct):
    low: float | None
    expected: float | None
    high: float | None


class CrossingRead(msgspec.Struct):
    first: str
    second: str
    utilization: NullableRange
    cheaper_above: dict[str, str | None]
    statement: str


class PaybackRead(msgspec.Struct):
    alternative: str
    months: NullableRange
    within_horizon: dict[str, bool]
    statement: str


class BreakEvenRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    utilization: float
    gpus: int
    crossings: list[CrossingRead]
    own_cheapest_from_gpus: NullableRange
    own_cheapest_statement: str
    paybacks: list[PaybackRead]
    errors: dict[str, str]
    #: per option in ``errors``: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_codes: dict[str, str] = msgspec.field(default_factory=dict)


class EffectRead(msgspec.Struct):
    cost_per_useful_gpu_hour_low: float
    cost_per_useful_gpu_hour_high: float
    score_low: float
    score_high: float


class InputSensitivityRead(msgspec.Struct):
    kind: str
    ref: str
    label: str
    unit: str
    low: float
    high: float
    swing: float
    effects: dict[str, EffectRead]


class BaselineRead(msgspec.Struct):
    cost_per_useful_gpu_hour: float
    score: float


class WeightChangeRead(msgspec.Struct):
    dimension: str
    shift: float
    weights: dict[str, float]
    recommended_option: str
    statement: str


class UtilizationChangeRead(msgspec.Struct):
    utilization: float
    recommended_option: str
    statement: str


class SensitivityRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    recommended_option: str | None
    baseline: dict[str, BaselineRead]
    inputs: list[InputSensitivityRead]
    weight_change: WeightChangeRead | None
    utilization_change: UtilizationChangeRead | None


class UncertaintyRead(msgspec.Struct):
    knowledge_version: str
    methodology_version: str
    draws: int
    seed: int
    distribution: str
    options: dict[str, OptionUncertaintyRead]
    errors: dict[str, str]
    #: per option in ``errors``: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_codes: dict[str, str] = msgspec.field(default_factory=dict)


class CurvePointRead(msgspec.Struct):
    utilization: float
    cost_per_useful_gpu_hour: RangeRead


class CostSeriesRead(msgspec.Struct):
    option: str
    name: str
    #: by increasing utilization, from 10 % (or the profile's, when lower) to 100 %
    points: list[CurvePointRead]


class BreakEvenPointRead(msgspec.Struct):
    """Where the curves of ``first`` and ``second`` cross (as ``/v1/break-even`` finds crossings)."""

    first: str
    second: str
    utilization: NullableRange
    cheaper_above: dict[str, str | None]
    #: the expected cost per useful GPU-hour at the expected crossing (null: they never cross)
    cost_per_useful_gpu_hour: float | None
    statement: str


class CostCurvesRead(ProfileAnswer):
    series: list[CostSeriesRead]
    break_even: list[BreakEvenPointRead]
    errors: dict[str, str]
    #: per option in ``errors``: ``no-offer``, ``missing-knowledge`` or ``option-failed``
    error_codes: dict[str, str] = msgspec.field(default_factory=dict)
    #: a recommendation's one line on owning versus renting on demand (its ``break_even``), in the
    #: answer's language; null when it cannot be said (an option not loaded, no crossing to speak of)
    break_even_sentence: str | None = None
