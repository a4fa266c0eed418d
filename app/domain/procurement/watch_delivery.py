"""Sending watch deliveries: claimed in the database, POSTed signed, retried with backoff, recorded.

A delivery due (``pending``, ``next_attempt_at`` passed, no live claim) is claimed with one conditional
update — ``claimed_by`` this process, ``claimed_until`` now + ``WATCH_TIMEOUT_SECONDS`` + a margin — and only
the process whose update changed the row sends it. Its stored body's bytes are POSTed with
``X-Compute-Advisor-Signature``, ``-Delivery`` and ``-Event`` (``app.domain.procurement.watch_signing``), from
the event loop (``httpx``, asynchronous: a slow receiver holds one of the few sends in flight, never a
request), with ``WATCH_TIMEOUT_SECONDS`` for the whole exchange, redirects not followed, and the host's
addresses checked against ``WATCH_ALLOWED_HOSTS`` at each connection (``CheckedBackend``).

A 2xx answer makes it ``delivered``. Anything else — another status, a timeout, a refused address — is an
attempt in ``history`` (when, the status or the error, how long), and the next is ``WATCH_RETRY_SECONDS``
later (1, 4, 16, 64, 256 s by default); once they are spent (one try and five retries) it is ``failed``.
The claim is released with the record, which only the claimant may write (a claim whose lease ended and
was taken over is the other process's now).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import heapq
import logging
from collections.abc import Callable, Sequence

import httpcore
import httpx
from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.procurement import watch_signing
from app.domain.procurement.watch_hosts import AllowList, CheckedBackend, Refused
from app.domain.procurement.watch_schemas import attempt
from app.kb import service_records as sr

log = logging.getLogger(__name__)

#: deliveries one process sends at once
MAX_IN_FLIGHT = 4
#: a claim lasts the timeout and this much more (the time to claim, connect and record)
LEASE_MARGIN_SECONDS = 5.0
#: attempts kept in a delivery's ``history`` (a delivery resent after restarts may have more)
MAX_HISTORY = 20
#: longest ``last_error`` kept
MAX_ERROR_CHARS = 500
#: seconds a stop waits for the sends it cancelled
STOP_SECONDS = 5.0


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CheckedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport on a connection pool whose connections reach only allowed addresses
    (``CheckedBackend``), each delivery on a new connection (its host resolved and checked again); no proxy
    from the environment."""

    def __init__(self, allow: AllowList) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=MAX_IN_FLIGHT,
            max_keepalive_connections=0,
            network_backend=CheckedBackend(allow),
        )


