"""Loading seeds into the database: ``plan`` diffs a validated ``SeedSet`` against the tables by natural
key; ``apply`` writes the plan and records a new knowledge version and its audit event in the same
transaction — or, when nothing changed, writes nothing at all; ``record_version`` does the same for
a data migration."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb import audit, notify
from app.kb import models as m
from app.kb.seeds.files import region_depths
from app.kb.seeds.problems import SeedError, SeedProblem
from app.kb.seeds.records import NATURAL_KEYS, SECTIONS, SEED_MODELS, SeedSet, canonical, natural_key

ORM_MODELS: dict[str, type[m.Base]] = {
    "providers": m.Provider,
    "regions": m.Region,
    "gpu_models": m.GpuModel,
    "servers": m.ServerSku,
    "prices": m.PriceItem,
    "exchange_rates": m.ExchangeRate,
    "data_security_levels": m.DataSecurityLevel,
    "assumptions": m.Assumption,
    "rules": m.ScenarioRule,
    "availability_rules": m.AvailabilityRule,
}
PRICE_FIGURES = ("unit", "gpus_per_unit", "low", "expected", "high")
#: sections whose rows are history: never changed in their figures, never dropped (add a dated row instead)
APPEND_ONLY: dict[str, tuple[str, ...]] = {
    "prices": PRICE_FIGURES,
    "exchange_rates": ("rate",),
    "availability_rules": ("effect",),
}
#: sections whose rows reference rows of the same table: written parents first, retired children first
SELF_REFERENCING = ("regions",)


def _shown(value: Any) -> str:
    """A field's value as a seed file spells it: dates ISO, strings quoted, numbers as they are."""
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return repr(value)


def _plain(value: Any) -> str:
    """A figure as a person compares it: ``100`` for the database's ``100.000000``."""
    return format(value.normalize(), "f") if isinstance(value, Decimal) else _shown(value)


@dataclass
class Change:
    kind: Literal["add", "change", "retire"]
    section: str
    key: tuple[Any, ...]
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def describe(self) -> str:
        sign = {"add": "+", "change": "~", "retire": "-"}[self.kind]
        label = "/".join(str(k) for k in self.key)
        detail = "; ".join(f"{f}: {_shown(a)} → {_shown(b)}" for f, (a, b) in self.fields.items())
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
                    name = sorted(frozen)[0]
                    raise SeedError(
                        SeedProblem(
                            f"{_plain(current[key][name])} in the database, {_plain(row[name])} in the file: "
                            f"{section.replace('_', ' ')} rows are append-only; add a new row with a later date "
                            + ("and close this one with valid_to" if section == "prices" else ""),
                            section=section,
                            record="/".join(map(str, key)),
                            field=(name,),
                            **seeds.locate(section, key),
                        )
                    )
                changes.append(Change("change", section, key, diff))
        for key in current.keys() - wanted.keys():
            if section in APPEND_ONLY:
                raise SeedError(
                    SeedProblem(
                        f"the row is in the database but in no seed file; {section.replace('_', ' ')} rows are "
                        "append-only" + (" (close a price with valid_to instead)" if section == "prices" else ""),
                        section=section,
                        record="/".join(map(str, key)),
                    )
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
    db_depths = await _db_region_depths(session)
    for section in retire_order:
        retired = [c for c in result.changes if c.section == section and c.kind == "retire"]
        if section in SELF_REFERENCING:  # children first
            retired.sort(key=lambda c: -db_depths.get(c.key[0], 0))
        for change in retired:
            orm = ORM_MODELS[section]
            cols = [getattr(orm, k) for k in NATURAL_KEYS[section]]
            obj = (
                await session.scalars(select(orm).where(*(c == v for c, v in zip(cols, change.key, strict=True))))
            ).one()
            await session.delete(obj)
            if section in SELF_REFERENCING:
                await session.flush()
    await session.flush()
    depths = region_depths({r.key: r.parent for r in seeds.records["regions"]})  # type: ignore[attr-defined]
    for section in SECTIONS:
        wanted = seeds.rows(section)
        orm = ORM_MODELS[section]
        cols = [getattr(orm, k) for k in NATURAL_KEYS[section]]
        written = [c for c in result.changes if c.section == section and c.kind != "retire"]
        if section in SELF_REFERENCING:  # parents first
            written.sort(key=lambda c: depths.get(c.key[0], 0))
        for change in written:
            row = _to_orm_values(section, wanted[change.key])
            if change.kind == "add":
                session.add(orm(**row))
            else:
                obj = (
                    await session.scalars(select(orm).where(*(c == v for c, v in zip(cols, change.key, strict=True))))
                ).one()
                for name, value in row.items():
                    setattr(obj, name, value)
            if section in SELF_REFERENCING:
                await session.flush()
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


async def _db_region_depths(session: AsyncSession) -> dict[str, int]:
    """How far each region in the database lies below its root (to retire children before parents)."""
    return region_depths({r.key: r.parent for r in (await session.scalars(select(m.Region))).all()})


def _to_orm_values(section: str, row: dict[str, Any]) -> dict[str, Any]:
    if section == "rules":
        row = {**row, "conditions": canonical({"c": row["conditions"]})["c"]}
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
