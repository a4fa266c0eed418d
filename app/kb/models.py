"""The knowledge base schema: everything a number in a response depends on, with provenance.

Money and figures are NUMERIC (``Decimal``), never float. The schema enforces what one row can
know (ranges ordered, units and currencies known, validity periods sane, natural keys unique);
the seed loader enforces what needs several rows (no overlapping validity for one price item).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from app.core.vocab import (
    ASSUMPTION_UNITS,
    AVAILABILITY_EFFECTS,
    AVAILABILITY_KINDS,
    AVAILABILITY_SCOPES,
    BILLINGS,
    CURRENCIES,
    DATA_LOCATIONS,
    DATA_SECURITY_LEVELS,
    INTERCONNECTS,
    PIVOT,
    PRICE_UNITS,
    PROVIDER_KINDS,
    REGION_KINDS,
    RESIDENCIES,
    RULE_EFFECTS,
    RULE_MATCHES,
    SOURCE_QUALITIES,
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
    RegionKind,
    Residency,
    RuleEffect,
    RuleMatch,
    SourceQuality,
)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _range_checks() -> tuple[CheckConstraint, ...]:
    return (
        CheckConstraint("low <= high", name="low_le_high"),
        CheckConstraint("expected IS NULL OR (low <= expected AND expected <= high)", name="expected_in_range"),
    )


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class KnowledgeVersion(Base):
    """One load of seeds or one data migration: responses name it so they can be replayed."""

    __tablename__ = "knowledge_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    note: Mapped[str] = mapped_column(Text, default="")
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    @property
    def label(self) -> str:
        return version_label(self.id, self.content_hash)


def version_label(version_id: int, content_hash: str) -> str:
    """The public name of a knowledge version: ``kv<id>-<first 12 hex digits of its hash>``."""
    return f"kv{version_id}-{content_hash[:12]}"


class GpuModel(Base):
    __tablename__ = "gpu_models"
    __table_args__ = (CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),)

    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    vendor: Mapped[str] = mapped_column(String(40))
    name: Mapped[str] = mapped_column(String(80))
    memory_gb: Mapped[Decimal] = mapped_column(Numeric(8, 1))
    memory_bandwidth_gbps: Mapped[Decimal | None] = mapped_column(Numeric(10, 1))
    bf16_dense_tflops: Mapped[Decimal] = mapped_column(Numeric(10, 2))
    fp8_dense_tflops: Mapped[Decimal | None] = mapped_column(Numeric(10, 2))
    interconnect: Mapped[str] = mapped_column(String(120))
    interconnect_gbps: Mapped[Decimal | None] = mapped_column(Numeric(10, 1))
    tdp_w: Mapped[int | None] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
    notes: Mapped[str | None] = mapped_column(Text)


class ServerSku(Base):
    __tablename__ = "server_skus"
    __table_args__ = (
        CheckConstraint("gpus_per_server > 0", name="gpus_positive"),
        CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),
    )

    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    gpu_model_key: Mapped[str | None] = mapped_column(ForeignKey("gpu_models.key"))
    gpus_per_server: Mapped[int] = mapped_column(Integer)
    power_kw: Mapped[Decimal | None] = mapped_column(Numeric(8, 2))
    #: the server a profile runs on when it names no ``gpu_model``
    reference: Mapped[bool] = mapped_column(Boolean, default=False)
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
    notes: Mapped[str | None] = mapped_column(Text)


class Provider(Base):
    """Who sells an offer: a cloud, a GPU cloud, a platform, a hardware channel (``own``), or the
    source article's reference providers."""

    __tablename__ = "providers"
    __table_args__ = (CheckConstraint(_in("kind", PROVIDER_KINDS), name="kind"),)

    key: Mapped[str] = mapped_column(String(60), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    kind: Mapped[ProviderKind] = mapped_column(String(20))
    #: ISO 3166 alpha-2 code of the headquarters
    country: Mapped[str | None] = mapped_column(String(2))
    website: Mapped[str | None] = mapped_column(String(200))
    notes: Mapped[str | None] = mapped_column(Text)


def price_checks() -> tuple[CheckConstraint, ...]:
    """What one price row must satisfy, in ``price_items`` and ``org_prices`` alike."""
    return (
        CheckConstraint("low >= 0", name="low_non_negative"),
        *_range_checks(),
        CheckConstraint("valid_to IS NULL OR valid_to > valid_from", name="validity_ordered"),
        CheckConstraint(_in("unit", PRICE_UNITS), name="unit"),
        CheckConstraint(_in("currency", CURRENCIES), name="currency"),
        CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),
        CheckConstraint(f"residency IS NULL OR {_in('residency', RESIDENCIES)}", name="residency"),
        CheckConstraint(f"interconnect IS NULL OR {_in('interconnect', INTERCONNECTS)}", name="interconnect"),
        CheckConstraint(f"billing IS NULL OR {_in('billing', BILLINGS)}", name="billing"),
        CheckConstraint("min_kw IS NULL OR min_kw >= 0", name="min_kw_non_negative"),
        CheckConstraint("gpus_per_unit IS NULL OR gpus_per_unit > 0", name="gpus_per_unit_positive"),
        CheckConstraint("capacity_gpus IS NULL OR capacity_gpus > 0", name="capacity_positive"),
        CheckConstraint("max_term_days IS NULL OR max_term_days > 0", name="max_term_positive"),
        CheckConstraint(
            "lead_time_days_high IS NULL OR lead_time_days_low <= lead_time_days_high", name="lead_time_ordered"
        ),
    )


