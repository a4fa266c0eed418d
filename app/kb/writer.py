"""Group commit for stored recommendations.

Each stored recommendation is one small insert, and a commit costs far more than the insert. The
writer takes the rows of every request waiting at that moment and commits them in one
transaction; each request gets its 201 only once its row is committed (or the error, if the
commit failed: nothing is reported stored that is not). One writer per process also means the
requests of a worker never fight each other for SQLite's single write lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb import models as m

MAX_BATCH = 256


class RecommendationWriter:
    def __init__(self, session_maker: Callable[[], AsyncSession]) -> None:
        self._session_maker = session_maker
        self._pending: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self._flushing: asyncio.Task[None] | None = None

    async def store(self, row: dict[str, Any]) -> None:
        """Insert one ``recommendations`` row; returns once it is committed."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((row, done))
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            try:
                async with self._session_maker() as session, session.begin():
                    await session.execute(insert(m.Recommendation), [row for row, _ in batch])
            except Exception as exc:
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
            else:
                for _, done in batch:
                    if not done.done():
                        done.set_result(None)
