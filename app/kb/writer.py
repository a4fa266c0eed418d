"""Group commit for stored recommendations.

Each stored recommendation is one small insert, and a commit costs far more than the insert. The
writer takes the rows of every request waiting at that moment and commits them in one
transaction; each request gets its 201 only once its row is committed (or the error, if the
commit failed: nothing is reported stored that is not). One writer per process also means the
requests of a worker never fight each other for SQLite's single write lock.

``on_queue(depth)`` hears the number of rows waiting whenever it changes and ``on_commit(seconds,
ok)`` the duration of each group commit (metrics hooks, wired by the composition root). Traces: each
request waits in a ``writer.store`` span of its own; each group commit is a ``writer.commit`` span
linked to the requests it commits (it belongs to none of them alone).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, NoOpTracer, SpanContext, Tracer
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb import models as m

MAX_BATCH = 256


class RecommendationWriter:
    def __init__(
        self,
        session_maker: Callable[[], AsyncSession],
        *,
        tracer: Tracer | None = None,
        on_queue: Callable[[int], None] | None = None,
        on_commit: Callable[[float, bool], None] | None = None,
    ) -> None:
        self._session_maker = session_maker
        self._pending: list[tuple[dict[str, Any], asyncio.Future[None], SpanContext]] = []
        self._flushing: asyncio.Task[None] | None = None
        self._tracer = tracer or NoOpTracer()
        self._on_queue = on_queue
        self._on_commit = on_commit

    def _queue_changed(self) -> None:
        if self._on_queue is not None:
            self._on_queue(len(self._pending))

    async def store(self, row: dict[str, Any]) -> None:
        """Insert one ``recommendations`` row; returns once it is committed."""
        with self._tracer.start_as_current_span("writer.store"):
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._pending.append((row, done, trace.get_current_span().get_span_context()))
            self._queue_changed()
            if self._flushing is None or self._flushing.done():
                # a context of its own: the flush serves every waiting request, not the one that started it
                self._flushing = asyncio.create_task(self._flush(), context=contextvars.Context())
            await done

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            self._queue_changed()
            links = [Link(ctx) for _, _, ctx in batch if ctx.is_valid]
            started = time.perf_counter()
            with self._tracer.start_as_current_span(
                "writer.commit", links=links, attributes={"writer.rows": len(batch)}
            ) as span:
                try:
                    async with self._session_maker() as session, session.begin():
                        await session.execute(insert(m.Recommendation), [row for row, _, _ in batch])
                except Exception as exc:
                    span.record_exception(exc)
                    span.set_status(trace.StatusCode.ERROR)
                    self._committed(started, ok=False)
                    for _, done, _ in batch:
                        if not done.done():
                            done.set_exception(exc)
                else:
                    self._committed(started, ok=True)
                    for _, done, _ in batch:
                        if not done.done():
                            done.set_result(None)

    def _committed(self, started: float, *, ok: bool) -> None:
        if self._on_commit is not None:
            self._on_commit(time.perf_counter() - started, ok)
