"""Degraded mode: while the database does not answer, serve from the last knowledge snapshot, say so.

- Answers computed from the snapshot (comparisons, rankings, catalog reads, ``?store=false``
  recommendations…) carry ``X-Knowledge-Source: cached; version=<kv…>; since=<last successful read>``.
- What needs the database (storing or fetching a recommendation, the knowledge version's row)
  answers ``503`` problem details of type ``…:database-unavailable`` with ``Retry-After``: a database
  error raised in a handler is never a ``500``.
- The knowledge store's next successful poll ends it; nothing to restart.

Not degraded mode, each a 503 problem of its own type with ``Retry-After`` (the database answers):
- ``…:database-timeout``: a statement or lock wait ran out of its time;
- ``…:database-conflict``: PostgreSQL broke the transaction off — a deadlock (``40P01``) or a
  serialization failure (``40001``) — and it was not replayed, or its replay failed too (the writer of
  stored recommendations replays its group commit once: ``app.kb.writer``);
- ``…:storage-full`` and ``…:database-read-only``: the database refuses writes (a full disk; a read-only
  database or a standby). The app's storage state (``app.kb.storage_state``, ``request.app.state.
  storage_state``) tells these errors apart and keeps the state until a write works again; reads
  and computations go on, and the knowledge store is not marked unreachable (its successful polls
  would otherwise clear and the next write set the mark every few seconds).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import asyncpg.exceptions  # type: ignore[import-untyped]
from advanced_alchemy.exceptions import AdvancedAlchemyError
from sqlalchemy import exc as sa_exc

from app.web.problems import TYPE_BASE, Problem, handle_unexpected, problem_response
from app.web.request_id import request_id

if TYPE_CHECKING:
    from litestar import Request, Response

    from app.kb.storage_state import StorageState
    from app.kb.store import KnowledgeStore

log = logging.getLogger(__name__)
KNOWLEDGE_SOURCE_HEADER = "X-Knowledge-Source"
#: errors that mean "the database does not answer" (connection refused, dropped, timed out, file gone)
DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,  # the pool gave no connection in time
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.InterfaceError,
    OSError,  # ConnectionRefusedError, TimeoutError, ...
)
#: driver errors, found as the cause of a generic ``DBAPIError``, that mean a connection broke under a
#: statement (the server restarted or closed it, a restore replaced the tables its cached statements
#: named): the next attempt, on a new connection, works
BROKEN_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.exceptions.OperatorInterventionError,  # 57P0x: admin shutdown, crash shutdown, cannot connect now
    asyncpg.exceptions.InternalClientError,  # "cannot switch to state …": the protocol died mid-operation
    asyncpg.exceptions.InvalidCachedStatementError,
)


#: driver errors that mean a statement ran out of its time (``DATABASE_STATEMENT_TIMEOUT_MS``) or of its
#: wait for a lock (``DATABASE_LOCK_TIMEOUT_MS``): the database answers, but is busy — 503, not degraded mode
TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.exceptions.LockNotAvailableError,  # 55P03
    asyncpg.exceptions.QueryCanceledError,  # 57014 (statement_timeout)
)


#: driver errors of a transaction PostgreSQL broke off so that another could go on (deadlock,
#: serialization failure): nothing was changed, and the same transaction again will likely pass
CONFLICT_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.exceptions.DeadlockDetectedError,  # 40P01
    asyncpg.exceptions.SerializationError,  # 40001
)


def _caused_by(exc: BaseException | None, kinds: tuple[type[BaseException], ...]) -> bool:
    for _ in range(8):  # a chain can loop
        if exc is None:
            return False
        if isinstance(exc, kinds):
            return True
        exc = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc.__cause__
    return False


def _unavailable(
    request: Request[Any, Any, Any], slug: str, title: str, detail: str, retry_after: int | str
) -> Response[bytes]:
    """A 503 problem of type ``slug`` with ``Retry-After``: what every database condition here answers."""
    return problem_response(
        Problem(
            type=TYPE_BASE + slug,
            title=title,
            status=503,
            detail=detail,
            instance=request.url.path,
            request_id=request_id(request.scope),
        ),
        {"Retry-After": str(retry_after)},
    )


#: each condition the database answers but breaks a statement off for: (its name in the log, the driver errors
#: that mean it, type slug, title, what it means for the client); either way a retry a second later will likely pass
BUSY_PROBLEMS = (
    (
        "timeout",
        TIMEOUT_ERRORS,
        "database-timeout",
        "The database did not answer in time",
        "A statement waited too long for a lock or ran too long and was cancelled; nothing was changed. Retry later.",
    ),
    (
        "conflict",
        CONFLICT_ERRORS,
        "database-conflict",
        "The database broke off the transaction",
        "The database broke off this request's transaction to let a concurrent one go on (a deadlock "
        "or a serialization failure); nothing was changed. Retry: the same request will likely pass.",
    ),
)


def _busy(request: Request[Any, Any, Any], exc: BaseException) -> Response[bytes] | None:
    """The 503 of a statement timeout or a broken-off transaction (``BUSY_PROBLEMS``), or None."""
    for name, kinds, slug, title, detail in BUSY_PROBLEMS:
        if _caused_by(exc, kinds):
            log.warning("database %s: %s: %s", name, type(exc).__name__, exc)
            return _unavailable(request, slug, title, detail, "1")
    return None


#: each storage condition's problem: (type slug, title, what it means for the client)
STORAGE_PROBLEMS = {
    "full": (
        "storage-full",
        "The database's storage is full",
        "The database's disk is full: nothing can be stored until space is freed.",
    ),
    "read-only": (
        "database-read-only",
        "The database is read-only",
        "The database refuses writes (it is read-only, or a standby): nothing can be stored until it "
        "takes writes again.",
    ),
}


def _storage(request: Request[Any, Any, Any]) -> StorageState | None:
    return getattr(request.app.state, "storage_state", None)


def handle_storage_error(request: Request[Any, Any, Any], exc: BaseException, condition: str) -> Response[bytes]:
    """A write refused for a full disk or a read-only database: 503 of the condition's own type, with
    ``Retry-After`` until the storage state's next write probe."""
    storage = _storage(request)
    wait = storage.retry_after if storage is not None else 1
    slug, title, said = STORAGE_PROBLEMS[condition]
    store = _store(request)
    cached = store.version if store is not None else None
    detail = f"{said} Retry after {wait} s."
    if cached:
        detail += (
            f" Reads, price comparisons, evaluations and recommendations with ?store=false are still answered "
            f"(knowledge version {cached})."
        )
    return _unavailable(request, slug, title, detail, str(wait))


