"""Group commit for stored recommendations.

Each stored recommendation is one small insert, and a commit costs far more than the insert. The
writer takes the rows of every request waiting at that moment and commits them in one
transaction; each request gets its 201 only once its row is committed (or the error, if the
commit failed: nothing is reported stored that is not). One writer per process also means the
requests of a worker never fight each other for SQLite's single write lock.

The queue is bounded (``WRITER_QUEUE_LIMIT`` rows waiting or being committed): beyond it ``store``
raises ``WriterFull`` at once, which the API answers with 503 and ``Retry-After`` — a client is told
to come back rather than waiting behind a database that does not keep up.

A row may carry an idempotency claim (an ``idempotency_keys`` row): it is inserted in the same
transaction as its recommendation, and if another request (in this process or another) already holds
the same (API key, Idempotency-Key) and it is less than 24 h old, this row's recommendation is not
kept and ``store`` raises ``IdempotencyKeyTaken``; the caller answers from the holder's row.

A group commit that PostgreSQL broke off to let another transaction go on — a deadlock (``40P01``),
a serialization failure (``40001``) — or whose connection was lost under it (mid-transaction or at
its COMMIT) is replayed once, whole, in a new transaction (a broken connection is not pooled again).
The replay is safe even when the lost COMMIT did commit: it inserts the recommendations with ``ON
CONFLICT (id) DO NOTHING``, and a claim already held by the same recommendation counts as won, so a
stored recommendation with an Idempotency-Key is still stored once. A second failure is reported to
every request of the batch (``app.web.degraded`` answers 503 with ``Retry-After``).

``on_queue(depth)`` hears the number of rows waiting whenever it changes and ``on_commit(seconds,
ok)`` the duration of each group commit (metrics hooks, wired by the composition root); ``storage``
(``app.kb.storage_state``) hears each commit's outcome: a full disk or a read-only database sets its
state, a commit clears it. Traces: each request waits in a ``writer.store`` span of its own; each
group commit is a ``writer.commit`` span linked to the requests it commits (it belongs to none of
them alone).
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import asyncpg.exceptions  # type: ignore[import-untyped]
from opentelemetry import trace
from opentelemetry.trace import Link, NoOpTracer, SpanContext, Tracer
from sqlalchemy import delete, insert, or_
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb import service_records as sr
from app.kb.storage_state import StorageState

log = logging.getLogger(__name__)

MAX_BATCH = 256
#: rows waiting or being committed beyond which ``store`` refuses (``WRITER_QUEUE_LIMIT``)
DEFAULT_QUEUE_LIMIT = 1024
#: how long an Idempotency-Key holds
IDEMPOTENCY_TTL = dt.timedelta(hours=24)
#: SQLSTATEs of a transaction PostgreSQL broke off so that another could go on: serialization failure,
#: deadlock. Replaying the transaction is what the server asks for (``app.web.degraded`` answers them 503)
RETRY_SQLSTATES = frozenset({"40001", "40P01"})


def transient(exc: BaseException | None) -> bool:
    """Whether a failed transaction may be replayed whole: PostgreSQL broke it off (deadlock,
    serialization failure), or its connection broke under it — lost, closed by the server (``57P0x``:
    shutdown, ``pg_terminate_backend``, a server still starting), or its cached statements invalidated
    by a restore. Not a statement or lock timeout (the database is busy: waiting again would double
    the wait), nor a connection refused or timed out (the database is down: degraded mode)."""
    for _ in range(8):  # a chain can loop
        if exc is None:
            return False
        sqlstate = getattr(exc, "sqlstate", None) or ""
        if sqlstate in RETRY_SQLSTATES or sqlstate.startswith("57P"):
            return True
        if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
            return True
        if isinstance(
            exc, asyncpg.exceptions.ConnectionDoesNotExistError | asyncpg.exceptions.InvalidCachedStatementError
        ):
            return True
        exc = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc.__cause__
    return False


class WriterFull(Exception):
    """The writer's queue is full: the database does not keep up; retry in a moment."""


class IdempotencyKeyTaken(Exception):
    """Another stored recommendation holds this (API key, Idempotency-Key) and is less than 24 h old."""


Pending = tuple[dict[str, Any], dict[str, Any] | None, "asyncio.Future[None]", SpanContext]


