"""Seed files: the knowledge base as reviewed YAML, validated with pydantic, applied atomically.

``read_seeds`` validates every file before anything touches the database; ``plan`` diffs the
files against the database by natural key; ``apply`` writes the plan and records a new knowledge
version in the same transaction — or, when nothing changed, writes nothing at all.
Price rows are append-only: a seed may close a price (``valid_to``) or fix its wording, but not
change its figures or drop it; a new price is a new row with a new ``valid_from``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.core import rules as rule_engine
from app.core.vocab import (
    AssumptionUnit,
    Currency,
    DataSecurity,
    PriceUnit,
    ProviderKind,
    Residency,
    RuleEffect,
    RuleMatch,
    RuleOperator,
    SourceQuality,
)
from app.core.vocab import Plan as PricePlan
from app.kb import audit, notify
from app.kb import models as m

SECTIONS = (
    "providers",
    "gpu_models",
    "servers",
    "prices",
    "exchange_rates",
    "data_security_levels",
    "assumptions",
    "rules",
)


class SeedError(ValueError):
    """A seed file is invalid; the message names the file, the record and the field."""


class _Seed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _RangeSeed(_Seed):
    low: Decimal
    expected: Decimal | None = None
    high: Decimal

    @model_validator(mode="after")
    def _ordered(self) -> _RangeSeed:
        if self.low > self.high:
            raise ValueError(f"field 'low': low ({self.low}) is above high ({self.high})")
        if self.expected is not None and not (self.low <= self.expected <= self.high):
            raise ValueError(f"field 'expected': {self.expected} is outside low–high ({self.low}–{self.high})")
        return self


class GpuModelSeed(_Seed):
    key: str = Field(pattern=r"^[a-z0-9_]{1,40}$")
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


class ServerSeed(_Seed):
    key: str = Field(pattern=r"^[a-z0-9_]{1,40}$")
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


class ProviderSeed(_Seed):
    key: str = Field(pattern=r"^[a-z0-9_]{1,60}$")
    name: str = Field(min_length=1, max_length=120)
    kind: ProviderKind
    country: str | None = Field(default=None, pattern=r"^[A-Z]{2}$")
    website: str | None = Field(default=None, max_length=200)
    notes: str | None = None


class PriceSeed(_RangeSeed):
    option: str = Field(pattern=r"^(\*|[a-z0-9_]{1,40})$")
    provider: str = Field(pattern=r"^[a-z0-9_]{1,60}$")
    item: str = Field(pattern=r"^[a-z0-9_]{1,40}$")
    subject: Star = Field(default="*", min_length=1, max_length=120)
    gpu_model: Star = Field(default="*", pattern=r"^(\*|[a-z0-9_]{1,40})$")
    plan: Annotated[PricePlan, BeforeValidator(_star)] = "*"
    unit: PriceUnit
    gpus_per_unit: int | None = Field(default=None, gt=0, le=1024)
    # the columns hold six decimals: more would be rounded silently, so they are refused
    low: Decimal = Field(ge=0, decimal_places=6)
    expected: Decimal | None = Field(default=None, decimal_places=6)
    high: Decimal = Field(decimal_places=6)
    currency: Currency
    region: str = Field(min_length=1, max_length=40)
    valid_from: dt.date
    valid_to: dt.date | None = None
    capacity_gpus: int | None = Field(default=None, gt=0)
    lead_time_days_low: Decimal | None = Field(default=None, ge=0, le=3650)
    lead_time_days_high: Decimal | None = Field(default=None, ge=0, le=3650)
    min_gpus: int | None = Field(default=None, gt=0)
    residency: Residency | None = None
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    retrieved_on: dt.date | None = None
    notes: str | None = None

    @model_validator(mode="after")
    def _period(self) -> PriceSeed:
        if self.valid_to is not None and self.valid_to <= self.valid_from:
            raise ValueError(f"field 'valid_to': {self.valid_to} is not after valid_from ({self.valid_from})")
        if self.unit == "fraction" and self.high > 1:
            raise ValueError("field 'high': a fraction cannot exceed 1")
        low, high = self.lead_time_days_low, self.lead_time_days_high
        if (low is None) != (high is None) or (low is not None and high is not None and low > high):
            raise ValueError("field 'lead_time_days_high': give lead_time_days_low and _high together, low ≤ high")
        return self


class ExchangeRateSeed(_Seed):
    base: Currency
    quote: Literal["CNY"] = "CNY"
    rate: Decimal = Field(gt=0, decimal_places=8)
    valid_on: dt.date
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    retrieved_on: dt.date | None = None
    notes: str | None = None


class DataSecurityLevelSeed(_Seed):
    key: DataSecurity
    accepted_residencies: list[Residency] = Field(min_length=1)
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    rationale: str = Field(min_length=1)


class AssumptionSeed(_RangeSeed):
    option: str = Field(pattern=r"^(\*|[a-z0-9_]{1,40})$")
    key: str = Field(pattern=r"^[a-z0-9_]{1,60}$")
    unit: AssumptionUnit
    source: str = Field(min_length=1)
    source_quality: SourceQuality
    rationale: str | None = None

    @model_validator(mode="after")
    def _assumed_needs_rationale(self) -> AssumptionSeed:
        if self.source_quality == "assumption" and not self.rationale:
            raise ValueError("field 'rationale': an assumption needs a rationale")
        return self


class ConditionSeed(_Seed):
    field: str
    op: RuleOperator
    value: Any

    @model_validator(mode="after")
    def _paths(self) -> ConditionSeed:
        problem = rule_engine.check_path(self.field)
        if problem is None and isinstance(self.value, dict):
            if set(self.value) != {"ref"} or not isinstance(self.value["ref"], str):
                problem = "a value that is a mapping must be {ref: <field path>}"
            else:
                problem = rule_engine.check_path(self.value["ref"])
        if problem:
            raise ValueError(problem)
        return self


class RuleSeed(_Seed):
    key: str = Field(pattern=r"^[a-z0-9_]{1,60}$")
    option: str = Field(pattern=r"^(\*|[a-z0-9_]{1,40})$")
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
            raise ValueError("field 'points': bonus and penalty rules need points; infeasible rules take none")
        return self


SEED_MODELS: dict[str, type[_Seed]] = {
    "providers": ProviderSeed,
    "gpu_models": GpuModelSeed,
    "servers": ServerSeed,
    "prices": PriceSeed,
    "exchange_rates": ExchangeRateSeed,
    "data_security_levels": DataSecurityLevelSeed,
    "assumptions": AssumptionSeed,
    "rules": RuleSeed,
}
ORM_MODELS: dict[str, type[m.Base]] = {
    "providers": m.Provider,
    "gpu_models": m.GpuModel,
    "servers": m.ServerSku,
    "prices": m.PriceItem,
    "exchange_rates": m.ExchangeRate,
    "data_security_levels": m.DataSecurityLevel,
    "assumptions": m.Assumption,
    "rules": m.ScenarioRule,
}
NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "providers": ("key",),
    "gpu_models": ("key",),
    "servers": ("key",),
    "prices": ("option", "provider", "item", "subject", "gpu_model", "plan", "region", "currency", "valid_from"),
    "exchange_rates": ("base", "quote", "valid_on"),
    "data_security_levels": ("key",),
    "assumptions": ("option", "key"),
    "rules": ("key",),
}
PRICE_FIGURES = ("unit", "gpus_per_unit", "low", "expected", "high")
#: sections whose rows are history: never changed in their figures, never dropped (add a dated row instead)
APPEND_ONLY: dict[str, tuple[str, ...]] = {"prices": PRICE_FIGURES, "exchange_rates": ("rate",)}


@dataclass
class SeedSet:
    """Every record of every seed file, validated, by section."""

    records: dict[str, list[_Seed]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    #: the file each record came from, by (section, natural key): error messages name it
    files: dict[tuple[str, tuple[Any, ...]], str] = field(default_factory=dict)

    def where(self, section: str, key: tuple[Any, ...]) -> str:
        """``"<file>: "`` for a record read from a file, else nothing."""
        file = self.files.get((section, key))
        return f"{file}: " if file else ""

    def rows(self, section: str) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {natural_key(section, r := rec.model_dump()): r for rec in self.records[section]}

    def content_hash(self) -> str:
        canonical = {s: sorted((_canonical(r) for r in self.rows(s).values()), key=json.dumps) for s in SECTIONS}
        return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def natural_key(section: str, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in NATURAL_KEYS[section])


def _canonical(row: dict[str, Any]) -> dict[str, Any]:
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


def read_seeds(path: Path) -> SeedSet:
    """Read and validate ``path`` (a directory of ``*.yaml`` files, or one file)."""
    files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
    if not files:
        raise SeedError(f"{path}: no seed files (*.yaml) found")
    seeds = SeedSet()
    where: dict[tuple[str, tuple[Any, ...]], str] = {}
    for file in files:
        try:
            doc = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise SeedError(f"{file}: cannot be read as YAML: {exc}") from exc
        if doc is None:
            continue
        if not isinstance(doc, dict) or not set(doc) <= set(SECTIONS):
            raise SeedError(f"{file}: top level must be a mapping with sections {', '.join(SECTIONS)}")
        for section, items in doc.items():
            if not isinstance(items, list):
                raise SeedError(f"{file}: section '{section}' must be a list")
            for index, item in enumerate(items):
                label = _record_label(section, index, item)
                try:
                    record = SEED_MODELS[section].model_validate(item)
                except ValidationError as exc:
                    problems = "; ".join(_problem(e) for e in exc.errors())
                    raise SeedError(f"{file}: {section} {label}: {problems}") from exc
                key = natural_key(section, record.model_dump())
                if (section, key) in where:
                    raise SeedError(f"{file}: {section} {label}: duplicates a record of {where[section, key]}")
                where[section, key] = seeds.files[section, key] = str(file)
                seeds.records[section].append(record)
    _check_references(seeds)
    return seeds


def _problem(error: Any) -> str:
    """One validation error as ``field '<name>': <message>``; a record-level check names its field itself."""
    loc = ".".join(str(p) for p in error["loc"])
    if loc:
        return f"field '{loc}': {error['msg']}"
    return str(error["msg"]).removeprefix("Value error, ")


def _record_label(section: str, index: int, item: Any) -> str:
    if isinstance(item, dict):
        parts = [str(item.get(k)) for k in NATURAL_KEYS[section] if item.get(k) is not None]
        if parts:
            return f"#{index + 1} ({'/'.join(parts)})"
    return f"#{index + 1}"


def _check_references(seeds: SeedSet) -> None:
    gpus = {r.key for r in seeds.records["gpu_models"]}  # type: ignore[attr-defined]
    servers = {r.key for r in seeds.records["servers"]}  # type: ignore[attr-defined]
    for s in seeds.records["servers"]:
        assert isinstance(s, ServerSeed)
        if s.gpu_model_key is not None and s.gpu_model_key not in gpus:
            raise SeedError(
                f"{seeds.where('servers', (s.key,))}servers {s.key}: field 'gpu_model_key': "
                f"unknown GPU model '{s.gpu_model_key}'"
            )
    providers = {r.key for r in seeds.records["providers"]}  # type: ignore[attr-defined]
    server_gpu = {r.key: r.gpu_model_key for r in seeds.records["servers"]}  # type: ignore[attr-defined]
    periods: dict[tuple[Any, ...], list[PriceSeed]] = {}
    for p in seeds.records["prices"]:
        assert isinstance(p, PriceSeed)
        where = f"{seeds.where('prices', natural_key('prices', p.model_dump()))}prices {p.option}/{p.item}/{p.subject}"
        if providers and p.provider not in providers:
            raise SeedError(f"{where}: field 'provider': unknown provider '{p.provider}' (add it to providers)")
        if gpus and p.gpu_model != "*" and p.gpu_model not in gpus:
            raise SeedError(f"{where}: field 'gpu_model': unknown GPU model '{p.gpu_model}'")
        if p.item == "server_hardware":
            if p.subject not in servers:
                raise SeedError(f"{where}: field 'subject': unknown server '{p.subject}'")
            if (server_gpu[p.subject] or "*") != p.gpu_model:
                holds = server_gpu[p.subject] or "no named GPU"
                raise SeedError(f"{where}: field 'gpu_model': the server {p.subject} holds {holds}")
        periods.setdefault(
            (p.option, p.provider, p.item, p.subject, p.gpu_model, p.plan, p.region, p.currency), []
        ).append(p)
    for key, rows in periods.items():
        rows.sort(key=lambda r: r.valid_from)
        for before, after in itertools.pairwise(rows):
            if before.valid_to is None or before.valid_to > after.valid_from:
                raise SeedError(
                    f"{seeds.where('prices', natural_key('prices', before.model_dump()))}"
                    f"prices {'/'.join(key)}: field 'valid_to': the period from {before.valid_from} "
                    f"overlaps the one from {after.valid_from} (close it with valid_to: {after.valid_from})"
                )


@dataclass
class Change:
    kind: Literal["add", "change", "retire"]
    section: str
    key: tuple[Any, ...]
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def describe(self) -> str:
        sign = {"add": "+", "change": "~", "retire": "-"}[self.kind]
        label = "/".join(str(k) for k in self.key)
        detail = "; ".join(f"{f}: {a!r} → {b!r}" for f, a, b in ((f, *v) for f, v in self.fields.items()))
        return f"{sign} {self.section} {label}" + (f" ({detail})" if detail else "")


@dataclass
class Plan:
    changes: list[Change]
    content_hash: str
    version: str | None = None

    @property
    def empty(self) -> bool:
        return not self.changes

    def summary(self) -> dict[str, int]:
        return {k: sum(1 for c in self.changes if c.kind == k) for k in ("add", "change", "retire")}


def _orm_row(obj: m.Base, section: str) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in SEED_MODELS[section].model_fields}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return a is not None and b is not None and Decimal(a) == Decimal(b)
    return bool(a == b)


async def plan(session: AsyncSession, seeds: SeedSet) -> Plan:
    """What applying ``seeds`` would add, change and retire. Refuses to rewrite price history."""
    changes: list[Change] = []
    for section in SECTIONS:
        wanted = seeds.rows(section)
        current = {
            natural_key(section, r): r
            for r in (_orm_row(o, section) for o in (await session.scalars(select(ORM_MODELS[section]))).all())
        }
        for key, row in wanted.items():
            if key not in current:
                changes.append(Change("add", section, key))
                continue
            diff = {f: (current[key][f], v) for f, v in row.items() if not _same(current[key][f], v)}
            if diff:
                frozen = set(diff) & set(APPEND_ONLY.get(section, ()))
                if frozen:
                    raise SeedError(
                        f"{seeds.where(section, key)}{section} {'/'.join(map(str, key))}: "
                        f"field '{sorted(frozen)[0]}': "
                        f"{section.replace('_', ' ')} rows are append-only; add a new row with a later date "
                        + ("and close this one with valid_to" if section == "prices" else "")
                    )
                changes.append(Change("change", section, key, diff))
        for key in current.keys() - wanted.keys():
            if section in APPEND_ONLY:
                raise SeedError(
                    f"{section} {'/'.join(map(str, key))}: the row is in the database but in no seed file; "
                    f"{section.replace('_', ' ')} rows are append-only"
                    + (" (close a price with valid_to instead)" if section == "prices" else "")
                )
            changes.append(Change("retire", section, key))
    return Plan(changes, seeds.content_hash())


async def apply(
    session: AsyncSession, seeds: SeedSet, *, note: str = "", dry_run: bool = False, actor: str = "system"
) -> Plan:
    """Apply ``seeds`` in the session's transaction; the caller commits. Nothing changes, no version.

    A load that changes something is recorded in the audit trail (``seeds.load``, by ``actor``) in the
    same transaction, with the knowledge versions before and after.
    """
    # one loader at a time: a second concurrent load waits, then finds nothing left to do
    dialect = session.bind.dialect.name if session.bind is not None else ""
    if dialect == "postgresql":
        await session.execute(text("SELECT pg_advisory_xact_lock(727274)"))
    elif dialect == "sqlite":
        # a write as the transaction's first statement takes SQLite's write lock before anything is
        # read, so the plan below sees every load committed before it (no stale snapshot)
        await session.execute(text("UPDATE knowledge_versions SET id = id WHERE 0"))
    result = await plan(session, seeds)
    if dry_run or result.empty:
        return result
    before = await audit.current_version(session)
    retire_order = list(reversed(SECTIONS))  # rules before servers before GPU models
    for section in retire_order:
        for change in (c for c in result.changes if c.section == section and c.kind == "retire"):
            orm = ORM_MODELS[section]
            cols = [getattr(orm, k) for k in NATURAL_KEYS[section]]
            obj = (
                await session.scalars(select(orm).where(*(c == v for c, v in zip(cols, change.key, strict=True))))
            ).one()
            await session.delete(obj)
    await session.flush()
    for section in SECTIONS:
        wanted = seeds.rows(section)
        orm = ORM_MODELS[section]
        cols = [getattr(orm, k) for k in NATURAL_KEYS[section]]
        for change in (c for c in result.changes if c.section == section and c.kind != "retire"):
            row = _to_orm_values(section, wanted[change.key])
            if change.kind == "add":
                session.add(orm(**row))
            else:
                obj = (
                    await session.scalars(select(orm).where(*(c == v for c, v in zip(cols, change.key, strict=True))))
                ).one()
                for name, value in row.items():
                    setattr(obj, name, value)
        await session.flush()
    version = m.KnowledgeVersion(
        content_hash=result.content_hash,
        created_at=dt.datetime.now(dt.UTC),
        note=note or "seed load",
        summary=result.summary(),
    )
    session.add(version)
    await session.flush()
    result.version = version.label
    await notify.announce(session, version.label)  # delivered at commit
    await audit.record(
        session,
        actor=actor,
        action="seeds.load",
        subject=note or "seed load",
        before=before,
        after=version.label,
        detail={"summary": result.summary(), "content_hash": result.content_hash},
    )
    return result


def _to_orm_values(section: str, row: dict[str, Any]) -> dict[str, Any]:
    if section == "rules":
        row = {**row, "conditions": _canonical({"c": row["conditions"]})["c"]}
    return row


async def record_version(session: AsyncSession, note: str, *, actor: str = "migration") -> str:
    """Record a new knowledge version after a data migration changed rows (hash of the new content),
    and the ``migration.data`` audit event, in the session's transaction."""
    before = await audit.current_version(session)
    seeds = SeedSet()
    for section in SECTIONS:
        for obj in (await session.scalars(select(ORM_MODELS[section]))).all():
            seeds.records[section].append(SEED_MODELS[section].model_validate(_orm_row(obj, section)))
    version = m.KnowledgeVersion(
        content_hash=seeds.content_hash(), created_at=dt.datetime.now(dt.UTC), note=note, summary={}
    )
    session.add(version)
    await session.flush()
    await notify.announce(session, version.label)
    await audit.record(
        session,
        actor=actor,
        action="migration.data",
        subject=note,
        before=before,
        after=version.label,
        detail={"content_hash": version.content_hash},
    )
    return version.label


def describe(changes: Sequence[Change]) -> Iterable[str]:
    return (c.describe() for c in changes)
