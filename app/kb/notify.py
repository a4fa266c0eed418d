"""A new knowledge version, announced at once on PostgreSQL (LISTEN/NOTIFY); polling stays the fallback.

``announce`` sends ``NOTIFY compute_advisor_knowledge, '<version>'`` in the transaction that records
the version (PostgreSQL delivers it at commit, never for a rolled-back load); on SQLite it does
nothing. ``VersionListener`` keeps one connection of its own (outside the pool) listening on that
channel and wakes the knowledge store, which then reads the newest version as its poll would. A
listener that cannot connect, or loses its connection, tries again every few seconds; meanwhile the
store's poll (``KNOWLEDGE_REFRESH_SECONDS``) still finds every new version.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

log = logging.getLogger(__name__)

CHANNEL = "compute_advisor_knowledge"
#: how often a quiet listening connection is checked
KEEPALIVE_SECONDS = 30.0


async def announce(session: AsyncSession, version: str) -> None:
    """Tell every listening worker that ``version`` exists, when the session's transaction commits."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        await session.execute(text("SELECT pg_notify(:channel, :version)"), {"channel": CHANNEL, "version": version})


def listener_dsn(database_url: str) -> str | None:
    """The plain ``postgresql://`` DSN asyncpg connects to, or None for a database that cannot notify."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        return None
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class VersionListener:
    """Keeps a LISTEN connection open; ``on_notify(version)`` for every announcement, and
    ``on_notify(None)`` after each (re)connection, when announcements may have been missed."""

    def __init__(
        self, dsn: str, on_notify: Callable[[str | None], None], *, retry_seconds: float = 5.0, timeout: float = 5.0
    ) -> None:
        self._dsn = dsn
        self._on_notify = on_notify
        self.retry_seconds = retry_seconds
        self.timeout = timeout
        self._conn: Any = None
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self._stopping = False

    @property
    def listening(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self._on_notify(payload or None)

    def _terminated(self, _conn: Any) -> None:
        self._lost.set()

    async def _connect(self) -> None:
        conn = await asyncpg.connect(self._dsn, timeout=self.timeout)
        try:
            await conn.add_listener(CHANNEL, self._notified)
            conn.add_termination_listener(self._terminated)
        except BaseException:
            await conn.close()
            raise
        self._conn = conn

    async def _run(self) -> None:
        while not self._stopping:
            self._lost.clear()
            try:
                await self._connect()
            except Exception as exc:
                if not self._failing:
                    log.warning("knowledge notifications unavailable, polling only: %s: %s", type(exc).__name__, exc)
                self._failing = True
                await asyncio.sleep(self.retry_seconds)
                continue
            if self._failing:
                log.warning("knowledge notifications available again")
            self._failing = False
            self._on_notify(None)  # something may have been announced while not listening
            await self._until_lost()
            await self._close()
            if self._stopping:  # stopped (the cancellation ``wait_for`` may have swallowed): no retry
                return
            await asyncio.sleep(min(1.0, self.retry_seconds))

    async def _until_lost(self) -> None:
        """Wait for the connection's end; a quiet connection is asked a question now and then, since a
        connection that died without a word would otherwise go unnoticed."""
        while True:
            try:
                await asyncio.wait_for(self._lost.wait(), timeout=KEEPALIVE_SECONDS)
                return
            except TimeoutError:
                try:
                    await self._conn.fetchval("SELECT 1", timeout=self.timeout)
                except Exception:
                    return

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), timeout=2)
            if not conn.is_closed():
                conn.terminate()

    def start(self) -> None:
        self._lost = asyncio.Event()  # of this event loop
        self._task = asyncio.create_task(self._run(), name="knowledge-listen")

    async def stop(self) -> None:
        self._stopping = True
        self._lost.set()
        if self._task is not None:
            await stop_task(self._task)
        await self._close()


#: how long a shutdown waits for a background task to end after cancelling it
STOP_SECONDS = 5.0


async def stop_task(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it, at most :data:`STOP_SECONDS`: on Python 3.11 ``asyncio.wait_for``
    can swallow a cancellation (CPython gh-86296), and a shutdown must not wait for ever on it."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=STOP_SECONDS)
    if not done:
        log.warning("background task %s did not stop within %s s; left behind", task.get_name(), STOP_SECONDS)
