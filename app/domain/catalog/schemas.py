"""API v1 schemas of the catalog: the options, and the knowledge base's rows with their sources."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec

from app.core.vocab import (
    AssumptionUnit,
    AvailabilityEffect,
    AvailabilityKind,
    AvailabilityScope,
    Billing,
    Currency,
    Interconnect,
    Pivot,
    PriceUnit,
    ProviderKind,
    RegionKind,
    Residency,
    RuleEffect,
    RuleMatch,
    RuleOperator,
    SourceQuality,
)


class ProfileFieldRead(msgspec.Struct):
    """A profile field an option declares: requests send it in ``option_fields``."""

    name: str
    description: str
    kind: str
    #: a number (integral or not), a string, a boolean, or none
    default: float | str | bool | None
    minimum: float | None
    maximum: float | None
    choices: list[str]


class OptionRead(msgspec.Struct):
    key: str
    name: str
    description: str
    plugin: str
    plugin_version: str
    #: the plans the option's price rows may carry (None: the plugin declares none, any is read)
    price_plans: list[str] | None
    #: the plans a profile's ``rental_plan`` may name to narrow this option to one
    rental_plans: list[str]
    #: the fields of a profile the option reads beyond the service's own (sent in ``option_fields``)
    profile_fields: list[ProfileFieldRead] = msgspec.field(default_factory=list)


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
    source_quality: SourceQuality
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
    source_quality: SourceQuality
    notes: str | None


class ServerList(Page):
    items: list[ServerRead]


class PriceRead(msgspec.Struct):
    id: int
    option: str
    provider: str
    item: str
    subject: str
    gpu_model: str
    plan: str
    unit: PriceUnit
    gpus_per_unit: int | None
    low: float
    #: the mean of the triangular distribution (low, mode, high): the figure answers compute with
    expected: float
    high: float
    #: the source's most-likely figure (the stored row's own); ``expected`` is the mean around it
    mode: float
    currency: Currency
    region: str
    #: every region the one price holds in, where its row lists several (this row is the one of ``region``)
    regions: list[str] | None
    valid_from: dt.date
    valid_to: dt.date | None
    capacity_gpus: int | None
    lead_time_days_low: float | None
    lead_time_days_high: float | None
    min_gpus: int | None
    residency: Residency | None
    source: str
    source_quality: SourceQuality
    retrieved_on: dt.date | None
    notes: str | None
    interconnect: Interconnect | None
    billing: Billing | None
    min_kw: float | None
    #: a short reservation's longest term in days (Capacity Blocks: 182); a longer horizon is renewals
    max_term_days: int | None = None


class PriceList(Page):
    items: list[PriceRead]


class OfferList(Page):
    items: list[PriceRead]


class ProviderRead(msgspec.Struct):
    key: str
    name: str
    kind: ProviderKind
    country: str | None
    website: str | None
    notes: str | None


class ProviderList(Page):
    items: list[ProviderRead]


class RegionRead(msgspec.Struct):
    """A region of the hierarchy: ``parent`` is the region it lies in, null only for ``global``."""

    key: str
    name: str
    kind: RegionKind
    parent: str | None
    provider: str | None
    source: str
    #: a bloc's member countries (the EU/EEA: its region kind is ``bloc``); null for every other region
    members: list[str] | None = None


class RegionList(Page):
    items: list[RegionRead]


class AvailabilityRuleRead(msgspec.Struct):
    """A rule on ``gpu_model`` in ``jurisdiction`` (a country or bloc, and every region under it) from
    ``valid_from`` until ``valid_to``: ``kind`` is whose law it is (``export``: the supplier's country,
    ``import``: the buyer's), ``scope`` whom it binds (``buyer``: buyers whose ``buyer_country`` is there,
    on every offer; ``location``: hardware that is there), ``effect`` what it does (``unavailable``:
    refused; ``licence_required``, ``discouraged``: said in a note)."""

    id: int
    gpu_model: str
    jurisdiction: str
    scope: AvailabilityScope
    kind: AvailabilityKind
    effect: AvailabilityEffect
    valid_from: dt.date
    valid_to: dt.date | None
    source: str
    source_quality: SourceQuality
    rationale: str


class AvailabilityRuleList(Page):
    items: list[AvailabilityRuleRead]


class ExchangeRateRead(msgspec.Struct):
    """``rate`` units of ``quote`` (CNY, the pivot of every conversion) for one ``base``, fixed on ``valid_on``."""

    id: int
    base: Currency
    quote: Pivot
    rate: float
    valid_on: dt.date
    source: str
    source_quality: SourceQuality
    retrieved_on: dt.date | None
    notes: str | None


class ExchangeRateList(Page):
    items: list[ExchangeRateRead]


class AssumptionRead(msgspec.Struct):
    option: str
    key: str
    unit: AssumptionUnit
    low: float
    #: the mean of the triangular distribution (low, mode, high): the figure answers compute with
    expected: float
    high: float
    #: the source's most-likely figure (the stored row's own); ``expected`` is the mean around it
    mode: float
    source: str
    source_quality: SourceQuality
    rationale: str | None


class AssumptionList(Page):
    items: list[AssumptionRead]


class ConditionRead(msgspec.Struct):
    field: str
    op: RuleOperator
    value: Any


class RuleRead(msgspec.Struct):
    key: str
    option: str
    description: str
    match: RuleMatch
    conditions: list[ConditionRead]
    effect: RuleEffect
    points: float | None
    reason: str
    rationale: str
    source: str
    source_quality: SourceQuality


class RuleList(Page):
    items: list[RuleRead]


class KnowledgeVersionRead(msgspec.Struct):
    version: str
    content_hash: str
    created_at: dt.datetime
    note: str
    summary: dict[str, Any]
