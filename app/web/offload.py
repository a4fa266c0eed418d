"""The event loop only routes: CPU-heavy computations run in a bounded pool of worker threads.

A heavy request (large batches, ``detail: "full"``, uncertainty, sensitivity, break-even, training
plans, capacity plans, a comparison or recommendation with a demand over time) awaits a slot of the
pool (``WORKER_POOL_SIZE``); at most ``WORKER_POOL_QUEUE`` requests wait for one, and the next is
answered at once with ``503`` and ``Retry-After`` instead of an unbounded wait. Meanwhile the loop
goes on answering everything else, and the computation's result — or its failure — is the answer:
the loop never computes it again.

Fair between keys: one API key has at most ``WORKER_POOL_PER_KEY`` heavy requests computing or
waiting (default half of size + queue), its next one is answered at once ``429`` with ``Retry-After``
while other keys still find slots and places; and a freed slot goes to the waiting request whose key
has the fewest computing (among equals, the key served the longest ago; each key's own requests in
their order), so a key with many queued requests does not hold every thread in turn.

Threads, not processes: the decision core's heavy parts are NumPy (which releases the GIL in its
kernels) and Python loops that hold it only between the interpreter's 5 ms switch interval, so the
loop thread gets the GIL back within milliseconds. docs/performance.md has the latencies measured
while the heaviest accepted requests run (tests/test_worker_pool_served.py). A process pool would
need the knowledge snapshot in every process, for no liveness it does not already have.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from litestar import Request
from litestar.exceptions import ServiceUnavailableException, TooManyRequestsException

from app.web import metrics
from app.web.rate_limits import presented_key

P = ParamSpec("P")
T = TypeVar("T")
GIL_SWITCH_SECONDS = 0.001
#: what a refused request is told to wait, in seconds
RETRY_AFTER_SECONDS = 2


def default_per_key(size: int, queue_limit: int) -> int:
    """``WORKER_POOL_PER_KEY`` unless set: half of the threads and places, at least one — one key never
    takes them all."""
    return max(1, (size + queue_limit) // 2)


@dataclass(eq=False, slots=True)
class _Waiter:
    key: str | None
    future: asyncio.Future[None]


class WorkerPool:
    """``size`` threads for heavy computations, at most ``queue_limit`` requests waiting for one, and at
    most ``per_key`` of one API key's requests computing or waiting.

    The bookkeeping runs on the event loop only (no lock): a finished computation hands its slot to a
    waiter (of the key with the fewest computing), else frees it."""

    def __init__(self, size: int, queue_limit: int, per_key: int | None = None) -> None:
        if size < 1 or queue_limit < 0 or (per_key is not None and per_key < 1):
            raise ValueError(
                "WORKER_POOL_SIZE must be at least 1, WORKER_POOL_QUEUE at least 0 and WORKER_POOL_PER_KEY at least 1"
            )
        # the loop thread waits up to this long for the GIL each time it takes it back from a busy worker
        # thread (after each socket read or write): 1 ms instead of CPython's 5 ms keeps light answers
        # quick while heavy ones compute (docs/performance.md has both measurements)
        sys.setswitchinterval(GIL_SWITCH_SECONDS)
        self.size = size
        self.queue_limit = queue_limit
        self.per_key = per_key if per_key is not None else default_per_key(size, queue_limit)
        self._executor: ThreadPoolExecutor | None = None
        self._running = 0
        self._waiters: list[_Waiter] = []
        #: each key's requests computing, and computing or waiting (``None``: a caller without a key)
        self._computing: Counter[str | None] = Counter()
        self._held: Counter[str | None] = Counter()
        #: when each key's last computation started (a count of starts): the tie-break of fairness
        self._last_start: dict[str | None, int] = {}
        self._starts = 0

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def running(self) -> int:
        return self._running

    def held(self, key: str | None) -> int:
        """The key's heavy requests computing or waiting."""
        return self._held[key]

    def for_key(self, key: str | None) -> KeyedPool:
        """The pool as the requests of ``key`` (a key's digest; ``None``: no key) use it."""
        return KeyedPool(self, key)

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="compute")
        return self._executor

    def _admit(self, key: str | None) -> None:
        """Count the request against its key, or refuse it at once: its key's share (429), every thread
        and place taken (503)."""
        if key is not None and self._held[key] >= self.per_key:
            raise TooManyRequestsException(
                f"this API key has {self._held[key]} heavy requests computing or waiting, the most one key may "
                f"(WORKER_POOL_PER_KEY={self.per_key}): retry after {RETRY_AFTER_SECONDS} s, or once one is answered",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        if self._running >= self.size and len(self._waiters) >= self.queue_limit:
            raise ServiceUnavailableException(
                f"the service is busy with {self._running} heavy computations and {len(self._waiters)} waiting "
                f"for them: retry after {RETRY_AFTER_SECONDS} s",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        self._held[key] += 1

    def _forget(self, key: str | None) -> None:
        self._held[key] -= 1
        if self._held[key] <= 0:
            del self._held[key]
            self._last_start.pop(key, None)

    async def _slot(self, key: str | None, loop: asyncio.AbstractEventLoop) -> None:
        """Take a thread, or wait for one: the request is admitted already (``_admit``)."""
        if self._running < self.size:
            self._start(key)
            return
        waiter = _Waiter(key, loop.create_future())
        self._waiters.append(waiter)
        metrics.worker_pool_queue(len(self._waiters))
        try:
            await waiter.future  # a finished computation hands over its slot (and counts it as this key's)
        except asyncio.CancelledError:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            elif waiter.future.done() and not waiter.future.cancelled():
                self._release(key)  # handed over just as the request went away: pass it on
            raise
        finally:
            metrics.worker_pool_queue(len(self._waiters))

    def _start(self, key: str | None) -> None:
        self._running += 1
        self._computing[key] += 1
        self._starts += 1
        self._last_start[key] = self._starts

    def _release(self, key: str | None) -> None:
        """``key``'s computation is over: its slot goes to the waiter whose key computes the least, of
        those the one whose key started a computation the longest ago, the first of that key's waiters."""
        self._computing[key] -= 1
        if self._computing[key] <= 0:
            del self._computing[key]
        self._running -= 1
        live = [w for w in self._waiters if not w.future.done()]
        self._waiters = live
        if live:
            chosen = min(live, key=lambda w: (self._computing[w.key], self._last_start.get(w.key, 0)))
            self._waiters.remove(chosen)
            self._start(chosen.key)
            chosen.future.set_result(None)

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in a worker thread (with this task's context: request id, span);
        503 problem with ``Retry-After`` when every thread is busy and ``queue_limit`` requests wait."""
        return await self._run(None, functools.partial(fn, *args, **kwargs))

    async def _run(self, key: str | None, call: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        self._admit(key)
        try:
            await self._slot(key, loop)
        except BaseException:
            self._forget(key)
            raise
        in_context = functools.partial(contextvars.copy_context().run, call)
        try:
            done = self._pool().submit(in_context)
        except BaseException:
            self._release(key)
            self._forget(key)
            raise

        # the slot is freed when the thread is really done, even if the request went away meanwhile
        def finished(_: object) -> None:
            self._release(key)
            self._forget(key)

        def release(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to release
                loop.call_soon_threadsafe(finished, None)

        done.add_done_callback(release)
        return await asyncio.wrap_future(done)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


class KeyedPool:
    """The worker pool as one API key's requests use it: each counts against the key's share
    (``WORKER_POOL_PER_KEY``) until its computation is over."""

    __slots__ = ("key", "pool")

    def __init__(self, pool: WorkerPool, key: str | None) -> None:
        self.pool = pool
        self.key = key

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """As :meth:`WorkerPool.run`; ``429`` problem with ``Retry-After`` beyond the key's share."""
        return await self.pool._run(self.key, functools.partial(fn, *args, **kwargs))


def request_key(request: Request[Any, Any, Any]) -> str | None:
    """Whose share a heavy request counts against: its ``X-API-Key`` as the rate limits identify it (the
    digest of the normalised header, computed once a request), ``None`` without one."""
    digest = presented_key(request.scope).digest
    return digest[:32] if digest else None


def worker_pool(request: Request[Any, Any, Any]) -> KeyedPool:
    """The app's worker pool, from its state, as the request's key uses it. Not a dependency: Litestar
    resolves a handler's dependencies of one level in a task group of their own, and a handler taking its
    service and the pool as two paid for that group (about 40 µs) on every request, offloaded or not."""
    pool: WorkerPool = request.app.state.worker_pool
    return pool.for_key(request_key(request))
