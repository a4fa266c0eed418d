"""Private price books: an organisation's own rows (``org_prices``) over the list every answer shares.

A private row prices the offer of the same identity — option, item, provider, subject, GPU model, plan,
region, GPUs per unit and tier (``identity``) — in place of the list's row wherever the two hold on the same
days, or adds an offer where the list has none. ``overlay`` makes the organisation's snapshot: the list's
rows of a privately priced identity cut to the days no private row holds, then the private rows (``book``
``org``, ids negated). Its version is the list's plus ``+org:<org>.<book version>``, so an answer names the
book that priced it, and the memo and the ETags of one organisation never serve another.

Rows are never erased: ``DELETE`` closes a row in a new book version. ``rows_at`` rebuilds the book as it
was at any version (what was added by then, closed as it was by then), so a stored answer is replayable.

``Books`` keeps each organisation's book in memory: it reads the book's version (one indexed read) at most
every ``refresh_seconds`` per organisation, and its rows only when the version moved; a change made by this
process is seen at once (``forget``), one made by another replica within ``refresh_seconds``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.knowledge import Knowledge, Price
from app.kb import service_records as sr
from app.kb.snapshot import prices_of

__all__ = ["Book", "Books", "identity", "load", "overlay", "rows_at"]

#: organisation snapshots kept per process (each is the list's snapshot with a few rows changed)
OVERLAYS_KEPT = 32


@dataclasses.dataclass(frozen=True, slots=True)
class Book:
    """One organisation's private price book at one version: its rows as the snapshot holds them."""

    org: str
    version: int
    rows: tuple[Price, ...]

    @property
    def label(self) -> str:
        """How a knowledge version names it: ``acme-ml.3``."""
        return f"{self.org}.{self.version}"


def identity(p: Price) -> tuple[Any, ...]:
    """The offer (or component) a row prices: two rows of one identity on one day are one price."""
    return (
        p.option,
        p.item,
        p.provider,
        p.subject,
        p.gpu_model,
        p.plan,
        p.region,
        p.gpus_per_unit,
        p.min_gpus,
        p.min_kw,
    )


def rows_at(rows: Iterable[Any], version: int) -> list[tuple[Any, dt.date | None]]:
    """The ``org_prices`` rows of the book at ``version`` and the ``valid_to`` each had then: added by then,
    and closed (``closed_on``) only if closed by then; a row closed on or before its first day is gone."""
    found = []
    for row in rows:
        if row.added_in > version:
            continue
        valid_to = row.valid_to
        if row.closed_in is not None and row.closed_in <= version:
            valid_to = row.closed_on if valid_to is None else min(valid_to, row.closed_on)
        if valid_to is not None and valid_to <= row.valid_from:
            continue
        found.append((row, valid_to))
    return found


def book_of(org: str, version: int, rows: Iterable[Any]) -> Book:
    """The book at ``version`` from the organisation's ``org_prices`` rows (all of them, or those added by then)."""
    prices = tuple(
        price
        for row, valid_to in rows_at(rows, version)
        for price in prices_of(row, book="org", id=-row.id, valid_to=valid_to)
    )
    return Book(org, version, prices)


async def load(session: AsyncSession, org: str, version: int | None = None) -> Book | None:
    """The organisation's book at ``version`` (default: its current one); None while it never had a row."""
    if version is None:
        version = await session.scalar(select(sr.Organisation.book_version).where(sr.Organisation.key == org))
    if not version:
        return None
    columns = sr.OrgPrice.__table__.columns
    rows = (
        await session.execute(
            select(*columns).where(sr.OrgPrice.org == org, sr.OrgPrice.added_in <= version).order_by(sr.OrgPrice.id)
        )
    ).all()
    return book_of(org, version, rows)


def _cut(row: Price, held: Sequence[tuple[dt.date, dt.date | None]]) -> list[Price]:
    """``row`` on the days none of the intervals ``held`` covers (``None``: open-ended)."""
    pieces: list[tuple[dt.date, dt.date | None]] = [(row.valid_from, row.valid_to)]
    for start, end in held:
        kept: list[tuple[dt.date, dt.date | None]] = []
        for a, b in pieces:
            if (end is not None and end <= a) or (b is not None and b <= start):
                kept.append((a, b))  # apart
                continue
            if a < start:
                kept.append((a, start))
            if end is not None and (b is None or end < b):
                kept.append((end, b))
        pieces = kept
    if pieces == [(row.valid_from, row.valid_to)]:
        return [row]
    return [dataclasses.replace(row, valid_from=a, valid_to=b) for a, b in pieces]


def overlay(knowledge: Knowledge, book: Book) -> Knowledge:
    """The snapshot an organisation's answers are priced on: the list with its private rows in place."""
    held: dict[tuple[Any, ...], list[tuple[dt.date, dt.date | None]]] = {}
    for p in book.rows:
        held.setdefault(identity(p), []).append((p.valid_from, p.valid_to))
    prices = [piece for p in knowledge.prices for piece in (_cut(p, held[identity(p)]) if identity(p) in held else [p])]
    return dataclasses.replace(knowledge, version=f"{knowledge.version}+org:{book.label}", prices=(*prices, *book.rows))


class Books:
    """Each organisation's current book, and the organisation snapshots made from it (``overlay``)."""

    def __init__(
        self,
        session_maker: Callable[[], AsyncSession],
        refresh_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session_maker = session_maker
        self.refresh_seconds = refresh_seconds
        self._clock = clock
        #: org → (book or None, when its version was last read)
        self._books: dict[str, tuple[Book | None, float]] = {}
        self._overlays: OrderedDict[tuple[str, str], Knowledge] = OrderedDict()
        #: snapshots are asked for from the event loop and from the worker pool's threads
        self._lock = threading.Lock()

    async def current(self, org: str) -> Book | None:
        """The organisation's book as of at most ``refresh_seconds`` ago (None while it has no row)."""
        now = self._clock()
        cached = self._books.get(org)
        if cached is not None and now - cached[1] < self.refresh_seconds:
            return cached[0]
        async with self._session_maker() as session:
            version = await session.scalar(select(sr.Organisation.book_version).where(sr.Organisation.key == org))
            book = cached[0] if cached is not None and cached[0] is not None and cached[0].version == version else None
            if book is None and version:
                book = await load(session, org, version)
        self._books[org] = (book, now)
        return book

    def forget(self, org: str) -> None:
        """This process changed the book: read it again at its next use."""
        self._books.pop(org, None)

    def knowledge(self, knowledge: Knowledge, book: Book | None) -> Knowledge:
        """``knowledge`` as ``book``'s organisation sees it (``knowledge`` itself without a book); remembered."""
        if book is None:
            return knowledge
        key = (knowledge.version, book.label)
        with self._lock:
            found = self._overlays.get(key)
            if found is not None:
                self._overlays.move_to_end(key)
                return found
        found = overlay(knowledge, book)  # outside the lock: a few milliseconds
        with self._lock:
            found = self._overlays.setdefault(key, found)
            while len(self._overlays) > OVERLAYS_KEPT:
                self._overlays.popitem(last=False)
        return found
