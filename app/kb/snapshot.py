"""Read one knowledge version from SQL into the immutable in-memory snapshot.

Two steps, so that the event loop only waits for the database: ``read_rows`` reads the version's rows
(plain result rows, in one consistent read transaction), and ``Rows.knowledge`` builds the snapshot
from them — CPU only, which ``app.kb.store`` runs in a thread.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.core import records as rec
from app.core.entities import declared
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.vocab import PriceBook
from app.kb import models as m

#: a snapshot record (frozen, so hashable)
T = TypeVar("T", bound=Hashable)


#: each table of a snapshot as ``assemble`` takes it: its keyword, model and the order its rows are read in
TABLES: dict[str, tuple[type[m.Base], tuple[Any, ...]]] = {
    "gpu_models": (m.GpuModel, (m.GpuModel.key,)),
    "servers": (m.ServerSku, (m.ServerSku.key,)),
    "prices": (m.PriceItem, (m.PriceItem.option, m.PriceItem.item, m.PriceItem.valid_from.desc())),
    "assumptions": (m.Assumption, (m.Assumption.option, m.Assumption.key)),
    "rules": (m.ScenarioRule, (m.ScenarioRule.key,)),
    "providers": (m.Provider, (m.Provider.key,)),
    "exchange_rates": (m.ExchangeRate, (m.ExchangeRate.id,)),
    "data_security_levels": (m.DataSecurityLevel, (m.DataSecurityLevel.key,)),
    "regions": (m.Region, (m.Region.key,)),
    "availability_rules": (m.AvailabilityRule, (m.AvailabilityRule.id,)),
}


@dataclass(frozen=True, slots=True)
class Rows:
    """One knowledge version's rows as read: result rows whose columns are attributes (no ORM objects:
    the loop makes nothing it does not need), by ``assemble``'s keyword."""

    version: str
    created_at: dt.datetime
    tables: dict[str, Sequence[Any]]

    def knowledge(self) -> Knowledge:
        """The snapshot of these rows: CPU only (no I/O), safe in any thread."""
        return assemble(self.version, self.created_at, **self.tables)


async def _rows(session: AsyncSession, model: type[m.Base], order: tuple[Any, ...]) -> Sequence[Any]:
    return (await session.execute(select(*model.__table__.columns).order_by(*order))).all()


def _mode(row: Any) -> float:
    """A row's most likely figure: its stored ``expected`` column (the source's), else the midpoint."""
    return (float(row.low) + float(row.high)) / 2 if row.expected is None else float(row.expected)


def _range(row: Any) -> Range:
    """A row's ``low``/``expected``/``high`` columns as the Range of the triangular distribution they
    describe: the stored ``expected`` is its mode (``_mode``), the Range's ``expected`` its mean."""
    return Range.triangular(float(row.low), _mode(row), float(row.high))


def _each_region(row: Any) -> list[dict[str, Any]]:
    """Where a price row holds: its one region, or — a seed record listing several, not yet loaded — one row
    per region; ``regions`` as a tuple (None for a row of one region)."""
    regions = tuple(row.regions) if getattr(row, "regions", None) else None
    if row.region is None and regions:
        return [{"region": region, "regions": regions} for region in regions]
    return [{"regions": regions}]


def _lead_time(row: Any) -> Range | None:
    """A price row's lead time (``lead_time_days_low``/``_high``), if the source gives one."""
    if row.lead_time_days_low is None:
        return None
    return Range.of(float(row.lead_time_days_low), float(row.lead_time_days_high))


def _plain(value: Any) -> Any:
    """A column value as the snapshot holds it: NUMERIC as float, everything else unchanged."""
    return float(value) if isinstance(value, Decimal) else value


def build(cls: type[T], row: Any, **given: Any) -> T:
    """The snapshot object ``cls`` (a record of ``app.core.records``) of an ORM ``row``, field by field by
    name; ``given`` overrides (the fields the row does not hold as such, like a Range)."""
    names = (f.name for f in declared(cls))
    return cls(**{name: given[name] if name in given else _plain(getattr(row, name)) for name in names})


