"""The event loop only routes: CPU-heavy computations run in a bounded pool of worker threads.

A heavy request (large batches, ``detail: "full"``, uncertainty, sensitivity, break-even, training
plans) awaits a slot of the pool (``WORKER_POOL_SIZE``); at most ``WORKER_POOL_QUEUE`` requests wait
for one, and the next is answered at once with ``503`` and ``Retry-After`` instead of an unbounded
wait. Meanwhile the loop goes on answering everything else.

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
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

import msgspec
from litestar import Request, Response
from litestar.enums import MediaType
from litestar.exceptions import ServiceUnavailableException

from app.web import metrics

P = ParamSpec("P")
T = TypeVar("T")
GIL_SWITCH_SECONDS = 0.001
#: what a refused request is told to wait, in seconds
RETRY_AFTER_SECONDS = 2


class WorkerPool:
    """``size`` threads for heavy computations, at most ``queue_limit`` requests waiting for one.

    The bookkeeping runs on the event loop only (no lock): a finished computation hands its slot to
    the first waiter, else frees it."""

    def __init__(self, size: int, queue_limit: int) -> None:
        if size < 1 or queue_limit < 0:
            raise ValueError("WORKER_POOL_SIZE must be at least 1 and WORKER_POOL_QUEUE at least 0")
        # the loop thread waits up to this long for the GIL each time it takes it back from a busy worker
        # thread (after each socket read or write): 1 ms instead of CPython's 5 ms keeps light answers
        # quick while heavy ones compute (docs/performance.md has both measurements)
        sys.setswitchinterval(GIL_SWITCH_SECONDS)
        self.size = size
        self.queue_limit = queue_limit
        self._executor: ThreadPoolExecutor | None = None
        self._running = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def running(self) -> int:
        return self._running

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="compute")
        return self._executor

    async def _slot(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._running < self.size:
            self._running += 1
            return
        if len(self._waiters) >= self.queue_limit:
            raise ServiceUnavailableException(
                f"the service is busy with {self._running} heavy computations and {len(self._waiters)} waiting "
                f"for them: retry after {RETRY_AFTER_SECONDS} s",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        metrics.worker_pool_queue(len(self._waiters))
        try:
            await waiter  # a finished computation hands over its slot
        except asyncio.CancelledError:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            elif waiter.done() and not waiter.cancelled():
                self._release()  # handed over just as the request went away: pass it on
            raise
        finally:
            metrics.worker_pool_queue(len(self._waiters))

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._running -= 1

    async def answer(self, fn: Callable[P, Any], /, *args: P.args, **kwargs: P.kwargs) -> Response[bytes]:
        """``fn``'s result as a JSON answer, computed *and encoded* in a worker thread: a large answer
        (a full batch is megabytes) is not serialised on the loop either."""

        def encoded() -> bytes:
            return msgspec.json.encode(fn(*args, **kwargs))

        return Response(await self.run(encoded), media_type=MediaType.JSON)

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in a worker thread (with this task's context: request id, span);
        503 problem with ``Retry-After`` when every thread is busy and ``queue_limit`` requests wait."""
        loop = asyncio.get_running_loop()
        await self._slot(loop)
        call = functools.partial(contextvars.copy_context().run, functools.partial(fn, *args, **kwargs))
        try:
            done = self._pool().submit(call)
        except BaseException:
            self._release()
            raise

        # the slot is freed when the thread is really done, even if the request went away meanwhile
        def release(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to release
                loop.call_soon_threadsafe(self._release)

        done.add_done_callback(release)
        return await asyncio.wrap_future(done)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def worker_pool(request: Request[Any, Any, Any]) -> WorkerPool:
    """The app's worker pool, from its state. Not a dependency: Litestar resolves a handler's
    dependencies of one level in a task group of their own, and a handler taking its service and the
    pool as two paid for that group (about 40 µs) on every request, offloaded or not."""
    pool: WorkerPool = request.app.state.worker_pool
    return pool
