"""The worker pool (app/web/offload.py): heavy computations off the event loop, a bounded queue, 503 beyond."""

from __future__ import annotations

import asyncio
import threading

import pytest
from litestar.exceptions import ServiceUnavailableException

from app.settings import Settings
from app.web.offload import WorkerPool


def test_the_pool_runs_off_the_loop_and_refuses_beyond_its_queue() -> None:
    release = threading.Event()
    started = threading.Event()
    threads: list[str] = []

    def blocking(n: int) -> int:
        threads.append(threading.current_thread().name)
        started.set()
        release.wait(10)
        return n * 2

    async def run() -> None:
        pool = WorkerPool(size=1, queue_limit=2)
        first = asyncio.create_task(pool.run(blocking, 1))
        await asyncio.to_thread(started.wait, 5)
        waiting = [asyncio.create_task(pool.run(blocking, n)) for n in (2, 3)]
        await asyncio.sleep(0.05)
        assert (pool.running, pool.waiting) == (1, 2)
        with pytest.raises(ServiceUnavailableException) as refused:
            await pool.run(blocking, 4)
        assert refused.value.status_code == 503
        assert refused.value.headers == {"Retry-After": "2"}
        # the loop is free meanwhile
        assert await asyncio.wait_for(asyncio.sleep(0, result="loop answers"), 1) == "loop answers"
        release.set()
        assert await first == 2
        assert [await w for w in waiting] == [4, 6]
        assert (pool.running, pool.waiting) == (0, 0)
        pool.shutdown()

    asyncio.run(run())
    assert threads and all(name.startswith("compute") for name in threads)


def test_a_request_that_goes_away_while_waiting_frees_its_place() -> None:
    release = threading.Event()

    async def run() -> None:
        pool = WorkerPool(size=1, queue_limit=1)
        first = asyncio.create_task(pool.run(release.wait, 10))
        await asyncio.sleep(0.05)
        gone = asyncio.create_task(pool.run(lambda: "never"))
        await asyncio.sleep(0.05)
        assert pool.waiting == 1
        gone.cancel()
        await asyncio.sleep(0.05)
        assert pool.waiting == 0
        release.set()
        assert await first is True
        await asyncio.sleep(0.05)
        assert pool.running == 0
        assert await pool.run(lambda: "next") == "next"
        pool.shutdown()

    asyncio.run(run())


def test_an_exception_in_the_pool_reaches_the_caller_and_frees_the_slot() -> None:
    async def run() -> None:
        pool = WorkerPool(size=1, queue_limit=0)
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 // 0)
        await asyncio.sleep(0.05)
        assert pool.running == 0
        assert await pool.run(lambda: 7) == 7
        pool.shutdown()

    asyncio.run(run())


def test_pool_settings() -> None:
    s = Settings.from_env({"WORKER_POOL_SIZE": "3", "WORKER_POOL_QUEUE": "0"})
    assert (s.worker_pool_size, s.worker_pool_queue) == (3, 0)
    assert (Settings.from_env({}).worker_pool_size, Settings.from_env({}).worker_pool_queue) == (2, 8)
    for bad in ({"WORKER_POOL_SIZE": "0"}, {"WORKER_POOL_QUEUE": "-1"}, {"WORKER_POOL_SIZE": "two"}):
        with pytest.raises(ValueError, match="WORKER_POOL"):
            Settings.from_env(bad)