class RecommendationWriter:
    def __init__(
        self,
        session_maker: Callable[[], AsyncSession],
        *,
        tracer: Tracer | None = None,
        on_queue: Callable[[int], None] | None = None,
        on_commit: Callable[[float, bool], None] | None = None,
        queue_limit: int = DEFAULT_QUEUE_LIMIT,
        storage: StorageState | None = None,
    ) -> None:
        self._session_maker = session_maker
        self._storage = storage
        #: group commits replayed after a transient failure (``transient``), since start
        self.replayed = 0
        self.queue_limit = queue_limit
        self._pending: list[Pending] = []
        #: rows of the group commit under way
        self._committing = 0
        self._flushing: asyncio.Task[None] | None = None
        self._tracer = tracer or NoOpTracer()
        self._on_queue = on_queue
        self._on_commit = on_commit

    def _queue_changed(self) -> None:
        if self._on_queue is not None:
            self._on_queue(len(self._pending))

    @property
    def depth(self) -> int:
        """Rows waiting or being committed."""
        return len(self._pending) + self._committing

    async def store(self, row: dict[str, Any], idempotency: dict[str, Any] | None = None) -> None:
        """Insert one ``recommendations`` row (and its ``idempotency_keys`` claim, if any); returns once
        it is committed. Raises ``WriterFull`` when the queue is full and ``IdempotencyKeyTaken`` when
        the claim lost to a stored one (this row is then not kept)."""
        if self.depth >= self.queue_limit:
            raise WriterFull(f"{self.depth} stored recommendations are waiting for the database")
        with self._tracer.start_as_current_span("writer.store"):
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._pending.append((row, idempotency, done, trace.get_current_span().get_span_context()))
            self._queue_changed()
            if self._flushing is None or self._flushing.done():
                # a context of its own: the flush serves every waiting request, not the one that started it
                self._flushing = asyncio.create_task(self._flush(), context=contextvars.Context())
            await done

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            self._committing = len(batch)
            self._queue_changed()
            links = [Link(ctx) for _, _, _, ctx in batch if ctx.is_valid]
            started = time.perf_counter()
            with self._tracer.start_as_current_span(
                "writer.commit", links=links, attributes={"writer.rows": len(batch)}
            ) as span:
                try:
                    lost = await self._commit_once_or_twice(batch, span)
                except Exception as exc:
                    span.record_exception(exc)
                    span.set_status(trace.StatusCode.ERROR)
                    self._committed(started, ok=False)
                    if self._storage is not None:
                        self._storage.noticed(exc)
                    for _, _, done, _ in batch:
                        if not done.done():
                            done.set_exception(exc)
                else:
                    self._committed(started, ok=True)
                    if self._storage is not None:
                        self._storage.wrote()
                    for row, _, done, _ in batch:
                        if done.done():
                            continue
                        if row["id"] in lost:
                            done.set_exception(IdempotencyKeyTaken(row["id"]))
                        else:
                            done.set_result(None)
                finally:
                    self._committing = 0

    async def _commit_once_or_twice(self, batch: list[Pending], span: trace.Span) -> set[str]:
        """Commit the batch; replayed once, whole, after a ``transient`` failure. The recommendations'
        ids whose claim lost."""
        try:
            return await self._commit(batch, replay=False)
        except Exception as exc:
            if not transient(exc):
                raise
            log.info("group commit of %d rows replayed after %s: %s", len(batch), type(exc).__name__, exc)
            span.add_event("writer.replay", {"error": type(exc).__name__})
            self.replayed += 1
        await asyncio.sleep(random.uniform(0.01, 0.05))  # a moment for the other transaction to finish
        return await self._commit(batch, replay=True)

    async def _commit(self, batch: list[Pending], *, replay: bool) -> set[str]:
        async with self._session_maker() as session, session.begin():
            rows = [row for row, _, _, _ in batch]
            stmt = insert(sr.Recommendation)
            if replay:  # the lost COMMIT may have committed: rows already there are these very ones
                stmt = _dialect(session).insert(sr.Recommendation).on_conflict_do_nothing(index_elements=["id"])
            await session.execute(stmt, rows)
            return await _claim(session, [(row, idem) for row, idem, _, _ in batch if idem is not None])

    def _committed(self, started: float, *, ok: bool) -> None:
        if self._on_commit is not None:
            self._on_commit(time.perf_counter() - started, ok)


async def _claim(session: AsyncSession, claims: list[tuple[dict[str, Any], dict[str, Any]]]) -> set[str]:
    """Insert the idempotency claims of a group commit; the ids of the recommendations whose claim
    lost (they are deleted again, in the same transaction).

    ``INSERT … ON CONFLICT DO UPDATE … WHERE created_at < now − 24 h``: a claim older than 24 h is
    replaced, a younger one wins — unless it names this very recommendation (a replayed group commit
    whose first COMMIT did commit: the claim is this row's). On PostgreSQL a claim inserted by another
    transaction not yet committed makes this one wait for it (the unique index), so two concurrent
    duplicates never both stay, across processes and replicas; SQLite has one writer at a time.
    """
    if not claims:
        return set()
    table = sr.IdempotencyKey.__table__
    dialect = _dialect(session)
    lost: set[str] = set()
    for row, idem in claims:
        stmt = dialect.insert(table).values(**idem)
        stmt = stmt.on_conflict_do_update(
            index_elements=[table.c.api_key_id, table.c.key],
            set_={c: stmt.excluded[c] for c in ("request_hash", "recommendation_id", "status", "created_at")},
            where=or_(
                table.c.created_at < idem["created_at"] - IDEMPOTENCY_TTL,
                table.c.recommendation_id == idem["recommendation_id"],
            ),
        ).returning(table.c.key)
        if (await session.execute(stmt)).first() is None:
            lost.add(row["id"])
    if lost:
        await session.execute(delete(sr.Recommendation).where(sr.Recommendation.id.in_(lost)))
    return lost


def _dialect(session: AsyncSession) -> Any:
    """The dialect module whose ``insert`` has ``ON CONFLICT`` for the session's database."""
    return postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
