"""Read one knowledge version from SQL into the immutable in-memory snapshot."""

from __future__ import annotations

from dataclasses import fields
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.knowledge import Assumption, Condition, GpuSpec, Knowledge, Price, Rule, Server
from app.core.ranges import Range
from app.kb import models as m

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")
ModelT = TypeVar("ModelT", bound=m.Base)


async def _all(session: AsyncSession, model: type[ModelT], *order: Any) -> list[ModelT]:
    return list((await session.scalars(select(model).order_by(*order))).all())


def _range(row: Any) -> Range:
    """A row's ``low``/``expected``/``high`` columns as a Range (``expected`` defaults to the midpoint)."""
    expected = None if row.expected is None else float(row.expected)
    return Range.of(float(row.low), float(row.high), expected)


def _plain(value: Any) -> Any:
    """A column value as the snapshot holds it: NUMERIC as float, everything else unchanged."""
    return float(value) if isinstance(value, Decimal) else value


def build(cls: type[T], row: Any, **given: Any) -> T:
    """The snapshot object ``cls`` of an ORM ``row``, field by field by name; ``given`` overrides
    (the fields the row does not hold as such, like a Range)."""
    values = {f.name: given[f.name] if f.name in given else _plain(getattr(row, f.name)) for f in fields(cls)}
    return cls(**values)


async def latest_version(session: AsyncSession) -> m.KnowledgeVersion | None:
    """The newest knowledge version: one indexed read, cheap enough to poll."""
    newest = await session.scalar(select(func.max(m.KnowledgeVersion.id)))
    return None if newest is None else await session.get(m.KnowledgeVersion, newest)


async def load_knowledge(session: AsyncSession) -> Knowledge | None:
    """The whole knowledge base as of its newest version, or ``None`` when none was ever loaded."""
    version = await latest_version(session)
    if version is None:
        return None
    gpus = {g.key: build(GpuSpec, g) for g in await _all(session, m.GpuModel, m.GpuModel.key)}
    servers = {x.key: build(Server, x) for x in await _all(session, m.ServerSku, m.ServerSku.key)}
    prices = tuple(
        build(Price, p, value=_range(p))
        for p in await _all(session, m.PriceItem, m.PriceItem.option, m.PriceItem.item, m.PriceItem.valid_from.desc())
    )
    assumptions = {
        (a.option, a.key): build(Assumption, a, value=_range(a))
        for a in await _all(session, m.Assumption, m.Assumption.option, m.Assumption.key)
    }
    rules = tuple(
        build(Rule, r, conditions=tuple(Condition(c["field"], c["op"], c["value"]) for c in r.conditions))
        for r in await _all(session, m.ScenarioRule, m.ScenarioRule.key)
    )
    return Knowledge(
        version=version.label,
        created_at=version.created_at,
        gpus=gpus,
        servers=servers,
        prices=prices,
        assumptions=assumptions,
        rules=rules,
    )
