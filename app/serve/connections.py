"""One worker's book of its connections: the bounds in numbers, the connections waiting for a request
head or reading a body, and the sweep that closes those past their time.

The book is the worker's (``ServingConfig.load`` makes it in the worker process); every connection of
the worker (``app.serve.protocol.BoundedHttpToolsProtocol``) enters it when it opens and leaves it when
it closes. Four times a second the sweep looks at the connections waiting for a request head — in the
order they began to wait, so it stops at the first that is still in time — and at those reading a
body, and closes or cuts what is late; after a shutdown has begun, it cuts the requests still in flight
at their deadline. What it closes is counted (``compute_advisor_connections_closed_total{reason}``) and
summed up in one log line per :data:`REPORT_SECONDS` at most, so a flood of connections is visible
without a line per connection.

Problems written here, without a request to answer through the application (a head over its limit, a
connection refused at the cap, …), are the same problem details as the application's
(``application/problem+json``, ``urn:compute-advisor:problem:…``, a request id), in English: there is
no ``Accept-Language`` to believe yet.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

import msgspec
from prometheus_client import Counter, Gauge
from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from app.web.caching import NO_STORE
from app.web.metrics import PREFIX
from app.web.problems import PROBLEM_JSON, TYPE_BASE, Problem
from app.web.request_id import request_id
from app.web.security import security_headers

if TYPE_CHECKING:
    from litestar.types import Scope

    from app.settings import Settings

log = logging.getLogger("app.serve")

#: bytes handed to the HTTP parser at once: the head's size and the pipeline are checked between two
#: slices, so a head is refused at most one slice past its limit and a pipeline overshoots its bound
#: by at most the requests one slice holds (about 200 of the smallest)
SLICE_BYTES = 4_096
#: how often the sweep runs, in seconds (the timeouts' precision)
SWEEP_SECONDS = 0.25
#: after a problem written here, what the client still sends is read and dropped for this long before
#: the connection is closed, so that the client reads the problem rather than a reset
LINGER_SECONDS = 2.0
#: a request cut (body too slow, shutdown deadline) has this long to answer its problem through the
#: application; then the problem is written here and the connection closed
CUT_GRACE_SECONDS = 2.0
SHUTDOWN_GRACE_SECONDS = 0.5
#: the most often the book logs what it closed
REPORT_SECONDS = 10.0
#: descriptors a worker needs besides its client connections: standard streams, listeners, the event
#: loop's own, the database pool (PostgreSQL: 15 connections and the LISTEN one; SQLite: up to 3 files
#: per connection), Redis, the metrics files, the trace exporter — with room to spare
DESCRIPTOR_RESERVE = 256

CLOSED = Counter(
    f"{PREFIX}_connections_closed_total",
    "Client connections the server closed or refused for a bound (MAX_CONNECTIONS, timeouts, head size), by reason",
    ["reason"],
)
OPEN = Gauge(f"{PREFIX}_connections_open", "Client connections open", multiprocess_mode="livesum")

#: what each reason means, in the book's log line
REASONS = {
    "cap-refused": "refused at MAX_CONNECTIONS (503)",
    "closed-for-room": "waiting for a request, closed to make room at MAX_CONNECTIONS",
    "header-timeout": "closed after HEADER_READ_TIMEOUT_SECONDS",
    "body-timeout": "cut after BODY_READ_TIMEOUT_SECONDS or BODY_READ_DEADLINE_SECONDS (408)",
    "head-too-large": "refused over MAX_HEADER_BYTES (431)",
    "line-too-long": "refused over MAX_REQUEST_LINE_BYTES (414)",
    "malformed": "refused as not HTTP/1.1 (400)",
    "shutdown": "cut at the shutdown deadline",
}


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one worker's connections (``Settings``; the cap as the descriptors allow it)."""

    max_connections: int
    header_timeout: float
    body_timeout: float
    body_deadline: float
    max_line: int
    max_head: int
    max_pipelined: int
    #: seconds from SIGTERM to the worker's exit
    shutdown_timeout: float

    @classmethod
    def of(cls, settings: Settings, max_connections: int | None = None) -> Limits:
        return cls(
            max_connections=max_connections or settings.max_connections,
            header_timeout=settings.header_read_timeout_seconds,
            body_timeout=settings.body_read_timeout_seconds,
            body_deadline=settings.body_read_deadline_seconds,
            max_line=settings.max_request_line_bytes,
            max_head=settings.max_header_bytes,
            max_pipelined=settings.max_pipelined_requests,
            shutdown_timeout=settings.shutdown_timeout_seconds,
        )

    @property
    def cleanup_reserve(self) -> float:
        """The last seconds of the shutdown, kept for the application's cleanup: ``min(5, half)``."""
        return min(5.0, self.shutdown_timeout / 2)

    @property
    def request_deadline(self) -> float:
        """Seconds after the shutdown begins at which the requests still in flight are cut."""
        return self.shutdown_timeout - self.cleanup_reserve

    @property
    def graceful_seconds(self) -> int:
        """uvicorn's ``timeout_graceful_shutdown``: past it the tasks still running are cancelled (the
        requests' connections were closed at :attr:`request_deadline`, half a second or more before)."""
        return math.ceil(self.request_deadline + SHUTDOWN_GRACE_SECONDS)


