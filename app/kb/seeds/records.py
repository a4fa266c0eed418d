"""Seed records: one pydantic model per section of a seed file, with the checks one record can make;
the sections' natural keys, and the validated set of every record (``SeedSet``) with its content hash.

A seed record's fields and their bounds are its entity's record's (``app.core.records``, derived by
``seed_of``); what is written here is what a seed file says otherwise (a default it may leave out) and
the checks of a whole record, in words."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, model_validator

from app.core.records import (
    ANY,
    Assumption,
    AvailabilityRule,
    Condition,
    DataSecurityLevel,
    ExchangeRate,
    GpuSpec,
    Price,
    Provider,
    Rule,
    Server,
)
from app.core.vocab import GLOBAL, PIVOT
from app.engine import rules as rule_engine
from app.kb.seeds.base import DerivedSeed, SeedRecord, seed_of
from app.kb.seeds.problems import FieldProblem
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


class _RangeSeed(DerivedSeed):
    """A seed record of a row that holds a range: its ends come first (in the words that list its fields
    too), and are ordered. ``seed_of`` gives them their bounds."""

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


@seed_of(GpuSpec)
class GpuModelSeed(DerivedSeed):
    """A GPU model of the seed files (``gpu_models``)."""


@seed_of(Server, defaults={"reference": False})
class ServerSeed(DerivedSeed):
    """A server SKU of the seed files (``servers``): not the reference server unless it says so."""


def _star(value: Any) -> Any:
    """``null`` in a seed file means "not tied to one": stored as ``*``."""
    return ANY if value is None else value


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


@seed_of(Provider)
class ProviderSeed(DerivedSeed):
    """A provider of the seed files (``providers``)."""


@seed_of(AvailabilityRule)
class AvailabilityRuleSeed(DerivedSeed):
    """An availability rule of the seed files (``availability_rules``): its jurisdiction a country or bloc
    of the regions (``files``: its kind), never ``global``; its period ordered."""

    @model_validator(mode="after")
    def _period(self) -> AvailabilityRuleSeed:
        if self.jurisdiction == GLOBAL:
            raise FieldProblem("jurisdiction", f"'{GLOBAL}' is not a jurisdiction: a rule names a country or bloc")
        if self.valid_to is not None and self.valid_to <= self.valid_from:
            raise FieldProblem("valid_to", f"{self.valid_to} is not after valid_from ({self.valid_from})")
        return self


@seed_of(
    Price,
    types={"subject": Star, "gpu_model": Star, "plan": Star, "region": str | None, "retrieved_on": RetrievedOn},
    defaults={"subject": ANY, "gpu_model": ANY, "plan": ANY, "region": None},
)
class PriceSeed(_RangeSeed):
    """A price row of the seed files (``prices``), or of an organisation's upload: a row not tied to one
    subject, GPU model or plan says ``*`` (null for the latter two); ``region`` the one region the price holds
    in, null where ``regions`` lists several (one row per region once loaded); its figures are refused with
    more decimals than the columns hold, which would round them silently.
    """

    @model_validator(mode="after")
    def _period(self) -> PriceSeed:
        if self.valid_to is not None and self.valid_to <= self.valid_from:
            raise FieldProblem("valid_to", f"{self.valid_to} is not after valid_from ({self.valid_from})")
        if self.unit == "fraction" and self.high > 1:
            raise FieldProblem("high", "a fraction cannot exceed 1")
        low, high = self.lead_time_days_low, self.lead_time_days_high
        if (low is None) != (high is None) or (low is not None and high is not None and low > high):
            raise FieldProblem("lead_time_days_high", "give lead_time_days_low and _high together, low ≤ high")
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


@seed_of(ExchangeRate, types={"retrieved_on": RetrievedOn}, defaults={"quote": PIVOT})
class ExchangeRateSeed(DerivedSeed):
    """An exchange rate of the seed files (``exchange_rates``): quoted in the pivot unless it says so."""


@seed_of(DataSecurityLevel)
class DataSecurityLevelSeed(DerivedSeed):
    """A data-security level of the seed files (``data_security_levels``)."""


@seed_of(Assumption)
class AssumptionSeed(_RangeSeed):
    """An assumption of the seed files (``assumptions``): one the source does not state needs a rationale."""

    @model_validator(mode="after")
    def _assumed_needs_rationale(self) -> AssumptionSeed:
        if self.source_quality == "assumption" and not self.rationale:
            raise FieldProblem("rationale", "an assumption needs a rationale")
        return self


@seed_of(Condition)
class ConditionSeed(DerivedSeed):
    """A condition of a seed rule: its field path, and a value's ``{ref: <field path>}``, known to the rules."""

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


@seed_of(Rule, types={"conditions": list[ConditionSeed]}, defaults={"match": "all"})
class RuleSeed(DerivedSeed):
    """A rule of the seed files (``rules``): every condition must hold unless ``match`` says any; points
    exactly when the effect is a bonus or a penalty."""

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
