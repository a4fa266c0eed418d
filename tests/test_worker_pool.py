"""The worker pool (app/web/offload.py): heavy computations off the event loop, a bounded queue, 503 beyond;
a share per API key, 429 beyond it, and a freed thread for the key computing the least."""

from __future__ import annotations

import asyncio
import threading

import pytest
from litestar.exceptions import ServiceUnavailableException, TooManyRequestsException

from app.settings import Settings
from app.web.offload import WorkerPool, default_per_key


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


def test_a_key_beyond_its_share_is_refused_at_once_while_others_get_places() -> None:
    release = threading.Event()

    async def run() -> None:
        pool = WorkerPool(size=1, queue_limit=3)
        assert pool.per_key == 2  # half of the thread and the places
        greedy, other = pool.for_key("greedy"), pool.for_key("other")
        held = [asyncio.create_task(greedy.run(release.wait, 10)) for _ in range(2)]
        await asyncio.sleep(0.05)
        assert (pool.running, pool.waiting, pool.held("greedy")) == (1, 1, 2)
        with pytest.raises(TooManyRequestsException) as refused:
            await greedy.run(lambda: "never")
        assert refused.value.status_code == 429
        assert refused.value.headers == {"Retry-After": "2"}
        assert pool.held("greedy") == 2  # a refusal takes nothing
        served = asyncio.create_task(other.run(lambda: "served"))
        await asyncio.sleep(0.05)
        assert pool.waiting == 2 and pool.held("other") == 1
        release.set()
        assert await served == "served"
        assert [await h for h in held] == [True, True]
        await asyncio.sleep(0.05)
        assert (pool.running, pool.waiting, pool.held("greedy"), pool.held("other")) == (0, 0, 0, 0)
        pool.shutdown()

    asyncio.run(run())


def test_a_freed_thread_goes_to_the_key_computing_the_least() -> None:
    gates = {name: threading.Event() for name in ("a1", "a2", "b1")}
    order: list[str] = []

    def work(name: str) -> str:
        order.append(name)
        gates[name].wait(10)
        return name

    async def run() -> None:
        pool = WorkerPool(size=1, queue_limit=4, per_key=4)
        a, b = pool.for_key("a"), pool.for_key("b")
        first = asyncio.create_task(a.run(work, "a1"))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(a.run(work, "a2"))  # queued first
        await asyncio.sleep(0.05)
        third = asyncio.create_task(b.run(work, "b1"))  # queued after it, for a key computing nothing
        await asyncio.sleep(0.05)
        for gate in gates.values():
            gate.set()
        assert [await t for t in (first, second, third)] == ["a1", "a2", "b1"]
        pool.shutdown()

    asyncio.run(run())
    # key a computed a1 when the thread was freed: it went to b's request, though a's waited longer
    assert order == ["a1", "b1", "a2"]


def test_a_keys_request_that_goes_away_gives_its_share_back() -> None:
    release = threading.Event()

    async def run() -> None:
        pool = WorkerPool(size=1, queue_limit=2, per_key=2)
        key = pool.for_key("k")
        first = asyncio.create_task(key.run(release.wait, 10))
        await asyncio.sleep(0.05)
        gone = asyncio.create_task(key.run(lambda: "never"))
        await asyncio.sleep(0.05)
        assert pool.held("k") == 2
        gone.cancel()
        await asyncio.sleep(0.05)
        assert pool.held("k") == 1 and pool.waiting == 0
        release.set()
        assert await first is True
        await asyncio.sleep(0.05)
        assert pool.held("k") == 0 and pool.running == 0
        pool.shutdown()

    asyncio.run(run())


def test_the_default_share_is_half_of_threads_and_places() -> None:
    assert [default_per_key(size, queue) for size, queue in ((2, 8), (1, 0), (1, 1), (4, 4))] == [5, 1, 1, 4]
    with pytest.raises(ValueError, match="WORKER_POOL_PER_KEY"):
        WorkerPool(size=1, queue_limit=1, per_key=0)