class Connection(Protocol):
    """What the book asks of a connection (``BoundedHttpToolsProtocol``)."""

    def head_timed_out(self) -> None: ...

    def check_body(self, now: float, elapsed: float) -> None: ...

    def close_now(self) -> None: ...

    def close_for_room(self) -> None: ...

    def deadline_reached(self) -> None: ...


class ConnectionBook:
    """The connections of one worker (module docstring)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        #: every connection admitted and not yet closed
        self.live: set[Connection] = set()
        #: connections with no request in flight, waiting for a head, by when they began to wait
        self.waiting: dict[Connection, float] = {}
        #: connections whose request body is being read
        self.reading: dict[Connection, None] = {}
        #: connections to close at the time given (after lingering, or a cut's grace)
        self.closing: dict[Connection, float] = {}
        self.counts: collections.Counter[str] = collections.Counter()
        #: when the server began to stop (the first connection told to), None before
        self.shutdown_started: float | None = None
        self.cut_at_deadline = 0
        self._deadline_done = False
        self._timer: asyncio.TimerHandle | None = None
        self._last_sweep = time.monotonic()
        self._last_report = -math.inf

    def admit(self, conn: Connection) -> None:
        """A new connection, waiting for its first request."""
        self.live.add(conn)
        self.waiting[conn] = time.monotonic()
        self._sweeping()

    def has_room(self) -> bool:
        """Whether one more connection may open: below the cap, or once the connection that has waited
        longest for a request (none in flight on it) is closed to make room."""
        if len(self.live) < self.limits.max_connections:
            return True
        if not self.waiting:
            return False
        oldest = next(iter(self.waiting))
        self.count("closed-for-room")
        oldest.close_for_room()
        return True

    def release(self, conn: Connection) -> None:
        """The connection is closed (or closing for good): out of every list."""
        self.live.discard(conn)
        self.waiting.pop(conn, None)
        self.reading.pop(conn, None)
        self.closing.pop(conn, None)

    def wait(self, conn: Connection) -> None:
        """The connection has no request in flight any more: its header-read time starts now."""
        self.waiting.pop(conn, None)
        self.waiting[conn] = time.monotonic()

    def close_at(self, conn: Connection, delay: float) -> None:
        self.waiting.pop(conn, None)
        self.reading.pop(conn, None)
        self.closing[conn] = time.monotonic() + delay

    def count(self, reason: str) -> None:
        self.counts[reason] += 1
        CLOSED.labels(reason).inc()

    def begin_shutdown(self) -> None:
        if self.shutdown_started is None:
            self.shutdown_started = time.monotonic()
            self._sweeping()

    def _sweeping(self) -> None:
        if self._timer is None:
            self._last_sweep = time.monotonic()
            self._timer = asyncio.get_running_loop().call_later(SWEEP_SECONDS, self.sweep)

    def sweep(self) -> None:
        """Close or cut what is past its time; runs every :data:`SWEEP_SECONDS` while there is anything."""
        now = time.monotonic()
        elapsed, self._last_sweep = now - self._last_sweep, now
        limits = self.limits
        for conn, since in list(self.waiting.items()):
            if now - since < limits.header_timeout:
                break  # in the order they began to wait: the others are later still
            conn.head_timed_out()
        for conn in list(self.reading):
            conn.check_body(now, elapsed)
        for conn, at in list(self.closing.items()):
            if now >= at:
                conn.close_now()
        started = self.shutdown_started
        if started is not None and not self._deadline_done and now >= started + limits.request_deadline:
            self._deadline_done = True
            for conn in list(self.live):
                conn.deadline_reached()
        OPEN.set(len(self.live))
        if self.counts and now - self._last_report >= REPORT_SECONDS:
            self.report(now)
        self._timer = None
        if self.live or (started is not None and not self._deadline_done):
            self._sweeping()

    def report(self, now: float | None = None) -> None:
        """One line for what was closed since the last one."""
        counts, self.counts = self.counts, collections.Counter()
        self._last_report = time.monotonic() if now is None else now
        if not counts:
            return
        said = "; ".join(f"{n:,} {REASONS.get(reason, reason)}" for reason, n in counts.most_common())
        crowded = counts["cap-refused"] + counts["closed-for-room"]
        log.log(
            logging.WARNING if crowded else logging.INFO,
            "connections: %s (%d open, MAX_CONNECTIONS=%d)",
            said,
            len(self.live),
            self.limits.max_connections,
            extra={"fields": {"closed": dict(counts), "open": len(self.live)}},
        )


def problem_answer(
    status: int,
    slug: str,
    title: str,
    detail: str,
    default_headers: list[tuple[bytes, bytes]],
    *,
    retry_after: int | None = None,
) -> bytes:
    """A whole HTTP/1.1 answer carrying a problem, that closes the connection."""
    rid = request_id(cast("Scope", {"state": {}}))  # a new id: there is no request to take one from
    body = msgspec.json.encode(
        Problem(type=TYPE_BASE + slug, title=title, status=status, detail=detail, request_id=rid)
    )
    headers = [
        *default_headers,
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", NO_STORE.encode()),
        (b"x-request-id", rid.encode()),
        *security_headers("/"),
        (b"connection", b"close"),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    return b"".join([STATUS_LINE[status], *(name + b": " + value + b"\r\n" for name, value in headers), b"\r\n", body])