class PriceColumns:
    """A price row's columns, in the list (``price_items``) and an organisation's private book (``org_prices``)."""

    option: Mapped[str] = mapped_column(String(40))
    provider: Mapped[str] = mapped_column(String(60))
    item: Mapped[str] = mapped_column(String(40))
    #: what the price is for: an instance type, a server SKU key, a tier, or ``*``
    subject: Mapped[str] = mapped_column(String(120))
    #: the GPU model it is for, or ``*`` when it does not depend on one (power, staff, colocation…)
    gpu_model: Mapped[str] = mapped_column(String(40), default="*")
    #: the billing plan (``on_demand``, ``reserved_1y``, ``savings_plan_3y``, ``pay_as_you_go``…), or ``*``:
    #: free-form lower_snake_case, declared by the plugins that sell it (the seed records check the pattern)
    plan: Mapped[str] = mapped_column(String(24), default="*")
    unit: Mapped[PriceUnit] = mapped_column(String(20))
    #: GPUs in the priced instance or server (``per_server_hour``, ``per_server``)
    gpus_per_unit: Mapped[int | None] = mapped_column(Integer)
    low: Mapped[Decimal] = mapped_column(Numeric(20, 6))
    expected: Mapped[Decimal | None] = mapped_column(Numeric(20, 6))
    high: Mapped[Decimal] = mapped_column(Numeric(20, 6))
    currency: Mapped[Currency] = mapped_column(String(3))
    region: Mapped[str] = mapped_column(String(40))
    #: every region one price holds in, where the seed row lists several (``regions``): the loader stores
    #: one row per region (``region``), each with the whole list; null for a row of one region
    regions: Mapped[list[str] | None] = mapped_column(JSON)
    valid_from: Mapped[dt.date] = mapped_column(Date)
    valid_to: Mapped[dt.date | None] = mapped_column(Date)
    #: the most GPUs the provider sells in this plan and region, where published
    capacity_gpus: Mapped[int | None] = mapped_column(Integer)
    #: days from order to use, where known (reservations booked ahead, server procurement)
    lead_time_days_low: Mapped[Decimal | None] = mapped_column(Numeric(10, 4))
    lead_time_days_high: Mapped[Decimal | None] = mapped_column(Numeric(10, 4))
    #: a volume tier: the row applies from this many GPUs up
    min_gpus: Mapped[int | None] = mapped_column(Integer)
    #: where the hardware runs and who shares it (``data_security`` levels accept some)
    residency: Mapped[Residency | None] = mapped_column(String(24))
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
    #: when the figure was read from its source
    retrieved_on: Mapped[dt.date | None] = mapped_column(Date)
    notes: Mapped[str | None] = mapped_column(Text)
    #: the fabric between the nodes of an instance or platform offer (null where the source does not say);
    #: for an own cluster's ``network_fabric`` rows, what the fabric is
    interconnect: Mapped[Interconnect | None] = mapped_column(String(12))
    #: how a platform (``ai_compute_platform``) offer bills; null elsewhere
    billing: Mapped[Billing | None] = mapped_column(String(16))
    #: a tier by IT load: the row applies from this many kW up (colocation: retail below wholesale)
    min_kw: Mapped[Decimal | None] = mapped_column(Numeric(12, 3))
    #: a short reservation's longest term in days (Capacity Blocks: 182); a longer horizon is renewals
    max_term_days: Mapped[int | None] = mapped_column(Integer)


