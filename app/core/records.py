"""The rows of a knowledge snapshot: hardware, prices, rates, assumptions, rules, regions and availability
rules, as plain frozen values (``app.core.knowledge`` assembles them into a ``Knowledge`` snapshot and
re-exports them).

Each record is its entity's one declaration (``app.core.entities``): its fields carry their vocabularies and
bounds. The catalog shows it, the seed records validate its columns, and ``tests/test_declarations.py``
holds its table to it. Most are frozen msgspec Structs with the table's columns as they are; a price and an
assumption hold their ``low``/``expected``/``high`` columns as one ``Range`` (``Ends``) beside fields no
column holds (``Computed``), and stay dataclasses (the uncertainty analysis and the private books replace
their fields).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple

import msgspec

from app.core import vocab
from app.core.entities import COUNTRY, KEY_40, KEY_60, KEY_OR_ANY, Bounds, Computed, Ends
from app.core.ranges import Range

ANY = "*"

#: a key of the knowledge base (a GPU model, a server, an item), one of providers, rules and assumptions, and
#: an option's key or ``*`` (a row tied to no option, a price tied to no GPU model)
Key = Annotated[str, Bounds(pattern=KEY_40)]
LongKey = Annotated[str, Bounds(pattern=KEY_60)]
KeyOrAny = Annotated[str, Bounds(pattern=KEY_OR_ANY)]
#: a text a row must state (a source, a rationale): never empty
Said = Annotated[str, Bounds(min_length=1)]
#: a price's figures: held to six decimals (NUMERIC(20, 6)), the low end never below zero
SIX_PLACES = Bounds(decimal_places=6)
SIX_PLACES_NOT_NEGATIVE = Bounds(ge=0, decimal_places=6)
#: a key of the regions
RegionKey = Annotated[str, Bounds(min_length=1, max_length=40)]
#: a lead time's ends: from none to ten years of days
A_DECADE_OF_DAYS = Bounds(ge=0, le=3650)


class SourceRef(NamedTuple):
    """Which knowledge row a figure came from, and that row's own source."""

    table: str
    ref: str
    source: str
    quality: str


class GpuSpec(msgspec.Struct, frozen=True):
    """A GPU model (``gpu_models``): its memory, dense throughput and interconnect, with their source."""

    key: Key
    vendor: Annotated[str, Bounds(min_length=1, max_length=40)]
    name: Annotated[str, Bounds(min_length=1, max_length=80)]
    memory_gb: Annotated[float, Bounds(gt=0)]
    memory_bandwidth_gbps: Annotated[float | None, Bounds(gt=0)]
    bf16_dense_tflops: Annotated[float, Bounds(gt=0)]
    fp8_dense_tflops: Annotated[float | None, Bounds(gt=0)]
    interconnect: Annotated[str, Bounds(min_length=1, max_length=120)]
    interconnect_gbps: Annotated[float | None, Bounds(gt=0)]
    tdp_w: Annotated[int | None, Bounds(gt=0)]
    source: Said
    source_quality: vocab.SourceQuality
    notes: str | None


class Server(msgspec.Struct, frozen=True):
    """A server SKU (``server_skus``): how many GPUs of which model it holds, and its power draw."""

    key: Key
    name: Annotated[str, Bounds(min_length=1, max_length=120)]
    gpu_model_key: str | None
    gpus_per_server: Annotated[int, Bounds(gt=0, le=64)]
    power_kw: Annotated[float | None, Bounds(gt=0)]
    #: the server a profile runs on when it names no ``gpu_model``
    reference: bool
    source: Said
    source_quality: vocab.SourceQuality
    notes: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("server_skus", self.key, self.source, self.source_quality)


class Provider(msgspec.Struct, frozen=True):
    """Who sells an offer (``providers``): a cloud, a GPU cloud, a platform, a hardware channel (``own``)…"""

    key: LongKey
    name: Annotated[str, Bounds(min_length=1, max_length=120)]
    kind: vocab.ProviderKind
    #: ISO 3166 alpha-2 code of the headquarters
    country: Annotated[str | None, Bounds(pattern=COUNTRY)]
    website: Annotated[str | None, Bounds(max_length=200)]
    notes: str | None


