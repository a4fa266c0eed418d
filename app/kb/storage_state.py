"""Storage states: a full disk and a read-only database, told apart from an outage, held until writes work.

The database may answer every read while refusing every write: its disk is full (SQLite
``SQLITE_FULL`` "database or disk is full", ``OSError`` ``ENOSPC``; PostgreSQL ``53100`` disk_full) or
it is read-only (SQLite ``SQLITE_READONLY`` "attempt to write a readonly database"; PostgreSQL
``25006`` read_only_sql_transaction: ``default_transaction_read_only``, a hot standby). That is not
degraded mode (the knowledge poll reads fine) and not an internal error: it is a state of its own,
``full`` or ``read-only`` (else ``ok``).

The state is set by a failed write (``noticed``, called where a write's error is met) and cleared only
by evidence that writes work again: a write that succeeded (``wrote``: the writer's group commit), or
the probe — while the state is not ``ok``, every ``probe_seconds`` one transaction inserts a
recommendation-sized row and deletes it again (nothing stays). A successful *read* never clears it, so
the state does not flap with the knowledge poll. ``on_change(state)`` hears every change (metrics).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
import logging
import math
import secrets
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from typing import Literal

import asyncpg.exceptions  # type: ignore[import-untyped]
import msgspec
from sqlalchemy import delete, insert
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb import service_records as sr

log = logging.getLogger(__name__)

State = Literal["ok", "full", "read-only"]
Condition = Literal["full", "read-only"]
STATES: tuple[State, ...] = ("ok", "full", "read-only")
#: bytes of the probe row's answer: about a stored recommendation's, so a probe that fits says one fits
PROBE_BYTES = 16_384

_SQLITE_FULL = 13
_SQLITE_READONLY = 8
#: SQLITE_READONLY_DBMOVED: the file was moved or deleted under the connection — an outage, not read-only
_SQLITE_READONLY_DBMOVED = 1032


def _condition_of_one(exc: BaseException) -> Condition | None:
    if isinstance(exc, asyncpg.exceptions.DiskFullError):
        return "full"
    if isinstance(exc, asyncpg.exceptions.ReadOnlySQLTransactionError):
        return "read-only"
    sqlstate = getattr(exc, "sqlstate", None)  # SQLAlchemy's adapter of an asyncpg error carries it
    if sqlstate == "53100":
        return "full"
    if sqlstate == "25006":
        return "read-only"
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code == _SQLITE_READONLY_DBMOVED:
            return None
        if code is not None:
            return "full" if code & 0xFF == _SQLITE_FULL else "read-only" if code & 0xFF == _SQLITE_READONLY else None
        text = str(exc)
        return "full" if "disk is full" in text else "read-only" if "readonly database" in text else None
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return "full"
        if exc.errno == errno.EROFS:
            return "read-only"
    return None


def storage_condition(exc: BaseException | None) -> Condition | None:
    """``full`` or ``read-only`` when an error, or one it was raised from, says the database cannot
    write (the disk is full, the database is read-only); else None."""
    for _ in range(8):  # a chain can loop
        if exc is None:
            return None
        found = _condition_of_one(exc)
        if found is not None:
            return found
        # SQLAlchemy's error wraps the driver adapter's (``orig``), which is raised from the driver's own
        exc = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None else exc.__cause__
    return None


def write_probe(session_maker: Callable[[], AsyncSession]) -> Callable[[], Awaitable[None]]:
    """The probe: one committed transaction that inserts a recommendation of about a stored one's size
    (``PROBE_BYTES`` of random text, which does not compress) and deletes it again. Raises what the
    database raised."""

    async def probe() -> None:
        rec_id = str(uuid.uuid4())
        row = {
            "id": rec_id,
            "created_at": dt.datetime.now(dt.UTC),
            "knowledge_version": "storage-probe",
            "methodology_version": "probe",
            "request": {},
            "response": msgspec.Raw(msgspec.json.encode({"probe": secrets.token_hex(PROBE_BYTES // 2)})),
            "api_key_id": None,
        }
        async with session_maker() as session, session.begin():
            await session.execute(insert(sr.Recommendation), [row])
            await session.execute(delete(sr.Recommendation).where(sr.Recommendation.id == rec_id))

    return probe


class StorageState:
    """This worker's storage state (``ok``, ``full``, ``read-only``), set by failed writes and cleared by
    a successful one or the probe (see the module's docstring)."""

    def __init__(
        self,
        probe: Callable[[], Awaitable[None]] | None,
        probe_seconds: float,
        *,
        on_change: Callable[[State], None] | None = None,
    ) -> None:
        self._probe = probe
        self.probe_seconds = probe_seconds
        self.state: State = "ok"
        #: when the state last changed (UTC); None while it never left ``ok``
        self.since: dt.datetime | None = None
        #: the failed write that set the state, while it is not ``ok``
        self.last_error: str | None = None
        self._on_change = on_change
        self._task: asyncio.Task[None] | None = None
        if on_change is not None:
            on_change(self.state)

    @property
    def retry_after(self) -> int:
        """Seconds a client should wait before writing again: until the next probe."""
        return max(1, math.ceil(self.probe_seconds))

    def _set(self, state: State, error: str | None) -> None:
        self.last_error = error
        if state == self.state:
            return
        if state == "ok":
            log.info("the database takes writes again (storage was %s)", self.state)
        else:
            log.warning("the database refuses writes: storage %s (%s); reads and computations go on", state, error)
        self.state, self.since = state, dt.datetime.now(dt.UTC).replace(microsecond=0)
        if self._on_change is not None:
            self._on_change(state)

    def noticed(self, exc: BaseException) -> Condition | None:
        """A write failed with ``exc``: the storage condition it shows (now the state), or None when it
        shows none (the state is then left as it is)."""
        condition = storage_condition(exc)
        if condition is not None:
            self._set(condition, f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        return condition

    def wrote(self) -> None:
        """A write was committed: writes work."""
        if self.state != "ok":
            self._set("ok", None)

    async def probe_now(self) -> State:
        """Run the probe once: a success clears the state, a storage error sets it; the state after."""
        if self._probe is None:
            return self.state
        try:
            await self._probe()
        except Exception as exc:  # an outage or a timeout is no evidence either way: the state stays
            if self.noticed(exc) is None:
                log.info("storage probe failed without a storage error: %s: %s", type(exc).__name__, exc)
        else:
            self.wrote()
        return self.state

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.probe_seconds)
            if self.state != "ok":
                await self.probe_now()

    def start(self) -> None:
        """Probe every ``probe_seconds`` while the state is not ``ok`` (nothing is written while it is)."""
        if self._probe is not None and self._task is None:
            self._task = asyncio.create_task(self._run(), name="storage-probe")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
