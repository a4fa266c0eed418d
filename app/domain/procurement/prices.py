"""An organisation's private price book: rows checked exactly as seed rows are, stored in one new book version,
listed, and closed — never erased.

A row is checked as ``compute-advisor seeds check`` checks a seed file's price row: the record itself by
``app.kb.seeds.PriceSeed`` (its fields, its own rules, its words: ``validation_problems``); then, in the order
``seeds check`` checks them (``app.kb.seeds.files``, ``app.cli.common.check_plans``), what it names against the
list knowledge being served — its provider, GPU model, regions (no bloc), server (and the GPU it holds), option
(loaded) and plan (one its option's plugin sells) — and that no two rows of one price overlap in time: neither
of one seed-file price (option, provider, item, subject, GPU model, plan, region, currency) nor of one offer of
the book (``app.kb.books.identity``), among the rows sent and against the organisation's book. Any problem
refuses every row (``Refused``); a problem names the row and field (``prices.<i>.<field>``).

Rows are added, and a row closed, in a new book version: the organisation's ``book_version`` is raised by an
``UPDATE … SET book_version = book_version + 1 … RETURNING`` as the transaction's first statement, so the row's
lock (PostgreSQL) or the database's write lock (SQLite) is held from there to the commit: two changes of one
book never get the same version, and the second checks its rows against the first's. Each change is audited
(``prices.add``, ``prices.close``) in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, cast

from advanced_alchemy.filters import LimitOffset
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from pydantic import ValidationError
from sqlalchemy import Integer, Numeric, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.knowledge import ANY, Knowledge
from app.core.text import msg
from app.domain.procurement.price_schemas import UPLOAD_COLUMNS, PrivatePriceList, PrivatePriceRead
from app.domain.procurement.price_sheets import Refused, RowProblem, Sent
from app.host.options import LoadedOption
from app.kb import audit
from app.kb import service_records as sr
from app.kb.books import identity, rows_at
from app.kb.seeds import PriceSeed, SeedProblem, validation_problems
from app.web.problems import ProblemException

#: the seed files' price: two rows of one overlap in time nowhere (``seeds check``)
SEED_PRICE = ("option", "provider", "item", "subject", "gpu_model", "plan", "region", "currency")
#: what an integer column holds (PostgreSQL's ``integer``)
MOST_INTEGER = 2**31 - 1
_PRICE = sr.OrgPrice

#: a row checked, one per region it holds in (``PriceSeed.each_region``), with its place among the rows sent
Loaded = tuple[int, PriceSeed]


def check_rows(sent: Sequence[Sent], kb: Knowledge, options: Mapping[str, LoadedOption]) -> list[Loaded]:
    """Every row sent, checked (``Refused`` with every problem found when any is wrong); each row as stored."""
    problems: list[tuple[int, RowProblem]] = []
    loaded: list[Loaded] = []
    for i, row in enumerate(sent):
        try:
            record = PriceSeed.model_validate(row.values)
        except ValidationError as exc:
            found = validation_problems(exc, PriceSeed.model_fields)
            problems += [(i, _problem(i, row, p)) for p in found]
            continue
        problem = _reference_problem(record, kb, options) or _storage_problem(record)
        if problem is not None:
            problems.append((i, _problem(i, row, problem)))
            continue
        loaded += [(i, one) for one in record.each_region()]
    problems += [(i, _problem(i, sent[i], p)) for i, p in _overlaps(loaded)]
    if problems:
        raise Refused([p for _, p in sorted(problems, key=lambda found: found[0])])
    return loaded


def _problem(i: int, row: Sent, problem: SeedProblem) -> RowProblem:
    """A seed problem of row ``i`` as the body names it: ``prices.<i>.<field>``, the row's line first."""
    name = ".".join(["prices", str(i), *map(str, problem.field)])
    message = problem.message
    if row.where is not None:
        message = msg("procurement.prices.at", f"{row.where}: {message}", place=row.where, message=message)
    return RowProblem(name, message)


def _blame(field: str, message: str) -> SeedProblem:
    return SeedProblem(message, field=(field,))


