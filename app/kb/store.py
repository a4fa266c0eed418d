"""Keeps the current knowledge snapshot in memory and swaps it when a new version appears.

A background task polls the newest version id (one indexed read) every few seconds; only a new
id triggers a full reload. On PostgreSQL a seed load also announces its version (``app.kb.notify``):
the announcement wakes the task at once, so every worker and replica serves the new version within
a moment, and the poll remains the fallback. A failed poll keeps the last snapshot: answers stay available from it,
and the store is *degraded* (the database unreachable) until a poll succeeds again. Handlers that
meet a database error mark it degraded at once, without waiting for the next poll.

A swap never stalls the event loop: the loop awaits the database's rows (``snapshot.read_rows``) and
a thread builds the snapshot from them (``Rows.knowledge``); the loop then only replaces the reference.
Snapshots are never frozen out of the cyclic collector (``app.kb.heap``), so nothing is collected or
frozen at a swap: the replaced snapshot goes with its last user — a request that started on it answers
from it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable

from opentelemetry.trace import NoOpTracer, Tracer
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.knowledge import Knowledge
from app.kb import snapshot
from app.kb.notify import VersionListener, stop_task

log = logging.getLogger(__name__)


class KnowledgeStore:
    """The snapshot being served. ``on_state()`` is called after every poll and every database error
    noticed; ``on_load(version, trigger)`` after each snapshot loaded, ``trigger`` naming what found
    it: ``start``, ``poll`` or ``notify`` (hooks for metrics, wired by the composition root)."""

    def __init__(
        self,
        session_maker: Callable[[], AsyncSession],
        refresh_seconds: float,
        *,
        listen_dsn: str | None = None,
        tracer: Tracer | None = None,
        on_state: Callable[[], None] | None = None,
        on_load: Callable[[str, str], None] | None = None,
    ) -> None:
        self._session_maker = session_maker
        self.refresh_seconds = refresh_seconds
        self.current: Knowledge | None = None
        self.last_error: str | None = None
        #: the last poll's verdict: ``None`` before the first one
        self.database_ok: bool | None = None
        #: when the database was last read successfully (UTC)
        self.last_read_at: dt.datetime | None = None
        #: longest a poll may take before it counts as failed
        self.read_timeout = max(5.0, refresh_seconds)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._tracer = tracer or NoOpTracer()
        self._on_state = on_state
        self._on_load = on_load
        self._wake = asyncio.Event()
        self._listener = VersionListener(listen_dsn, self.announced) if listen_dsn else None

    def get(self) -> Knowledge | None:
        return self.current

    @property
    def degraded(self) -> bool:
        """A snapshot is served while the database does not answer."""
        return self.current is not None and self.database_ok is False

    def mark_unreachable(self, exc: BaseException) -> None:
        """Record a failed database read; the next successful poll clears it."""
        if self.database_ok is not False:
            log.warning("database unreachable, serving knowledge %s from memory: %s", self.version, exc)
        self.database_ok = False
        self.last_error = f"{type(exc).__name__}: {exc}"
        self._report()

    def _report(self) -> None:
        if self._on_state is not None:
            self._on_state()

    def announced(self, version: str | None) -> None:
        """A new knowledge version was announced (``None``: perhaps missed one): look now."""
        self._wake.set()

    @property
    def listening(self) -> bool:
        """Whether announcements of new versions reach this worker (PostgreSQL's LISTEN)."""
        return self._listener is not None and self._listener.listening

    @property
    def version(self) -> str | None:
        return self.current.version if self.current else None

    def source_header(self) -> str | None:
        """``X-Knowledge-Source`` while degraded: the cached version and since when it could not be re-read."""
        if not self.degraded or self.current is None:
            return None
        since = self.last_read_at.isoformat().replace("+00:00", "Z") if self.last_read_at else "unknown"
        return f"cached; version={self.current.version}; since={since}"

    async def check(self, trigger: str = "poll") -> bool:
        """One poll: refresh, record whether the database answered. True when it did."""
        try:
            async with asyncio.timeout(self.read_timeout):
                await self.refresh(trigger)
        except Exception as exc:  # keep serving the last snapshot
            self.mark_unreachable(exc)
            return False
        if self.database_ok is False:
            log.warning("database reachable again, knowledge %s", self.version)
        self.database_ok = True
        self.last_error = None
        self._report()
        return True

    async def refresh(self, trigger: str = "poll") -> bool:
        """Load the newest version if it differs from the one in memory. True when it swapped."""
        async with self._session_maker() as session:
            newest = await snapshot.latest_version(session)
            self.last_read_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
        if newest is None or (self.current is not None and newest.label == self.current.version):
            return False
        with self._tracer.start_as_current_span(
            "knowledge.load", attributes={"knowledge.version": newest.label, "knowledge.trigger": trigger}
        ):
            # a session of its own: the load is one consistent read transaction from its first statement
            async with self._session_maker() as session:
                rows = await snapshot.read_rows(session)
            # building it is CPU alone (the rows' objects, the snapshot's indexes): in a thread, not the loop's
            loaded = None if rows is None else await asyncio.to_thread(rows.knowledge)
        self.current = loaded
        log.info("knowledge version %s loaded (%s)", loaded.version if loaded else None, trigger)
        if loaded is not None and self._on_load is not None:
            self._on_load(loaded.version, trigger)
        return True

    async def _poll(self) -> None:
        while not self._stopping:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.refresh_seconds)
                trigger = "notify"
            except TimeoutError:
                trigger = "poll"
            self._wake.clear()
            await self.check(trigger)

    async def start(self) -> None:
        self._stopping = False
        self._wake = asyncio.Event()  # of this event loop
        if not await self.check("start"):
            log.warning("knowledge not loaded at start-up: %s", self.last_error)
        self._task = asyncio.create_task(self._poll(), name="knowledge-refresh")
        if self._listener is not None:
            self._listener.start()

    async def stop(self) -> None:
        self._stopping = True
        if self._listener is not None:
            await self._listener.stop()
        if self._task is not None:
            await stop_task(self._task)
