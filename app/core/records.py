"""The rows of a knowledge snapshot: hardware, prices, rates, assumptions, rules, regions and availability
rules, as plain frozen values (``app.core.knowledge`` assembles them into a ``Knowledge`` snapshot and
re-exports them)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, NamedTuple

from app.core import vocab
from app.core.ranges import Range

ANY = "*"


class SourceRef(NamedTuple):
    """Which knowledge row a figure came from, and that row's own source."""

    table: str
    ref: str
    source: str
    quality: str


@dataclass(frozen=True, slots=True)
class GpuSpec:
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
    source_quality: vocab.SourceQuality
    notes: str | None


@dataclass(frozen=True, slots=True)
class Server:
    key: str
    name: str
    gpu_model_key: str | None
    gpus_per_server: int
    power_kw: float | None
    reference: bool
    source: str
    source_quality: vocab.SourceQuality
    notes: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("server_skus", self.key, self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Provider:
    key: str
    name: str
    kind: vocab.ProviderKind
    country: str | None
    website: str | None
    notes: str | None


@dataclass(frozen=True, slots=True)
class Price:
    """One dated price row (``price_items``): an offer by itself (an instance-hour, a platform GPU-hour,
    a server) or a component priced with one (network, power, colocation, a reservation discount)."""

    id: int
    option: str
    provider: str
    item: str
    subject: str
    #: the GPU model it is for, or ``*``
    gpu_model: str
    #: the billing plan (free-form, declared by the plugins that sell it), or ``*``
    plan: str
    unit: vocab.PriceUnit
    #: GPUs in the priced instance or server, where the unit is per instance or server
    gpus_per_unit: int | None
    #: ``Range.triangular``: low, the mean (``expected``) and high of the row's triangular distribution
    value: Range
    #: the source's most likely figure (the row's stored ``expected``; the midpoint where it names none)
    mode: float
    currency: vocab.Currency
    region: str
    valid_from: dt.date
    valid_to: dt.date | None
    capacity_gpus: int | None
    #: from the columns lead_time_days_low/_high; None where the source says nothing
    lead_time_days: Range | None
    min_gpus: int | None
    residency: vocab.Residency | None
    source: str
    source_quality: vocab.SourceQuality
    retrieved_on: dt.date | None
    notes: str | None
    #: the fabric between nodes (multi-node offers; an own cluster's ``network_fabric``), None where unknown
    interconnect: vocab.Interconnect | None
    #: how a platform offer bills (``job_seconds``, ``held_cluster``, ``pooled``); None for other rows
    billing: vocab.Billing | None
    #: a kW tier's lower bound (colocation by IT load), like ``min_gpus`` for GPU tiers
    min_kw: float | None
    #: a short reservation's longest term in days (Capacity Blocks); a longer horizon is renewals
    max_term_days: int | None = None
    #: every region one price holds in, where its row lists several (this row is the one of ``region``);
    #: None for a row of one region (``app.core.regions.RegionHierarchy.nearest`` picks among them)
    regions: tuple[str, ...] | None = None
    #: ``list`` (``price_items``), or ``org``: a row of the request's organisation's private book (``org_prices``),
    #: whose ``id`` in a snapshot is the row's id negated (so it never meets a list row's)
    book: vocab.PriceBook = "list"

    def valid_on(self, day: dt.date) -> bool:
        return self.valid_from <= day and (self.valid_to is None or day < self.valid_to)

    @property
    def ref(self) -> SourceRef:
        if self.book == "org":
            return SourceRef("org_prices", str(-self.id), self.source, self.source_quality)
        return SourceRef("price_items", str(self.id), self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Region:
    """A region of the hierarchy: ``parent`` is the region it lies in (a provider region's country, a
    country's continent …), None only for ``global``."""

    key: str
    name: str
    kind: vocab.RegionKind
    parent: str | None
    #: whose region it is, for a provider region of one provider
    provider: str | None
    source: str
    #: a bloc's member countries (the EU/EEA); None for every other kind
    members: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class AvailabilityRule:
    """A rule on ``gpu_model`` in ``jurisdiction`` (a country or bloc, and every region under it), valid
    from ``valid_from`` until ``valid_to``: ``kind`` says whose law it is (``export``: the supplier's
    country restricts, ``import``: the buyer's), ``scope`` whom it binds (``buyer``: a buyer whose
    ``buyer_country`` lies in the jurisdiction, on every offer; ``location``: hardware that is there)."""

    id: int
    gpu_model: str
    jurisdiction: str
    scope: vocab.AvailabilityScope
    kind: vocab.AvailabilityKind
    effect: vocab.AvailabilityEffect
    valid_from: dt.date
    valid_to: dt.date | None
    source: str
    source_quality: vocab.SourceQuality
    rationale: str

    def valid_on(self, day: dt.date) -> bool:
        return self.valid_from <= day and (self.valid_to is None or day < self.valid_to)

    @property
    def ref(self) -> SourceRef:
        return SourceRef("availability_rules", str(self.id), self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class ExchangeRate:
    """``rate`` CNY for one ``base`` on ``valid_on`` (CNY is the pivot of every conversion)."""

    id: int
    base: vocab.Currency
    quote: vocab.Pivot
    rate: float
    valid_on: dt.date
    source: str
    source_quality: vocab.SourceQuality
    retrieved_on: dt.date | None
    notes: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("exchange_rates", str(self.id), self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class DataSecurityLevel:
    """The residencies an offer may have for a profile of this ``data_security`` level, and where its data
    may sit (``data_location``: anywhere, the buyer's country or bloc, the buyer's premises)."""

    key: vocab.DataSecurity
    accepted_residencies: tuple[vocab.Residency, ...]
    source: str
    source_quality: vocab.SourceQuality
    rationale: str
    data_location: vocab.DataLocation = "anywhere"

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
    id: int
    option: str
    key: str
    unit: vocab.AssumptionUnit
    #: ``Range.triangular``: low, the mean (``expected``) and high of the row's triangular distribution
    value: Range
    #: the source's most likely figure (the row's stored ``expected``; the midpoint where it names none)
    mode: float
    source: str
    source_quality: vocab.SourceQuality
    rationale: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("assumptions", f"{self.option}/{self.key}", self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: vocab.RuleOperator
    value: Any


@dataclass(frozen=True, slots=True)
class Rule:
    key: str
    option: str
    description: str
    match: vocab.RuleMatch
    conditions: tuple[Condition, ...]
    effect: vocab.RuleEffect
    points: float | None
    reason: str
    rationale: str
    source: str
    source_quality: vocab.SourceQuality

    @property
    def ref(self) -> SourceRef:
        return SourceRef("scenario_rules", self.key, self.source, self.source_quality)