class Sender:
    """Claims and sends due deliveries, at most ``MAX_IN_FLIGHT`` at once, each in a task of its own."""

    def __init__(
        self,
        session_maker: Callable[[], AsyncSession],
        allow: AllowList,
        *,
        me: str,
        timeout: float,
        retry: Sequence[float],
        wake: Callable[[], None] = lambda: None,
    ) -> None:
        self._session_maker = session_maker
        self.allow = allow
        self.me = me
        self.timeout = timeout
        self.retry = tuple(retry)
        self.lease = dt.timedelta(seconds=timeout + LEASE_MARGIN_SECONDS)
        self.wake = wake
        #: made at the first delivery (an SSL context takes tens of milliseconds to load): most processes send none
        self._client: httpx.AsyncClient | None = None
        self._running = False
        self._tasks: set[asyncio.Task[None]] = set()
        #: when retries this process scheduled fall due (event-loop time): the loop wakes for them
        self._due: list[float] = []

    def start(self) -> None:
        self._running = True

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=CheckedTransport(self.allow), timeout=self.timeout, follow_redirects=False, trust_env=False
            )
        return self._client

    async def stop(self) -> None:
        """Cancel the sends in flight (their claims lapse at the end of their lease) and close the client."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=STOP_SECONDS)
        self._running = False
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def wait_seconds(self, poll: float) -> float:
        """How long the loop may sleep: the poll, or less when a retry of this process falls due sooner."""
        if not self._due:
            return poll
        return max(0.0, min(poll, self._due[0] - asyncio.get_running_loop().time()))

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def send_due(self) -> int:
        """Claim what is due (as many as there is room for) and start sending it; the number claimed."""
        loop_now = asyncio.get_running_loop().time()
        while self._due and self._due[0] <= loop_now:
            heapq.heappop(self._due)
        room = MAX_IN_FLIGHT - len(self._tasks)
        if room <= 0 or not self._running:
            return 0
        now = utc_now()
        d = sr.WatchDelivery
        due = (d.status == "pending", d.next_attempt_at <= now, or_(d.claimed_until.is_(None), d.claimed_until < now))
        async with self._session_maker() as session:
            ids = list(await session.scalars(select(d.id).where(*due).order_by(d.next_attempt_at, d.id).limit(room)))
        claimed = 0
        for delivery_id in ids:
            async with self._session_maker() as session, session.begin():
                won = await session.execute(
                    update(d)
                    .where(d.id == delivery_id, *due)
                    .values(claimed_by=self.me, claimed_until=now + self.lease)
                )
            if won.rowcount != 1:  # type: ignore[attr-defined]
                continue  # another process claimed it first
            claimed += 1
            task = asyncio.create_task(self.send(delivery_id), name=f"watch-delivery-{delivery_id}")
            self._tasks.add(task)
            task.add_done_callback(self._done)
        return claimed

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("watch delivery failed to record", exc_info=task.exception())
        self.wake()  # room for the next one

    async def send(self, delivery_id: int) -> None:
        """POST the claimed delivery once and record the attempt."""
        d, w = sr.WatchDelivery, sr.Watch
        async with self._session_maker() as session:
            found = (
                await session.execute(
                    select(d.body, d.attempts, d.history, w.url, w.secret, w.deleted_at)
                    .join(w, w.id == d.watch_id)
                    .where(d.id == delivery_id)
                )
            ).one_or_none()
        if found is None:
            return
        text, attempts, history, url, secret, deleted_at = found
        if deleted_at is not None:
            await self._record(delivery_id, attempts, history, utc_now(), 0.0, None, "the watch was deleted", True)
            return
        body = text.encode()
        at, started = utc_now(), asyncio.get_running_loop().time()
        status: int | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(self.timeout):
                headers = watch_signing.headers(secret, body, delivery_id)
                async with self._http().stream("POST", url, content=body, headers=headers) as answer:
                    status = answer.status_code
        except Refused as exc:
            error = f"refused: {exc}"
        except TimeoutError:
            error = f"no answer within {self.timeout:g} s (WATCH_TIMEOUT_SECONDS)"
        except (httpx.HTTPError, OSError) as exc:
            error = f"{type(exc).__name__}: {exc}".rstrip(": ")
        seconds = asyncio.get_running_loop().time() - started
        await self._record(delivery_id, attempts, history, at, seconds, status, error, False)

    async def _record(
        self,
        delivery_id: int,
        attempts: int,
        history: list[object] | None,
        at: dt.datetime,
        seconds: float,
        status: int | None,
        error: str | None,
        final: bool,
    ) -> None:
        """The attempt's outcome; the claim released. Only while this process still holds the claim."""
        if status is not None and not 200 <= status < 300 and error is None:
            error = f"the receiver answered {status}"
        error = None if error is None else error[:MAX_ERROR_CHARS]
        attempts += 1
        values: dict[str, object] = {
            "attempts": attempts,
            "last_status": status,
            "last_error": error,
            "history": [*(history or []), attempt(at, seconds, status, error)][-MAX_HISTORY:],
            "claimed_by": None,
            "claimed_until": None,
        }
        if error is None:
            values |= {"status": "delivered", "delivered_at": utc_now()}
        elif final or attempts > len(self.retry):
            values["status"] = "failed"
        else:
            delay = self.retry[attempts - 1]
            values["next_attempt_at"] = utc_now() + dt.timedelta(seconds=delay)
            heapq.heappush(self._due, asyncio.get_running_loop().time() + delay)
        d = sr.WatchDelivery
        async with self._session_maker() as session, session.begin():
            kept = await session.execute(update(d).where(d.id == delivery_id, d.claimed_by == self.me).values(**values))
        if kept.rowcount != 1:  # type: ignore[attr-defined]
            log.warning(
                "watch delivery %s: its claim lapsed and was taken over; this attempt is not recorded", delivery_id
            )
        with contextlib.suppress(Exception):
            self.wake()