#: one list price row per these columns (a new price is a new ``valid_from``)
PRICE_NATURAL_KEY = ("option", "provider", "item", "subject", "gpu_model", "plan", "region", "currency", "valid_from")


class PriceItem(PriceColumns, Base):
    """A list price with its validity period, changed by new dated rows, never overwritten. An *offer* is a row
    of an item bought by itself (an instance-hour, a platform GPU-hour, a server); the provider's other rows
    (network, power, colocation, a reservation discount…) are components priced with it (docs/price-books.md)."""

    __tablename__ = "price_items"
    __table_args__ = (
        UniqueConstraint(*PRICE_NATURAL_KEY, name="uq_price_items_natural_key"),
        *price_checks(),
        Index("ix_price_items_lookup", "option", "item", "valid_from"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)


class Region(Base):
    """One region of the hierarchy price rows and availability rules name: a provider's region, a
    subdivision, a country, a continent, or ``global``. Every chain of parents ends at ``global``."""

    __tablename__ = "regions"
    __table_args__ = (
        CheckConstraint(_in("kind", REGION_KINDS), name="kind"),
        CheckConstraint("(parent IS NULL) = (kind = 'global')", name="parent_unless_global"),
    )

    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    kind: Mapped[RegionKind] = mapped_column(String(16))
    parent: Mapped[str | None] = mapped_column(ForeignKey("regions.key"))
    #: whose region it is (a provider region of one provider), else null
    provider: Mapped[str | None] = mapped_column(ForeignKey("providers.key"))
    source: Mapped[str] = mapped_column(Text)
    #: a bloc's member countries (keys of countries); null for every other kind
    members: Mapped[list[str] | None] = mapped_column(JSON)


class AvailabilityRule(Base):
    """An export or import rule on a GPU model in a jurisdiction over a period, binding the buyer or the
    hardware's place (``app.core.vocab``). Dated like prices: a new row changes it, the old one closed."""

    __tablename__ = "availability_rules"
    __table_args__ = (
        UniqueConstraint("gpu_model", "jurisdiction", "kind", "valid_from"),
        CheckConstraint(_in("effect", AVAILABILITY_EFFECTS), name="effect"),
        CheckConstraint(_in("scope", AVAILABILITY_SCOPES), name="scope"),
        CheckConstraint(_in("kind", AVAILABILITY_KINDS), name="kind"),
        CheckConstraint("valid_to IS NULL OR valid_to > valid_from", name="validity_ordered"),
        CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    gpu_model: Mapped[str] = mapped_column(ForeignKey("gpu_models.key"))
    #: a key of ``regions`` (a country or bloc, never global): the rule applies there and in every region under it
    jurisdiction: Mapped[str] = mapped_column(ForeignKey("regions.key"))
    scope: Mapped[AvailabilityScope] = mapped_column(String(8))
    kind: Mapped[AvailabilityKind] = mapped_column(String(8))
    effect: Mapped[AvailabilityEffect] = mapped_column(String(20))
    valid_from: Mapped[dt.date] = mapped_column(Date)
    valid_to: Mapped[dt.date | None] = mapped_column(Date)
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
    rationale: Mapped[str] = mapped_column(Text)


class ExchangeRate(Base):
    """A dated reference rate: ``rate`` units of ``quote`` (always CNY, the pivot) for one ``base``."""

    __tablename__ = "exchange_rates"
    __table_args__ = (
        UniqueConstraint("base", "quote", "valid_on"),
        CheckConstraint("rate > 0", name="rate_positive"),
        CheckConstraint(_in("base", CURRENCIES), name="base"),
        CheckConstraint(f"quote = {PIVOT!r}", name="quote_is_pivot"),
        CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    base: Mapped[Currency] = mapped_column(String(3))
    quote: Mapped[Pivot] = mapped_column(String(3))
    rate: Mapped[Decimal] = mapped_column(Numeric(18, 8))
    valid_on: Mapped[dt.date] = mapped_column(Date)
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
    retrieved_on: Mapped[dt.date | None] = mapped_column(Date)
    notes: Mapped[str | None] = mapped_column(Text)


class DataSecurityLevel(Base):
    """What a profile's ``data_security`` level accepts: the residencies an offer may have, and where
    its data may sit (``data_location``)."""

    __tablename__ = "data_security_levels"
    __table_args__ = (
        CheckConstraint(_in("key", DATA_SECURITY_LEVELS), name="key"),
        CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),
        CheckConstraint(_in("data_location", DATA_LOCATIONS), name="data_location"),
    )

    key: Mapped[DataSecurity] = mapped_column(String(20), primary_key=True)
    accepted_residencies: Mapped[list[Residency]] = mapped_column(JSON)
    #: ``anywhere``, ``jurisdiction`` (the buyer's country or its bloc) or ``premises`` (the buyer's own)
    data_location: Mapped[DataLocation] = mapped_column(String(12), default="anywhere")
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
    rationale: Mapped[str] = mapped_column(Text)


class Assumption(Base):
    """A non-price parameter: a range with a unit, a source, and a rationale when it is assumed."""

    __tablename__ = "assumptions"
    __table_args__ = (
        UniqueConstraint("option", "key"),
        *_range_checks(),
        CheckConstraint(_in("unit", ASSUMPTION_UNITS), name="unit"),
        CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    #: an option key, or ``*`` for a parameter that belongs to no single option
    option: Mapped[str] = mapped_column(String(40))
    key: Mapped[str] = mapped_column(String(60))
    unit: Mapped[AssumptionUnit] = mapped_column(String(20))
    low: Mapped[Decimal] = mapped_column(Numeric(18, 6))
    expected: Mapped[Decimal | None] = mapped_column(Numeric(18, 6))
    high: Mapped[Decimal] = mapped_column(Numeric(18, 6))
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
    rationale: Mapped[str | None] = mapped_column(Text)


class ScenarioRule(Base):
    """A declarative condition on the profile (and the option's assessment) with an effect on an option."""

    __tablename__ = "scenario_rules"
    __table_args__ = (
        CheckConstraint(_in("effect", RULE_EFFECTS), name="effect"),
        CheckConstraint(_in("match", RULE_MATCHES), name="match"),
        CheckConstraint(
            "(effect = 'infeasible' AND points IS NULL) "
            "OR (effect <> 'infeasible' AND points IS NOT NULL AND points > 0)",
            name="points_fit_effect",
        ),
        CheckConstraint(_in("source_quality", SOURCE_QUALITIES), name="source_quality"),
    )

    key: Mapped[str] = mapped_column(String(60), primary_key=True)
    option: Mapped[str] = mapped_column(String(40))
    description: Mapped[str] = mapped_column(Text)
    match: Mapped[RuleMatch] = mapped_column(String(3))
    conditions: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    effect: Mapped[RuleEffect] = mapped_column(String(12))
    points: Mapped[Decimal | None] = mapped_column(Numeric(6, 2))
    reason: Mapped[str] = mapped_column(Text)
    rationale: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text)
    source_quality: Mapped[SourceQuality] = mapped_column(String(12))
