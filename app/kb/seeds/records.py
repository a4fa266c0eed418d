"""Seed records: one pydantic model per section of a seed file, with the checks one record can make;
the sections' natural keys, and the validated set of every record (``SeedSet``) with its content hash."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from app.core.vocab import (
    GLOBAL,
    PIVOT,
    PLAN_PATTERN,
    AssumptionUnit,
    AvailabilityEffect,
    AvailabilityKind,
    AvailabilityScope,
    Billing,
    Currency,
    DataLocation,
    DataSecurity,
    Interconnect,
    Pivot,
    PriceUnit,
    ProviderKind,
    Residency,
    RuleEffect,
    RuleMatch,
    RuleOperator,
    SourceQuality,
)
from app.engine import rules as rule_engine
from app.kb.seeds.base import SeedRecord
from app.kb.seeds.problems import COUNTRY, KEY_40, KEY_60, KEY_OR_ANY, FieldProblem
from app.kb.seeds.region_records import RegionSeed

SECTIONS = (
    "providers",
    "regions",
    "gpu_models",
    "servers",
    "prices",
    "exchange_rates",
    "data_security_levels",
    "assumptions",
    "rules",
    "availability_rules",
)
#: the only option whose rows say how they bill (``billing``)
PLATFORM_OPTION = "ai_compute_platform"


class _RangeSeed(SeedRecord):
    low: Decimal
    expected: Decimal | None = None
    high: Decimal

    @model_validator(mode="after")
    def _ordered(self) -> _RangeSeed:
        if self.low > self.high:
            raise FieldProblem("low", f"low ({self.low}) is above high ({self.high})")
        if self.expected is not None and not (self.low <= self.expected <= self.high):
            raise FieldProblem("expected", f"{self.expected} is outside low–high ({self.low}–{self.high})")
        return self


class GpuModelSeed(SeedRecord):
    key: str = Field(pattern=KEY_40)
    vendor: str = Field(min_length=1, max_length=40)
    name: str = Field(min_length=1, max_length=80)
    memory_gb: Decimal = Field(gt=0)
    memory_bandwidth_gbps: Decimal | None = Field(default=None, gt=0)
    bf16_dense_tflops: Decimal = Field(gt=0)
    fp8_dense_tflops: Decimal | None = Field(default=None, gt=0)
    interconnect: str = Field(min_length=1, max_length=120)
    interconnect_gbps: Decimal | None = Field(default=None, gt=0)
    tdp_w: int | None = Field(default=None, gt=0)
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    notes: str | None = None


class ServerSeed(SeedRecord):
    key: str = Field(pattern=KEY_40)
    name: str = Field(min_length=1, max_length=120)
    gpu_model_key: str | None = None
    gpus_per_server: int = Field(gt=0, le=64)
    power_kw: Decimal | None = Field(default=None, gt=0)
    reference: bool = False
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    notes: str | None = None


def _star(value: Any) -> Any:
    """``null`` in a seed file means "not tied to one": stored as ``*``."""
    return "*" if value is None else value


Star = Annotated[str, BeforeValidator(_star)]


#: the earliest time zone: a date later than today there has not come anywhere yet
_EARLIEST_ZONE = dt.timezone(dt.timedelta(hours=14))


def _not_in_the_future(day: dt.date | None) -> dt.date | None:
    today = dt.datetime.now(_EARLIEST_ZONE).date()
    if day is not None and day > today:
        raise ValueError(f"{day} is in the future: a figure cannot have been read on a day that has not come")
    return day


#: when a figure was read from its source: never after today
RetrievedOn = Annotated[dt.date | None, AfterValidator(_not_in_the_future)]


class ProviderSeed(SeedRecord):
    key: str = Field(pattern=KEY_60)
    name: str = Field(min_length=1, max_length=120)
    kind: ProviderKind
    country: str | None = Field(default=None, pattern=COUNTRY)
    website: str | None = Field(default=None, max_length=200)
    notes: str | None = None


class AvailabilityRuleSeed(SeedRecord):
    gpu_model: str = Field(pattern=KEY_40)
    #: a country or bloc of the regions (``files``: its kind); ``global`` never is one
    jurisdiction: str = Field(min_length=1, max_length=40)
    scope: AvailabilityScope
    kind: AvailabilityKind
    effect: AvailabilityEffect
    valid_from: dt.date
    valid_to: dt.date | None = None
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    rationale: str = Field(min_length=1)

    @model_validator(mode="after")
    def _period(self) -> AvailabilityRuleSeed:
        if self.jurisdiction == GLOBAL:
            raise FieldProblem("jurisdiction", f"'{GLOBAL}' is not a jurisdiction: a rule names a country or bloc")
        if self.valid_to is not None and self.valid_to <= self.valid_from:
            raise FieldProblem("valid_to", f"{self.valid_to} is not after valid_from ({self.valid_from})")
        return self


class PriceSeed(_RangeSeed):
    option: str = Field(pattern=KEY_OR_ANY)
    provider: str = Field(pattern=KEY_60)
    item: str = Field(pattern=KEY_40)
    subject: Star = Field(default="*", min_length=1, max_length=120)
    gpu_model: Star = Field(default="*", pattern=KEY_OR_ANY)
    plan: Annotated[str, BeforeValidator(_star)] = Field(default="*", pattern=PLAN_PATTERN)
    unit: PriceUnit
    gpus_per_unit: int | None = Field(default=None, gt=0, le=1024)
    # the columns hold six decimals: more would be rounded silently, so they are refused
    low: Decimal = Field(ge=0, decimal_places=6)
    expected: Decimal | None = Field(default=None, decimal_places=6)
    high: Decimal = Field(decimal_places=6)
    currency: Currency
    #: the one region the price holds in; null where ``regions`` lists several
    region: str | None = Field(default=None, min_length=1, max_length=40)
    #: every region one price holds in (a provider's global list price): one row per region when loaded
    regions: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = Field(default=None, min_length=2)
    valid_from: dt.date
    valid_to: dt.date | None = None
    capacity_gpus: int | None = Field(default=None, gt=0)
    lead_time_days_low: Decimal | None = Field(default=None, ge=0, le=3650)
    lead_time_days_high: Decimal | None = Field(default=None, ge=0, le=3650)
    min_gpus: int | None = Field(default=None, gt=0)
    residency: Residency | None = None
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    retrieved_on: RetrievedOn = None
    notes: str | None = None
    interconnect: Interconnect | None = None
    billing: Billing | None = None
    # the column holds three decimals
    min_kw: Decimal | None = Field(default=None, ge=0, decimal_places=3)
    #: a short reservation's longest term in days (Capacity Blocks); a longer horizon is priced as renewals
    max_term_days: int | None = Field(default=None, gt=0, le=3650)

    @model_validator(mode="after")
    def _period(self) -> PriceSeed:
        if self.valid_to is not None and self.valid_to <= self.valid_from:
            raise FieldProblem("valid_to", f"{self.valid_to} is not after valid_from ({self.valid_from})")
        if self.unit == "fraction" and self.high > 1:
            raise FieldProblem("high", "a fraction cannot exceed 1")
        low, high = self.lead_time_days_low, self.lead_time_days_high
        if (low is None) != (high is None) or (low is not None and high is not None and low > high):
            raise FieldProblem("lead_time_days_high", "give lead_time_days_low and _high together, low ≤ high")
        if self.billing is not None and self.option != PLATFORM_OPTION:
            raise FieldProblem("billing", f"only {PLATFORM_OPTION} rows say how they bill")
        if self.regions is None and self.region is None:
            raise FieldProblem("region", "give the region the price holds in (or regions, a list of several)")
        if self.regions is not None:
            if len(set(self.regions)) != len(self.regions):
                raise FieldProblem("regions", "a region is listed twice")
            if self.region is not None and self.region not in self.regions:
                raise FieldProblem("region", f"'{self.region}' is not one of the row's regions")
        return self

    def each_region(self) -> list[PriceSeed]:
        """The row as loaded: one row per region it holds in (each with the whole ``regions`` list)."""
        if self.region is not None or self.regions is None:
            return [self]
        return [self.model_copy(update={"region": region}) for region in self.regions]


class ExchangeRateSeed(SeedRecord):
    base: Currency
    quote: Pivot = PIVOT
    rate: Decimal = Field(gt=0, decimal_places=8)
    valid_on: dt.date
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    retrieved_on: RetrievedOn = None
    notes: str | None = None


class DataSecurityLevelSeed(SeedRecord):
    key: DataSecurity
    accepted_residencies: list[Residency] = Field(min_length=1)
    data_location: DataLocation
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    rationale: str = Field(min_length=1)


class AssumptionSeed(_RangeSeed):
    option: str = Field(pattern=KEY_OR_ANY)
    key: str = Field(pattern=KEY_60)
    unit: AssumptionUnit
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    rationale: str | None = None

    @model_validator(mode="after")
    def _assumed_needs_rationale(self) -> AssumptionSeed:
        if self.source_quality == "assumption" and not self.rationale:
            raise FieldProblem("rationale", "an assumption needs a rationale")
        return self


class ConditionSeed(SeedRecord):
    field: str
    op: RuleOperator
    value: Any

    @model_validator(mode="after")
    def _paths(self) -> ConditionSeed:
        problem, blamed = rule_engine.check_path(self.field), "field"
        if problem is None and isinstance(self.value, dict):
            if set(self.value) != {"ref"} or not isinstance(self.value["ref"], str):
                problem, blamed = "a value that is a mapping must be {ref: <field path>}", "value"
            else:
                problem, blamed = rule_engine.check_path(self.value["ref"]), "value.ref"
        if problem:
            raise FieldProblem(blamed, problem)
        return self


class RuleSeed(SeedRecord):
    key: str = Field(pattern=KEY_60)
    option: str = Field(pattern=KEY_OR_ANY)
    description: str = Field(min_length=1)
    match: RuleMatch = "all"
    conditions: list[ConditionSeed] = Field(min_length=1)
    effect: RuleEffect
    points: Decimal | None = Field(default=None, gt=0, le=100)
    reason: str = Field(min_length=1)
    rationale: str = Field(min_length=1)
    source: str = Field(min_length=1)
    source_quality: SourceQuality

    @model_validator(mode="after")
    def _points(self) -> RuleSeed:
        if (self.effect == "infeasible") != (self.points is None):
            raise FieldProblem("points", "bonus and penalty rules need points; infeasible rules take none")
        return self


SEED_MODELS: dict[str, type[SeedRecord]] = {
    "providers": ProviderSeed,
    "regions": RegionSeed,
    "gpu_models": GpuModelSeed,
    "servers": ServerSeed,
    "prices": PriceSeed,
    "exchange_rates": ExchangeRateSeed,
    "data_security_levels": DataSecurityLevelSeed,
    "assumptions": AssumptionSeed,
    "rules": RuleSeed,
    "availability_rules": AvailabilityRuleSeed,
}
NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "providers": ("key",),
    "regions": ("key",),
    "gpu_models": ("key",),
    "servers": ("key",),
    "prices": ("option", "provider", "item", "subject", "gpu_model", "plan", "region", "currency", "valid_from"),
    "exchange_rates": ("base", "quote", "valid_on"),
    "data_security_levels": ("key",),
    "assumptions": ("option", "key"),
    "rules": ("key",),
    "availability_rules": ("gpu_model", "jurisdiction", "kind", "valid_from"),
}


@dataclass
class SeedSet:
    """Every record of every seed file, validated, by section."""

    records: dict[str, list[SeedRecord]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    #: the file each record came from, by (section, natural key): error messages name it
    files: dict[tuple[str, tuple[Any, ...]], str] = field(default_factory=dict)
    #: the line of its file each record starts on, by (section, natural key)
    lines: dict[tuple[str, tuple[Any, ...]], int] = field(default_factory=dict)

    def where(self, section: str, key: tuple[Any, ...]) -> str:
        """``"<file>: "`` for a record read from a file, else nothing."""
        file = self.files.get((section, key))
        return f"{file}: " if file else ""

    def locate(self, section: str, key: tuple[Any, ...]) -> dict[str, Any]:
        """The file and line of a record read from a file (a ``SeedProblem``'s ``file`` and ``line``)."""
        return {"file": self.files.get((section, key)), "line": self.lines.get((section, key))}

    def line(self, section: str, key: tuple[Any, ...]) -> str:
        """``" (line N)"`` for a record read from a file, else nothing."""
        line = self.lines.get((section, key))
        return f" (line {line})" if line else ""

    def rows(self, section: str) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The section's rows as the database holds them by natural key: a price row of several regions is
        one row per region (``PriceSeed.each_region``)."""
        records = self.records[section]
        if section == "prices":
            records = [one for rec in records if isinstance(rec, PriceSeed) for one in rec.each_region()]
        return {natural_key(section, r := rec.model_dump()): r for rec in records}

    def content_hash(self) -> str:
        content = {s: sorted((canonical(r) for r in self.rows(s).values()), key=json.dumps) for s in SECTIONS}
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def natural_key(section: str, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in NATURAL_KEYS[section])


def canonical(row: dict[str, Any]) -> dict[str, Any]:
    """A row as plain JSON values (decimals normalised, dates ISO): what the content hash is taken of."""

    def norm(v: Any) -> Any:
        if isinstance(v, Decimal):
            return format(v.normalize(), "f")
        if isinstance(v, dt.date):
            return v.isoformat()
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    return {k: norm(v) for k, v in row.items()}
