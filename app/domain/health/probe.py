"""Readiness's database check, shared: one in flight per worker, in a session of its own.

A probe used to hold its request's database session from the check to the end of its answer, across
the key lookup that decided which details it shows: 32 clients sending made-up keys took every pooled
connection, the checks that found none timed out, readiness answered 503 and the worker went into
degraded mode. Now concurrent probes wait for the one check under way and share its finding; the
check opens a session, asks, and closes it before anyone is answered — so readiness takes at most one
pooled connection per worker, for the length of one query, however many probes arrive. A finding is
not reused once its check has ended: the next probe starts the next check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from app.kb.repositories import KnowledgeVersionRepository

T = TypeVar("T")


class SharedCheck(Generic[T]):
    """Runs ``check`` with a repository on a session of its own; concurrent callers share one run."""

    def __init__(self, sessions: Callable[[], AsyncSession]) -> None:
        self._sessions = sessions
        self._running: asyncio.Future[T] | None = None

    async def run(self, check: Callable[[KnowledgeVersionRepository], Awaitable[T]]) -> T:
        """The finding of the check under way, or of a new one (``check`` is used only to start one). A
        caller that goes away does not cancel the others' check."""
        if self._running is None:
            self._running = asyncio.ensure_future(self._checked(check))
            self._running.add_done_callback(self._ended)
        return await asyncio.shield(self._running)

    async def _checked(self, check: Callable[[KnowledgeVersionRepository], Awaitable[T]]) -> T:
        async with self._sessions() as session:  # closed, its connection back in the pool, before any answer
            return await check(KnowledgeVersionRepository(session=session))

    def _ended(self, done: asyncio.Future[Any]) -> None:
        if self._running is done:
            self._running = None
        if not done.cancelled():
            done.exception()  # retrieved: its waiters answer it