def _answered_apart(request: Request[Any, Any, Any], exc: BaseException) -> Response[bytes] | None:
    """The answer of an error that is neither an outage nor a defect — a full disk or read-only database,
    a timeout, a conflict — or None."""
    storage = _storage(request)
    condition = storage.noticed(exc) if storage is not None else None
    if condition is not None:
        return handle_storage_error(request, exc, condition)
    return _busy(request, exc)


def _store(request: Request[Any, Any, Any]) -> KnowledgeStore | None:
    return getattr(request.app.state, "knowledge_store", None)


def handle_database_error(request: Request[Any, Any, Any], exc: BaseException) -> Response[bytes]:
    if (apart := _answered_apart(request, exc)) is not None:
        return apart
    store = _store(request)
    wait = 1
    if store is not None:
        store.mark_unreachable(exc)
        wait = max(1, math.ceil(store.refresh_seconds))
    cached = store.version if store is not None else None
    detail = "The database does not answer; this operation needs it. Retry later."
    if cached:
        detail += (
            f" Price comparisons, evaluations and recommendations with ?store=false are still answered from "
            f"knowledge version {cached}."
        )
    return _unavailable(request, "database-unavailable", "The database is unavailable", detail, str(wait))


def database_went_away(exc: BaseException | None) -> bool:
    """Whether an error, or one it was raised from, means the database or the connection went away."""
    while exc is not None:
        if isinstance(exc, DATABASE_ERRORS + BROKEN_CONNECTION_ERRORS) or (
            isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated
        ):
            return True
        # SQLAlchemy's error wraps the driver adapter's (``orig``), which is raised from the driver's own
        exc = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc.__cause__
    return False


def handle_driver_error(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Any other ``DBAPIError``: a full disk, a read-only database, a timeout or a conflict (503 of its
    own type); degraded mode (503) when it means the connection broke; else a 500."""
    if (apart := _answered_apart(request, exc)) is not None:
        return apart
    return handle_database_error(request, exc) if database_went_away(exc) else handle_unexpected(request, exc)


def handle_repository_error(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """advanced-alchemy's repositories wrap every driver error: the wrapped error is answered as
    ``handle_driver_error`` answers it; anything else is an internal error (500)."""
    cause = exc.__cause__
    if cause is not None and (apart := _answered_apart(request, cause)) is not None:
        return apart
    if cause is not None and database_went_away(cause):
        return handle_database_error(request, cause)
    return handle_unexpected(request, exc)


DATABASE_EXCEPTION_HANDLERS: dict[Any, Any] = {
    **dict.fromkeys(DATABASE_ERRORS, handle_database_error),
    sa_exc.DBAPIError: handle_driver_error,
    AdvancedAlchemyError: handle_repository_error,
}