@dataclass(frozen=True, slots=True)
class Price:
    """One dated price row (``price_items``): an offer by itself (an instance-hour, a platform GPU-hour,
    a server) or a component priced with one (network, power, colocation, a reservation discount)."""

    id: int
    option: KeyOrAny
    provider: LongKey
    item: Key
    #: what the price is for: an instance type, a server SKU key, a tier, or ``*``
    subject: Annotated[str, Bounds(min_length=1, max_length=120)]
    #: the GPU model it is for, or ``*``
    gpu_model: KeyOrAny
    #: the billing plan (free-form, declared by the plugins that sell it), or ``*``
    plan: Annotated[str, Bounds(pattern=vocab.PLAN_PATTERN)]
    unit: vocab.PriceUnit
    #: GPUs in the priced instance or server, where the unit is per instance or server
    gpus_per_unit: Annotated[int | None, Bounds(gt=0, le=1024)]
    #: ``Range.triangular``: low, the mean (``expected``) and high of the row's triangular distribution; held as
    #: low, expected (the mode) and high, to six decimals, never below zero
    value: Annotated[Range, Ends(low=SIX_PLACES_NOT_NEGATIVE, mode=SIX_PLACES, high=SIX_PLACES)]
    #: the source's most likely figure (the row's stored ``expected``; the midpoint where it names none)
    mode: Annotated[float, Computed("the stored expected, else the midpoint of low and high")]
    currency: vocab.Currency
    region: RegionKey
    #: every region one price holds in, where its row lists several (this row is the one of ``region``);
    #: None for a row of one region (``app.core.regions.RegionHierarchy.nearest`` picks among them)
    regions: Annotated[tuple[RegionKey, ...] | None, Bounds(min_length=2)]
    valid_from: dt.date
    valid_to: dt.date | None
    #: the most GPUs the provider sells in this plan and region, where published
    capacity_gpus: Annotated[int | None, Bounds(gt=0)]
    #: from the columns lead_time_days_low/_high; None where the source says nothing
    lead_time_days: Annotated[Range | None, Ends(low=A_DECADE_OF_DAYS, high=A_DECADE_OF_DAYS, prefix="lead_time_days_")]
    #: a volume tier: the row applies from this many GPUs up
    min_gpus: Annotated[int | None, Bounds(gt=0)]
    residency: vocab.Residency | None
    source: Said
    source_quality: vocab.SourceQuality
    #: when the figure was read from its source
    retrieved_on: dt.date | None
    notes: str | None
    #: the fabric between nodes (multi-node offers; an own cluster's ``network_fabric``), None where unknown
    interconnect: vocab.Interconnect | None
    #: how a platform offer bills (``job_seconds``, ``held_cluster``, ``pooled``); None for other rows
    billing: vocab.Billing | None
    #: a kW tier's lower bound (colocation by IT load), like ``min_gpus`` for GPU tiers; held to three decimals
    min_kw: Annotated[float | None, Bounds(ge=0, decimal_places=3)]
    #: a short reservation's longest term in days (Capacity Blocks); a longer horizon is renewals
    max_term_days: Annotated[int | None, Bounds(gt=0, le=3650)] = None
    #: ``list`` (``price_items``), or ``org``: a row of the request's organisation's private book (``org_prices``),
    #: whose ``id`` in a snapshot is the row's id negated (so it never meets a list row's)
    book: Annotated[vocab.PriceBook, Computed("the table the row is read from")] = "list"

    def valid_on(self, day: dt.date) -> bool:
        return self.valid_from <= day and (self.valid_to is None or day < self.valid_to)

    @property
    def ref(self) -> SourceRef:
        if self.book == "org":
            return SourceRef("org_prices", str(-self.id), self.source, self.source_quality)
        return SourceRef("price_items", str(self.id), self.source, self.source_quality)


class Region(msgspec.Struct, frozen=True):
    """A region of the hierarchy: ``parent`` is the region it lies in (a provider region's country, a
    country's continent …), None only for ``global``."""

    key: RegionKey
    name: Annotated[str, Bounds(min_length=1, max_length=120)]
    kind: vocab.RegionKind
    parent: Annotated[str | None, Bounds(max_length=40)]
    #: whose region it is, for a provider region of one provider
    provider: Annotated[str | None, Bounds(pattern=KEY_60)]
    source: Said
    #: a bloc's member countries (the EU/EEA); None for every other kind
    members: Annotated[tuple[str, ...] | None, Bounds(min_length=1)] = None