def _reference_problem(p: PriceSeed, kb: Knowledge, options: Mapping[str, LoadedOption]) -> SeedProblem | None:
    """The first key the row names that the list knowledge lacks, in the order ``seeds check`` checks them."""
    places = list(p.regions) if p.regions else [p.region or ANY]
    if p.provider not in kb.providers:
        text = f"unknown provider '{p.provider}' (see /v1/providers)"
        return _blame("provider", msg("procurement.prices.unknown_provider", text, provider=p.provider))
    if p.gpu_model != ANY and p.gpu_model not in kb.gpus:
        text = f"unknown GPU model '{p.gpu_model}' (see /v1/gpus)"
        return _blame("gpu_model", msg("procurement.prices.unknown_gpu_model", text, gpu_model=p.gpu_model))
    field = "regions" if p.regions else "region"
    unknown = [r for r in places if r != ANY and r not in kb.regions]
    if unknown:
        text = f"unknown region '{unknown[0]}' (see /v1/regions)"
        return _blame(field, msg("procurement.prices.unknown_region", text, region=unknown[0]))
    if any(kb.regions[r].kind == "bloc" for r in places if r in kb.regions):
        text = "a bloc is no place hardware is in: name the regions the price holds in"
        return _blame(field, msg("procurement.prices.bloc", text))
    if p.item == "server_hardware":
        server = kb.servers.get(p.subject)
        if server is None:
            text = f"unknown server '{p.subject}' (see /v1/servers)"
            return _blame("subject", msg("procurement.prices.unknown_server", text, server=p.subject))
        if (server.gpu_model_key or ANY) != p.gpu_model:
            holds = server.gpu_model_key or "no named GPU"
            text = f"the server {p.subject} holds {holds}"
            return _blame("gpu_model", msg("procurement.prices.server_gpu", text, server=p.subject, holds=holds))
    if p.option != ANY and p.option not in options:
        known = ", ".join(options)
        text = f"no loaded option '{p.option}'; the options are {known} (see /v1/options)"
        return _blame("option", msg("procurement.prices.unknown_option", text, option=p.option, known=known))
    sold = None if p.option == ANY else options[p.option].spec.price_plans
    if sold is not None and p.plan != ANY and p.plan not in sold:
        listed = ", ".join(sold) if sold else "none (its rows carry no plan: *)"
        text = f"'{p.plan}' is not a plan option {p.option} sells ({listed})"
        return _blame("plan", msg("procurement.prices.plan_not_sold", text, plan=p.plan, option=p.option, plans=listed))
    billings = () if p.option == ANY else options[p.option].spec.billings
    if p.billing is not None and p.billing not in billings:
        if not billings:
            text = f"option {p.option} does not say how its rows bill: leave billing out"
            return _blame("billing", msg("procurement.prices.billing_unsaid", text, option=p.option))
        listed = ", ".join(billings)
        text = f"'{p.billing}' is not how option {p.option} bills ({listed})"
        return _blame(
            "billing",
            msg("procurement.prices.billing_not_sold", text, billing=p.billing, option=p.option, billings=listed),
        )
    return None


def _storage_problem(p: PriceSeed) -> SeedProblem | None:
    """A figure larger than its column holds (a seed row's rules leave magnitudes to the database)."""
    columns = _PRICE.__table__.columns
    for name in UPLOAD_COLUMNS:
        value, kind = getattr(p, name), columns[name].type
        if isinstance(kind, Numeric) and isinstance(value, Decimal) and kind.precision and kind.scale is not None:
            most = Decimal(10) ** (kind.precision - kind.scale) - Decimal(10) ** -kind.scale
        elif isinstance(kind, Integer) and isinstance(value, int):
            most = Decimal(MOST_INTEGER)
        else:
            continue
        if abs(value) > most:
            text = f"{value} is more than the book holds (at most {most})"
            return _blame(name, msg("procurement.prices.too_large", text, value=str(value), most=str(most)))
    return None


