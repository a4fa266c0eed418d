"""Where the rate limits' counts live: this process's memory, Redis, or Redis with this process's counts
behind it while Redis does not answer (``SharedCounters``: deadlines, a circuit, per-worker fallback).

``app.web.rate_limits`` decides what a request costs and whether it may go on; this module only adds
units to fixed windows and gives them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from app.web.dependencies import Circuit

T = TypeVar("T")


class Counters(Protocol):
    """Fixed-window counters: ``add`` returns (units used in the window after adding, seconds to reset)."""

    async def add(self, identity: str, units: int, window_seconds: int) -> tuple[int, int]: ...

    async def refund(self, identity: str, units: int) -> None: ...

    async def close(self) -> None: ...


class MemoryCounters:
    """This process's counters; a window starts at an identity's first request. Expired ones are
    swept once per window, so made-up identities do not accumulate."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: identity -> (window end, units used)
        self._used: dict[str, tuple[float, int]] = {}
        self._next_sweep = 0.0

    def __len__(self) -> int:
        return len(self._used)

    def __contains__(self, identity: str) -> bool:
        return identity in self._used

    def sweep(self, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        self._used = {k: v for k, v in self._used.items() if v[0] > now}

    async def add(self, identity: str, units: int, window_seconds: int) -> tuple[int, int]:
        now = self._clock()
        if now >= self._next_sweep:
            self.sweep(now)
            self._next_sweep = now + window_seconds
        end, used = self._used.get(identity, (0.0, 0))
        if end <= now:
            end, used = now + window_seconds, 0
        used += units
        self._used[identity] = (end, used)
        return used, max(1, math.ceil(end - now))

    async def refund(self, identity: str, units: int) -> None:
        """Give ``units`` back to the identity's current window; nothing when that window has ended (a late
        refund never revives a window, nor makes one)."""
        found = self._used.get(identity)
        if found is None:
            return
        if found[0] <= self._clock():
            del self._used[identity]
        else:
            self._used[identity] = (found[0], max(0, found[1] - units))

    async def close(self) -> None:
        self._used.clear()


#: one charge: the units added, and the window's expiry set whenever the key has none — a new key, or
#: one left without expiry (by the plain DECRBY refunds of earlier releases, or by hand): no counter
#: outlives its window, so no identity is refused for ever
_CHARGE = """
local used = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('TTL', KEYS[1])
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {used, ttl}
"""

#: one refund: only into a window that is still running (a key with an expiry), never below zero; a
#: key that has expired is not made again (a plain DECRBY would make it, without expiry), and a key
#: without expiry is left to the next charge, which gives it one
_REFUND = """
if redis.call('PTTL', KEYS[1]) <= 0 then
  return 0
end
local left = redis.call('DECRBY', KEYS[1], ARGV[1])
if left < 0 then
  redis.call('INCRBY', KEYS[1], -left)
end
return 1
"""


class RedisCounters:
    """Counters in Redis, one key per identity (``<namespace>:<identity>``) expiring with its window.

    Every call has a deadline (``REDIS_CONNECT_TIMEOUT_MS`` to connect, ``REDIS_TIMEOUT_MS`` for the round
    trip) and is not retried: a Redis that does not answer costs a request at most that long.
    """

    def __init__(self, url: str, namespace: str, *, connect_timeout: float, timeout: float) -> None:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.driver_info import DriverInfo

        self._redis = Redis.from_url(
            url,
            socket_connect_timeout=connect_timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_error=[],
            # read once: left to itself, redis-py reads its version from the installed packages' metadata
            # for each new connection, blocking the event loop for milliseconds each time
            driver_info=DriverInfo(),
        )
        self._namespace = namespace
        #: a charge and a refund, each one script, atomic on the server: one command a request (EVALSHA;
        #: the scripts loaded once per server)
        self._charge = self._redis.register_script(_CHARGE)
        self._refund = self._redis.register_script(_REFUND)
        #: the whole call's deadline: a connection and one round trip
        self.deadline = connect_timeout + timeout
        self._pending: set[asyncio.Future[Any]] = set()

    def _key(self, identity: str) -> str:
        return f"{self._namespace}:{identity}"

    async def _within_deadline(self, call: Awaitable[T]) -> T:
        """``call``'s result, or ``TimeoutError`` once the deadline passes. The call runs as a task of its
        own and is cancelled then, but the request does not wait for its clean-up: redis-py's pool
        hands out (and takes back) connections under one lock, so clean-ups of many calls cancelled
        at once would queue behind each other."""
        task = asyncio.ensure_future(call)
        self._pending.add(task)
        task.add_done_callback(self._forget)
        done, _ = await asyncio.wait({task}, timeout=self.deadline)
        if not done:
            task.cancel()
            raise TimeoutError(f"Redis did not answer within {self.deadline * 1000:.0f} ms")
        return task.result()

    def _forget(self, task: asyncio.Future[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a late failure is no news (the caller already fell back)

    async def _add(self, key: str, units: int, window_seconds: int) -> tuple[int, int]:
        used, ttl = await self._charge(keys=[key], args=[units, window_seconds])
        return int(used), max(1, int(ttl))

    async def add(self, identity: str, units: int, window_seconds: int) -> tuple[int, int]:
        return await self._within_deadline(self._add(self._key(identity), units, window_seconds))

    async def refund(self, identity: str, units: int) -> None:
        await self._within_deadline(self._refund(keys=[self._key(identity)], args=[units]))

    async def close(self) -> None:
        for task in list(self._pending):
            task.cancel()
        if self._pending:
            await asyncio.wait(self._pending, timeout=1)
        with contextlib.suppress(Exception):
            await self._redis.aclose()


#: what the service does while Redis is down (readiness and the log say it)
REDIS_FALLBACK = "rate limits counted by each worker alone until Redis answers"


class SharedCounters:
    """Redis's counters, and this process's while Redis does not answer.

    A charge Redis does not answer within its deadline is counted in this process's memory instead
    (``MemoryCounters``), so limits hold — per worker — while Redis is down or refuses connections.
    A ``Circuit`` stops asking Redis after a few failures in a row and tries it again after a while;
    the state (``redis`` up or down) is logged on each change, exported and shown in readiness.
    """

    def __init__(self, redis: Counters, circuit: Circuit, local: MemoryCounters | None = None) -> None:
        self.redis = redis
        self.circuit = circuit
        self.local = local if local is not None else MemoryCounters()

    async def add(self, identity: str, units: int, window_seconds: int) -> tuple[int, int]:
        if self.circuit.allow():
            try:
                found = await self.redis.add(identity, units, window_seconds)
            except Exception as exc:  # refused, timed out, a broken answer: count here instead
                self.circuit.failed(exc)
            else:
                self.circuit.succeeded()
                return found
        return await self.local.add(identity, units, window_seconds)

    async def refund(self, identity: str, units: int) -> None:
        if identity in self.local:
            await self.local.refund(identity, units)
        elif not self.circuit.open:
            await self.redis.refund(identity, units)

    async def close(self) -> None:
        await self.redis.close()
        await self.local.close()
