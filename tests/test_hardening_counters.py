"""Rate-limit counters that always expire: a refund never makes a counter again once its window has
ended, and a charge gives a counter found without expiry one — on a real Redis, with 1-second windows,
at the window's boundary; and the same for the counters in memory.

Before: the refund was a plain ``DECRBY``, which, arriving after the window expired, made the counter
again without expiry; the charge's ``SET … NX EX`` never gave it one, so that key or address was
answered 429 for ever.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from conftest import REDIS_URL, Databases, create_key, make_client
from test_rate_limits import OPTIONS, limited

from app.web.counters import MemoryCounters, RedisCounters
from app.web.rate_limits import RateLimiter, Standing, key_digest

#: past a 1-second window's end, with room for a busy machine
PAST_THE_WINDOW = 1.3


def redis_counters(namespace: str) -> RedisCounters:
    # deadlines far above a round trip: this is about expiry, not deadlines (a busy machine is slow)
    return RedisCounters(REDIS_URL, namespace, connect_timeout=5, timeout=5)


def test_a_refund_after_the_window_ended_makes_no_counter(redis_namespace: Any) -> None:
    redis, namespace = redis_namespace
    name = f"{namespace}:addr:203.0.113.9"

    async def run() -> None:
        counters = redis_counters(namespace)
        try:
            assert await counters.add("addr:203.0.113.9", 1, 1) == (1, 1)
            await asyncio.sleep(PAST_THE_WINDOW)
            assert redis.exists(name) == 0  # the window ended
            await counters.refund("addr:203.0.113.9", 1)  # a refund arriving late
            assert redis.exists(name) == 0, (redis.get(name), redis.ttl(name))  # before: -1, no expiry
            used, reset = await counters.add("addr:203.0.113.9", 1, 1)
            assert used == 1 and reset == 1  # a new window, not the old one's count
            assert redis.ttl(name) in (0, 1)
        finally:
            await counters.close()

    asyncio.run(run())


def test_a_refund_stays_in_its_window_and_never_goes_below_zero(redis_namespace: Any) -> None:
    redis, namespace = redis_namespace
    name = f"{namespace}:key:abc"

    async def run() -> None:
        counters = redis_counters(namespace)
        try:
            await counters.add("key:abc", 3, 60)
            await counters.refund("key:abc", 2)
            assert int(redis.get(name)) == 1 and 0 < redis.ttl(name) <= 60
            await counters.refund("key:abc", 5)  # more than was charged: down to zero, not a credit
            assert int(redis.get(name)) == 0 and 0 < redis.ttl(name) <= 60
            assert await counters.add("key:abc", 1, 60) == (1, redis.ttl(name))
        finally:
            await counters.close()

    asyncio.run(run())


def test_a_counter_found_without_expiry_is_given_one_by_the_next_charge(redis_namespace: Any) -> None:
    """A counter left without expiry (by an earlier release's refund, or by hand) expires with the
    window of the next charge instead of refusing its identity for ever."""
    redis, namespace = redis_namespace
    name = f"{namespace}:key:planted"
    redis.set(name, 1000)  # no expiry

    async def run() -> None:
        counters = redis_counters(namespace)
        try:
            used, _ = await counters.add("key:planted", 1, 1)
            assert used == 1001
            assert redis.ttl(name) in (0, 1), redis.ttl(name)  # before: -1, for ever
            await counters.refund("key:planted", 1)
            await asyncio.sleep(PAST_THE_WINDOW)
            assert await counters.add("key:planted", 1, 1) == (1, 1)
        finally:
            await counters.close()

    asyncio.run(run())


class LateRefunds:
    """Redis's counters whose refunds arrive after the window has ended (a slow network, a busy loop)."""

    def __init__(self, counters: RedisCounters, delay: float) -> None:
        self.counters = counters
        self.delay = delay

    async def add(self, identity: str, units: int, window_seconds: int) -> tuple[int, int]:
        return await self.counters.add(identity, units, window_seconds)

    async def refund(self, identity: str, units: int) -> None:
        await asyncio.sleep(self.delay)
        await self.counters.refund(identity, units)

    async def close(self) -> None:
        await self.counters.close()


def test_a_refused_charge_refunded_after_the_window_does_not_refuse_for_ever(redis_namespace: Any) -> None:
    redis, namespace = redis_namespace

    async def known(_digest: str) -> Standing:
        return Standing.VERIFIED

    async def run() -> list[bool]:
        limiter = RateLimiter(1, 1, LateRefunds(redis_counters(namespace), PAST_THE_WINDOW), known, ())
        try:
            allowed = [(await limiter.charge("key:late", 1)).allowed for _ in range(2)]  # the second refused
            # its refund came after the window: the next windows start afresh, each with its expiry
            for _ in range(2):
                allowed.append((await limiter.charge("key:late", 1)).allowed)
                assert redis.ttl(f"{namespace}:key:late") in (0, 1)
                await asyncio.sleep(PAST_THE_WINDOW)
            return allowed
        finally:
            await limiter.close()

    assert asyncio.run(run()) == [True, False, True, True]


def test_a_key_refused_429_is_served_again_after_the_window(databases: Databases, redis_namespace: Any) -> None:
    """The service: a key whose counter had lost its expiry (what a late refund left before) is answered
    429 in its window and served again in the next one."""
    redis, namespace = redis_namespace
    db = databases.seeded("sqlite")
    key = create_key(db, ["admin"], name="locked out")[1]
    redis.set(f"{namespace}:key:{key_digest(key)[:32]}", 5)  # over the budget, no expiry
    patient = {"redis_timeout_ms": 5000, "redis_connect_timeout_ms": 5000}
    settings = limited(db, "2/second", redis_url=REDIS_URL, rate_limit_namespace=namespace, **patient)
    with make_client(db, api_key=key, settings=settings) as c:
        assert c.get(OPTIONS).status_code == 429
        deadline = time.monotonic() + 10  # a 1-second window: served again well within this
        while (r := c.get(OPTIONS)).status_code == 429:
            assert time.monotonic() < deadline, "still refused: the counter never expires"
            time.sleep(0.2)
        assert r.status_code == 200, r.text


def test_a_late_refund_does_not_revive_a_window_in_memory() -> None:
    now = [1000.0]
    counters = MemoryCounters(clock=lambda: now[0])

    async def run() -> None:
        assert await counters.add("key:x", 2, 1) == (2, 1)
        now[0] += 1.5
        await counters.refund("key:x", 1)  # its window ended: nothing to give back, nothing made
        assert "key:x" not in counters
        assert await counters.add("key:x", 1, 1) == (1, 1)
        await counters.refund("key:x", 5)
        assert await counters.add("key:x", 1, 1) == (1, 1)  # never below zero

    asyncio.run(run())


def test_counters_refunded_on_either_side_of_the_window_end_all_expire(redis_namespace: Any) -> None:
    """24 identities charged together, each refunded after its own delay — from at once to well past the
    1-second window's end: afterwards no counter is left without expiry, the next charge of each starts
    a new window, and every counter is gone once that window has ended."""
    redis, namespace = redis_namespace
    delays = [i * 0.05 for i in range(24)]  # 0 … 1.15 s

    async def charged_then_refunded(counters: RedisCounters, i: int, delay: float) -> None:
        await counters.add(f"addr:{i}", 3, 1)
        await asyncio.sleep(delay)
        await counters.refund(f"addr:{i}", 3)

    async def run() -> None:
        counters = redis_counters(namespace)
        try:
            await asyncio.gather(*(charged_then_refunded(counters, i, d) for i, d in enumerate(delays)))
            without_expiry = [n for n in redis.scan_iter(match=f"{namespace}:*") if redis.ttl(n) == -1]
            assert without_expiry == [], without_expiry  # before: those refunded after the window's end
            for i in range(len(delays)):
                used, _ = await counters.add(f"addr:{i}", 1, 1)
                assert used == 1, (i, used)  # refunded to 0 in its window, or a new window
            await asyncio.sleep(PAST_THE_WINDOW)
            assert list(redis.scan_iter(match=f"{namespace}:*")) == []
        finally:
            await counters.close()

    asyncio.run(run())