def _keys(p: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The seed file's price and the book's offer a row (or a stored row) prices."""
    return ("price", *(getattr(p, k) for k in SEED_PRICE)), ("offer", *identity(cast(Any, p)))


def _overlap(a_from: dt.date, a_to: dt.date | None, b_from: dt.date, b_to: dt.date | None) -> bool:
    return (b_to is None or a_from < b_to) and (a_to is None or b_from < a_to)


def _overlaps(loaded: Sequence[Loaded]) -> list[tuple[int, SeedProblem]]:
    """Rows sent whose periods overlap another's of the same price or offer, each blamed at the earlier as
    ``seeds check`` blames it (its ``valid_to``)."""
    periods: dict[tuple[Any, ...], list[Loaded]] = {}
    for i, p in loaded:
        for key in _keys(p):
            periods.setdefault(key, []).append((i, p))
    found: dict[tuple[int, int], SeedProblem] = {}
    for rows in periods.values():
        rows.sort(key=lambda row: row[1].valid_from)
        for (i, before), (j, after) in itertools.pairwise(rows):
            if (i, j) in found or not _overlap(before.valid_from, before.valid_to, after.valid_from, after.valid_to):
                continue
            start, later = before.valid_from.isoformat(), after.valid_from.isoformat()
            text = f"the period from {start} overlaps the one from {later} of row {j} sent: end it on {later}"
            said = msg("procurement.prices.overlap", text, start=start, later=later, other=str(j))
            found[i, j] = _blame("valid_to", said)
    return [(i, problem) for (i, _), problem in found.items()]


def _book_overlaps(
    loaded: Sequence[Loaded], book: Iterable[tuple[Any, dt.date | None]]
) -> list[tuple[int, SeedProblem]]:
    """Rows sent that overlap a row of the organisation's book of the same price or offer."""
    held: dict[tuple[Any, ...], list[tuple[Any, dt.date | None]]] = {}
    for row, valid_to in book:
        for key in _keys(row):
            held.setdefault(key, []).append((row, valid_to))
    found: dict[tuple[int, int], SeedProblem] = {}
    for i, p in loaded:
        for key in _keys(p):
            for row, valid_to in held.get(key, ()):
                if (i, row.id) in found or not _overlap(p.valid_from, p.valid_to, row.valid_from, valid_to):
                    continue
                start, day = row.valid_from.isoformat(), p.valid_from.isoformat()
                close = f"DELETE /v1/price-books/prices/{row.id}?on={day}"
                if valid_to is None:
                    text = (
                        f"the organisation's row {row.id} prices the same offer from {start}, open-ended: close it "
                        f"first ({close})"
                    )
                    said = msg("procurement.prices.overlap_book", text, id=str(row.id), start=start, close=close)
                else:
                    end = valid_to.isoformat()
                    text = (
                        f"the organisation's row {row.id} prices the same offer from {start} to {end}: start this "
                        f"row on or after {end}, or close that row first ({close})"
                    )
                    said = msg(
                        "procurement.prices.overlap_book_until", text, id=str(row.id), start=start, end=end, close=close
                    )
                found[i, row.id] = _blame("valid_from", said)
    return [(i, problem) for (i, _), problem in found.items()]


async def next_version(session: AsyncSession, org: str) -> int:
    """Raise the organisation's book version as the transaction's first write: its new version (the lock held
    to the commit). 403 problem when the organisation is gone."""
    version = await session.scalar(
        update(sr.Organisation)
        .where(sr.Organisation.key == org, sr.Organisation.deleted_at.is_(None))
        .values(book_version=sr.Organisation.book_version + 1)
        .returning(sr.Organisation.book_version)
        .execution_options(synchronize_session=False)
    )
    if version is None:
        raise no_organisation()
    return int(version)


def no_organisation() -> ProblemException:
    """403: the key belongs to no organisation, and a private price book is one organisation's."""
    text = (
        "this API key belongs to no organisation, and a private price book is an organisation's: use a key "
        "created with `compute-advisor keys create … --org ORG`"
    )
    return ProblemException(
        403, "no-organisation", "The API key belongs to no organisation", msg("procurement.prices.no_org", text)
    )


async def add(
    session: AsyncSession, org: str, actor: str, sent: Sequence[Sent], loaded: Sequence[Loaded]
) -> tuple[int, list[sr.OrgPrice]]:
    """Store the checked rows in the organisation's next book version, audited, committed: (version, rows).
    ``Refused`` (nothing stored) when one overlaps a row of the book."""
    version = await next_version(session, org)
    book = rows_at(await _rows_of(session, org), version - 1)
    clashes = _book_overlaps(loaded, book)
    if clashes:
        await session.rollback()
        raise Refused([_problem(i, sent[i], p) for i, p in sorted(clashes, key=lambda found: found[0])])
    now = dt.datetime.now(dt.UTC)
    rows = [
        _PRICE(
            org=org,
            added_in=version,
            closed_in=None,
            closed_on=None,
            created_at=now,
            created_by=actor,
            **p.model_dump(),
        )
        for _, p in loaded
    ]
    session.add_all(rows)
    await session.flush()
    ids = [row.id for row in rows]
    subject = f"{len(rows)} private price row(s) of {org}"
    detail = {"org": org, "book_version": version, "ids": ids}
    await audit.change(session, actor=actor, action="prices.add", subject=subject, detail=detail)
    await session.commit()
    return version, rows


async def _rows_of(session: AsyncSession, org: str) -> list[sr.OrgPrice]:
    return list((await session.scalars(select(_PRICE).where(_PRICE.org == org).order_by(_PRICE.id))).all())


async def close(session: AsyncSession, org: str, price_id: int, on: dt.date, actor: str) -> sr.OrgPrice:
    """Close the organisation's row ``price_id`` on ``on`` in a new book version, audited, committed. 404 for
    a row of no book of this organisation (another's too), 409 for a row closed already, 422 (naming ``on``) for
    a day before its first."""
    version = await next_version(session, org)
    row = await session.scalar(select(_PRICE).where(_PRICE.id == price_id, _PRICE.org == org))
    refusal = _refusal(row, price_id, on)
    if refusal is not None or row is None:
        await session.rollback()
        raise refusal or NotFoundException()
    row.closed_in, row.closed_on = version, on
    detail = {"org": org, "book_version": version, "id": price_id, "closed_on": on.isoformat()}
    subject = f"private price row {price_id} of {org}"
    await audit.change(session, actor=actor, action="prices.close", subject=subject, detail=detail)
    await session.commit()
    return row


def _refusal(row: sr.OrgPrice | None, price_id: int, on: dt.date) -> HTTPException | None:
    """Why ``row`` cannot be closed on ``on``, if it cannot."""
    if row is None:
        text = f"no private price row {price_id} in this organisation's book"
        return NotFoundException(detail=msg("procurement.prices.no_row", text, id=str(price_id)))
    if row.closed_in is not None:
        day = str(row.closed_on)
        text = f"the row {price_id} was closed already, in book version {row.closed_in} (from {day})"
        said = msg("procurement.prices.closed", text, id=str(price_id), version=str(row.closed_in), day=day)
        return HTTPException(status_code=409, detail=said)
    if on < row.valid_from:
        start = row.valid_from.isoformat()
        text = f"{on.isoformat()} is before the row's first day ({start}): a row closes on or after its first day"
        said = msg("procurement.prices.close_early", text, day=on.isoformat(), start=start)
        return ValidationException(detail=said, status_code=422, extra=[{"key": "on", "message": said}])
    return None


async def listing(
    session: AsyncSession, org: str, *, include_closed: bool, window: LimitOffset, today: dt.date
) -> PrivatePriceList:
    """The organisation's rows, newest first; without ``include_closed``, those closed by ``today`` left out."""
    version = await session.scalar(select(sr.Organisation.book_version).where(sr.Organisation.key == org))
    shown = [_PRICE.org == org]
    if not include_closed:
        shown.append(or_(_PRICE.closed_on.is_(None), _PRICE.closed_on > today))
    total = await session.scalar(select(func.count()).select_from(_PRICE).where(*shown))
    rows = await session.scalars(
        select(_PRICE).where(*shown).order_by(_PRICE.id.desc()).limit(window.limit).offset(window.offset)
    )
    items = [read(row, today) for row in rows]
    return PrivatePriceList(org, int(version or 0), int(total or 0), window.limit, window.offset, items)


def read(row: sr.OrgPrice, today: dt.date) -> PrivatePriceRead:
    """A stored row as answered: its columns (figures as numbers), and whether it prices answers today."""
    values = {name: _plain(getattr(row, name)) for name in PrivatePriceRead.__struct_fields__ if name != "in_force"}
    created = row.created_at
    values["created_at"] = created.replace(tzinfo=dt.UTC) if created.tzinfo is None else created  # SQLite: naive UTC
    ends = [day for day in (row.valid_to, row.closed_on) if day is not None]
    in_force = row.valid_from <= today and (not ends or today < min(ends))
    return PrivatePriceRead(**values, in_force=in_force)


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value