class AvailabilityRule(msgspec.Struct, frozen=True):
    """A rule on ``gpu_model`` in ``jurisdiction`` (a country or bloc, and every region under it), valid
    from ``valid_from`` until ``valid_to``: ``kind`` says whose law it is (``export``: the supplier's
    country restricts, ``import``: the buyer's), ``scope`` whom it binds (``buyer``: a buyer whose
    ``buyer_country`` lies in the jurisdiction, on every offer; ``location``: hardware that is there)."""

    id: int
    gpu_model: Key
    #: a country or bloc of the regions, never ``global``
    jurisdiction: RegionKey
    scope: vocab.AvailabilityScope
    kind: vocab.AvailabilityKind
    effect: vocab.AvailabilityEffect
    valid_from: dt.date
    valid_to: dt.date | None
    source: Said
    source_quality: vocab.SourceQuality
    rationale: Said

    def valid_on(self, day: dt.date) -> bool:
        return self.valid_from <= day and (self.valid_to is None or day < self.valid_to)

    @property
    def ref(self) -> SourceRef:
        return SourceRef("availability_rules", str(self.id), self.source, self.source_quality)


class ExchangeRate(msgspec.Struct, frozen=True):
    """``rate`` CNY for one ``base`` on ``valid_on`` (CNY is the pivot of every conversion)."""

    id: int
    base: vocab.Currency
    quote: vocab.Pivot
    rate: Annotated[float, Bounds(gt=0, decimal_places=8)]
    valid_on: dt.date
    source: Said
    source_quality: vocab.SourceQuality
    retrieved_on: dt.date | None
    notes: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("exchange_rates", str(self.id), self.source, self.source_quality)


class DataSecurityLevel(msgspec.Struct, frozen=True):
    """The residencies an offer may have for a profile of this ``data_security`` level, and where its data
    may sit (``data_location``: anywhere, the buyer's country or bloc, the buyer's premises)."""

    key: vocab.DataSecurity
    accepted_residencies: Annotated[tuple[vocab.Residency, ...], Bounds(min_length=1)]
    data_location: vocab.DataLocation
    source: Said
    source_quality: vocab.SourceQuality
    rationale: Said

    @property
    def ref(self) -> SourceRef:
        return SourceRef("data_security_levels", self.key, self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Conversion:
    """From one currency to another on a day: multiply by ``factor``; ``refs`` are the rates used."""

    factor: float
    refs: tuple[SourceRef, ...]

    @property
    def identity(self) -> bool:
        return not self.refs


SAME = Conversion(1.0, ())


@dataclass(frozen=True, slots=True)
class Assumption:
    """A non-price parameter (``assumptions``): a range with a unit, a source, and a rationale when it is
    assumed; named by its option (or ``*``) and key."""

    id: int
    option: KeyOrAny
    key: LongKey
    unit: vocab.AssumptionUnit
    #: ``Range.triangular``: low, the mean (``expected``) and high of the row's triangular distribution; held as
    #: low, expected (the mode) and high
    value: Annotated[Range, Ends(low=Bounds(), mode=Bounds(), high=Bounds())]
    #: the source's most likely figure (the row's stored ``expected``; the midpoint where it names none)
    mode: Annotated[float, Computed("the stored expected, else the midpoint of low and high")]
    source: Said
    source_quality: vocab.SourceQuality
    rationale: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("assumptions", f"{self.option}/{self.key}", self.source, self.source_quality)


class Condition(msgspec.Struct, frozen=True):
    """One test of a rule: a field of the profile or the assessment (``profile.gpus``), an operator, and a
    value or ``{ref: <field path>}``."""

    field: str
    op: vocab.RuleOperator
    value: Any


class Rule(msgspec.Struct, frozen=True):
    """A declarative condition on the profile (and the option's assessment) with an effect on an option
    (``scenario_rules``): ``infeasible``, or a bonus or penalty of ``points``."""

    key: LongKey
    option: KeyOrAny
    description: Said
    match: vocab.RuleMatch
    conditions: Annotated[tuple[Condition, ...], Bounds(min_length=1)]
    effect: vocab.RuleEffect
    points: Annotated[float | None, Bounds(gt=0, le=100)]
    reason: Said
    rationale: Said
    source: Said
    source_quality: vocab.SourceQuality

    @property
    def ref(self) -> SourceRef:
        return SourceRef("scenario_rules", self.key, self.source, self.source_quality)