def prices_of(row: Any, *, book: PriceBook = "list", **given: Any) -> list[rec.Price]:
    """The snapshot's rows of one price row (one per region it holds in), from the list (``price_items``, a
    seed record) or an organisation's private book (``org_prices``: ``app.kb.books``); ``given`` overrides."""
    return [
        build(
            rec.Price,
            row,
            value=_range(row),
            mode=_mode(row),
            lead_time_days=_lead_time(row),
            book=book,
            **where,
            **given,
        )
        for where in _each_region(row)
    ]


async def latest_version(session: AsyncSession) -> m.KnowledgeVersion | None:
    """The newest knowledge version: one indexed read, cheap enough to poll."""
    newest = await session.scalar(select(func.max(m.KnowledgeVersion.id)))
    return None if newest is None else await session.get(m.KnowledgeVersion, newest)


async def begin_consistent_read(session: AsyncSession) -> None:
    """Make every later read of ``session``'s transaction see one state of the database.

    The snapshot is about a dozen SELECTs; a seed load committing between two of them would otherwise
    yield a snapshot labelled with one version holding another's rows. PostgreSQL: the transaction is
    REPEATABLE READ (one MVCC snapshot, taken at its first statement). SQLite: an explicit ``BEGIN`` (the
    driver opens none before a SELECT), so the reads share one WAL read transaction. Must be the
    session's first statement.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
    elif dialect == "sqlite":
        await session.execute(text("BEGIN"))


async def read_rows(session: AsyncSession) -> Rows | None:
    """The rows of the newest knowledge version, or ``None`` when none was ever loaded: read in one
    transaction (``begin_consistent_read``), so ``session`` must not have run a statement yet."""
    await begin_consistent_read(session)
    version = await latest_version(session)
    if version is None:
        return None
    tables = {name: await _rows(session, model, order) for name, (model, order) in TABLES.items()}
    return Rows(version.label, version.created_at, tables)


async def load_knowledge(session: AsyncSession) -> Knowledge | None:
    """The whole knowledge base as of its newest version, or ``None`` when none was ever loaded
    (``read_rows``, then the snapshot built here, in the caller's thread)."""
    rows = await read_rows(session)
    return None if rows is None else rows.knowledge()


def assemble(
    version: str,
    created_at: dt.datetime,
    *,
    gpu_models: Iterable[Any],
    servers: Iterable[Any],
    prices: Iterable[Any],
    assumptions: Iterable[Any],
    rules: Iterable[Any],
    providers: Iterable[Any] = (),
    exchange_rates: Iterable[Any] = (),
    data_security_levels: Iterable[Any] = (),
    regions: Iterable[Any] = (),
    availability_rules: Iterable[Any] = (),
) -> Knowledge:
    """The snapshot of rows that carry the columns as attributes (ORM rows, or seed records), every
    object built field by field by name."""
    return Knowledge(
        version=version,
        created_at=created_at,
        gpus={g.key: build(rec.GpuSpec, g) for g in gpu_models},
        servers={x.key: build(rec.Server, x) for x in servers},
        prices=tuple(price for p in prices for price in prices_of(p)),
        assumptions={(a.option, a.key): build(rec.Assumption, a, value=_range(a), mode=_mode(a)) for a in assumptions},
        rules=tuple(
            build(rec.Rule, r, conditions=tuple(rec.Condition(c["field"], c["op"], c["value"]) for c in r.conditions))
            for r in rules
        ),
        providers={x.key: build(rec.Provider, x) for x in providers},
        rates=tuple(build(rec.ExchangeRate, r) for r in exchange_rates),
        security_levels={
            x.key: build(rec.DataSecurityLevel, x, accepted_residencies=tuple(x.accepted_residencies))
            for x in data_security_levels
        },
        regions={x.key: build(rec.Region, x, members=tuple(x.members) if x.members else None) for x in regions},
        availability=tuple(build(rec.AvailabilityRule, x) for x in availability_rules),
    )
