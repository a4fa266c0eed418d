"""The watch dispatcher: a background task of each serving process that turns knowledge and price-book
changes into signed drift events, and delivers them.

Every ``WATCH_POLL_SECONDS`` (and at once when this process loads a new knowledge version) it

1. checks the watches whose ``checked_version`` is not the version their organisation is priced on now (the
   list's, ``+org:<org>.<n>`` with a private book): the watched recommendation is priced again (``drift``,
   within ``Advisor.priced_with(book)``, in a thread: never on the event loop), then the check is *claimed* —
   ``UPDATE watches SET checked_version = new WHERE id = … AND checked_version IS NOT DISTINCT FROM old`` —
   and only the process whose update changed the row records it; when the drift is event-worthy
   (``event_worthy``: the watch's ``min_cost_change``, ``on_rank_change``) the same transaction inserts the
   delivery, its body serialised once. The unique (watch, event) index makes a second delivery of one
   event impossible whatever happens (``ON CONFLICT DO NOTHING``): one event per watch and version, across
   workers and replicas. A version older than the one checked (a replica whose view of the knowledge or of
   the book is a moment late) never moves a watch back (``behind``);
2. sends the deliveries due (``app.domain.procurement.watch_delivery``), each claimed first in the database
   for a lease (``claimed_until``) so that one process sends it at a time; a claim of a process that died
   expires and another sends it again (same delivery id: receivers deduplicate).

Everything lives in the database, so a restart loses nothing: a delivery being sent when the process stops
stays claimed until its lease ends, then is sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
from litestar import Litestar
from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import KnowledgeUnavailable
from app.core.knowledge import Knowledge
from app.domain.decisions.service import DecisionService
from app.domain.procurement.drift import NotRepriceable, Stored, drift, event_worthy
from app.domain.procurement.drift_schemas import DriftRead
from app.domain.procurement.watch_delivery import Sender, utc_now
from app.domain.procurement.watch_hosts import AllowList
from app.domain.procurement.watch_signing import EVENT
from app.domain.shared.advisor import Advisor
from app.i18n import LANGUAGES
from app.kb import service_records as sr
from app.kb.books import Book, Books
from app.kb.notify import stop_task
from app.settings import Settings

log = logging.getLogger(__name__)


#: a knowledge version's label (``app.kb.models.version_label``) and its organisation's book version
VERSION = re.compile(r"^kv(\d+)-[^+]*(?:\+org:.+\.(\d+))?$")


def behind(version: str, than: str | None) -> bool:
    """Whether ``version`` is older than ``than`` (its knowledge version or its book version is): a process
    whose view of either is a moment late never moves a watch back (labels of another form: never)."""
    a, b = VERSION.match(version), VERSION.match(than or "")
    if a is None or b is None:
        return False
    return any(int(x or 0) < int(y or 0) for x, y in zip(a.groups(), b.groups(), strict=True))


def _dialect(session: AsyncSession) -> Any:
    return postgresql if session.get_bind().dialect.name == "postgresql" else sqlite


class WatchDispatcher:
    """Checks watches and sends their deliveries, in a task of the event loop (``lifespan``)."""

    def __init__(
        self,
        settings: Settings,
        session_maker: Callable[[], AsyncSession],
        knowledge: Callable[[], Knowledge | None],
        books: Books,
        decisions: DecisionService,
    ) -> None:
        self.allow = AllowList.parse(settings.watch_allowed_hosts)
        self.poll_seconds = settings.watch_poll_seconds
        self._session_maker = session_maker
        self._knowledge = knowledge
        self._books = books
        self._decisions = decisions
        #: who claims: host, process and this dispatcher (two apps in one process are two claimants)
        self.me = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.sender = Sender(
            session_maker,
            self.allow,
            me=self.me,
            timeout=settings.watch_timeout_seconds,
            retry=settings.watch_retry_seconds,
            wake=self.wake,
        )

    def wake(self) -> None:
        """Look now (a new knowledge version was loaded), not at the next poll."""
        if self._wake is not None:
            self._wake.set()

    async def version_of(self, org: str | None) -> str | None:
        """The knowledge version ``org``'s answers are priced on now (None while no knowledge is loaded)."""
        priced = await self._priced(org)
        return None if priced is None else priced[0].version

    async def _priced(self, org: str | None) -> tuple[Knowledge, Book | None] | None:
        kb = self._knowledge()
        if kb is None:
            return None
        book = None if org is None else await self._books.current(org)
        return self._books.knowledge(kb, book), book

    # ---- the loop --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Litestar) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    async def start(self) -> None:
        self._wake = asyncio.Event()  # of this event loop
        self.sender.start()
        self._task = asyncio.create_task(self._run(), name="watch-dispatch")

    async def stop(self) -> None:
        """Stop looking and sending: a delivery being sent stays claimed until its lease ends, then any
        process sends it again."""
        if self._task is not None:
            await stop_task(self._task)
            self._task = None
        await self.sender.stop()

    async def _run(self) -> None:
        assert self._wake is not None
        failing = False
        while True:
            try:
                await self.tick()
                failing = False
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database away: said once, and each poll tries again
                if not failing:
                    trace = not isinstance(exc, OSError | DBAPIError)  # a defect: with its traceback
                    log.warning(
                        "watch dispatch failed, retrying every %s s: %s", self.poll_seconds, exc, exc_info=trace
                    )
                failing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.sender.wait_seconds(self.poll_seconds))
            self._wake.clear()

    async def tick(self) -> None:
        """One round: check the watches behind, then send what is due (nothing before knowledge is loaded)."""
        if self._knowledge() is None:
            return
        await self.check_watches()
        await self.sender.send_due()

    # ---- checks ----------------------------------------------------------------------------------

    async def check_watches(self) -> int:
        """Check every watch not on its organisation's version now; the number this process recorded.
        Per organisation, one query finds its watches behind (most ticks find none)."""
        live = (sr.Watch.deleted_at.is_(None), sr.Organisation.deleted_at.is_(None))
        async with self._session_maker() as session:
            orgs = list(
                await session.scalars(
                    select(sr.Watch.org)
                    .distinct()
                    .outerjoin(sr.Organisation, sr.Organisation.key == sr.Watch.org)
                    .where(*live)
                )
            )
        recorded = 0
        for org in orgs:
            now = await self._priced(org)
            if now is None:
                return recorded  # no knowledge loaded yet
            target = now[0].version
            async with self._session_maker() as session:
                rows = (
                    await session.execute(
                        select(sr.Watch.id, sr.Watch.checked_version)
                        .where(
                            sr.Watch.org.is_(None) if org is None else sr.Watch.org == org,
                            sr.Watch.deleted_at.is_(None),
                            sr.Watch.checked_version.is_distinct_from(target),
                        )
                        .order_by(sr.Watch.created_at, sr.Watch.id)
                    )
                ).all()
            for watch_id, checked in rows:
                if not behind(target, checked):
                    recorded += await self.check(watch_id, checked, now[1])
        return recorded

    async def check(self, watch_id: str, old: str | None, book: Book | None) -> int:
        """Price the watch's recommendation again and record the check (and its delivery) if this process
        claims it first: 1 when it did, else 0."""
        async with self._session_maker() as session:
            watch = await session.get(sr.Watch, watch_id)
            rec = None if watch is None else await session.get(sr.Recommendation, watch.recommendation_id)
            if watch is None or rec is None:
                return 0
            stored = Stored(rec.id, rec.knowledge_version, rec.request, rec.response)
            limits = (watch.min_cost_change, watch.on_rank_change, watch.recommendation_id)
        try:
            found = await asyncio.to_thread(self._drift, stored, book)
        except KnowledgeUnavailable:
            return 0
        except NotRepriceable as exc:  # recorded as checked: nothing to send until a version prices it again
            log.warning("watch %s: recommendation %s cannot be priced again: %s", watch_id, rec.id, exc)
            found = None
        except Exception:  # a defect: logged with its traceback, and checked, so one watch never stalls the rest
            log.exception("watch %s: pricing recommendation %s again failed", watch_id, rec.id)
            found = None
        if found is None:
            kb = await self._priced(watch.org)
            if kb is None:
                return 0
            new = kb[0].version
        else:
            new = found.now.knowledge_version
        if behind(new, old):
            return 0
        worthy = found is not None and event_worthy(found, limits[0], limits[1])
        async with self._session_maker() as session, session.begin():
            claimed = await session.execute(
                update(sr.Watch)
                .where(sr.Watch.id == watch_id, sr.Watch.checked_version.is_not_distinct_from(old))
                .values(checked_version=new)
            )
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                return 0  # another worker or replica checked it first
            if worthy:
                body = msgspec.json.encode(
                    {
                        "event": EVENT,
                        "watch_id": watch_id,
                        "recommendation_id": limits[2],
                        "knowledge_version": new,
                        "drift": found,
                    }
                )
                now = utc_now()
                await session.execute(
                    _dialect(session)
                    .insert(sr.WatchDelivery)
                    .values(
                        watch_id=watch_id,
                        event=new,
                        body=body.decode(),
                        status="pending",
                        attempts=0,
                        next_attempt_at=now,
                        created_at=now,
                        history=[],
                    )
                    .on_conflict_do_nothing(index_elements=["watch_id", "event"])
                )
        return 1

    def _drift(self, stored: Stored, book: Book | None) -> DriftRead:
        """The drift on ``book`` (in a worker thread: its own copy of the context)."""
        answered = stored.response.get("language")
        with Advisor.priced_with(book):
            return drift(self._decisions, stored, lang=answered if answered in LANGUAGES else "en")
