"""``make redis-bench``: what a hung Redis costs a rate-limited request's charge, before and after the
deadlines and the circuit.

A socket server in this process accepts connections and never answers (a hung Redis). ``CONNECTIONS``
concurrent callers each make ``CHARGES`` charges through the service's ``RateLimiter``:

- **before**: Redis counters as they were configured before deadlines (1 s connect and read timeouts,
  redis-py's default retries), a failed charge let through;
- **after**: ``app.web.rate_limits.rate_limiter`` with the default ``REDIS_*`` settings (50 ms round
  trip, 100 ms connect, no retries, the circuit opening after 3 failures, per-worker counts meanwhile).

Reported as Markdown: p50 and p99 of one charge, the charges refused (429) and the connections Redis
was asked for. Environment: ``CONNECTIONS`` (64), ``CHARGES`` (5).
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import sys
import threading
import time

from app.settings import Settings, parse_rate_limit
from app.web.rate_limits import Charge, RateLimiter, rate_limiter

CONNECTIONS = int(os.environ.get("CONNECTIONS", "64"))
CHARGES = int(os.environ.get("CHARGES", "5"))


class HungRedis:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.held.append(conn)


class OldRedisCounters:
    """The Redis counters as configured before deadlines: 1 s timeouts, redis-py's default retries."""

    def __init__(self, url: str) -> None:
        from redis.asyncio import Redis

        self._redis = Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)

    async def add(self, identity: str, units: int, window_seconds: int) -> tuple[int, int]:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(identity, 0, ex=window_seconds, nx=True)
            pipe.incrby(identity, units)
            pipe.ttl(identity)
            _, used, ttl = await pipe.execute()
        return int(used), max(1, int(ttl))

    async def refund(self, identity: str, units: int) -> None:
        await self._redis.decrby(identity, units)

    async def close(self) -> None:
        await self._redis.aclose()


class LetThrough(RateLimiter):
    """The limiter's old behaviour: a charge the store does not answer is allowed."""

    async def charge(self, identity: str, units: int) -> Charge:
        try:
            return await super().charge(identity, units)
        except Exception:
            return Charge(True, self.budget, self.budget, self.window_seconds, self.window_seconds)


async def run(limiter: RateLimiter) -> tuple[list[float], int]:
    seconds: list[float] = []
    refused = 0

    async def caller(n: int) -> None:
        nonlocal refused
        for _ in range(CHARGES):
            started = time.perf_counter()
            charge = await limiter.charge(f"key:{n % 8}", 1)
            seconds.append(time.perf_counter() - started)
            refused += not charge.allowed

    try:
        await asyncio.gather(*(caller(n) for n in range(CONNECTIONS)))
    finally:
        await limiter.close()
    return seconds, refused


def p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def main() -> int:
    budget = 20  # per key and minute: 8 keys, so most charges go over it
    rows: list[tuple[str, int, float, float, int, int]] = []
    for name in ("before", "after"):
        redis = HungRedis()
        url = f"redis://127.0.0.1:{redis.port}/0"
        if name == "before":
            limiter: RateLimiter = LetThrough(budget, 60, OldRedisCounters(url), lambda _k: True, None)
        else:
            settings = Settings(redis_url=url, rate_limit=parse_rate_limit(f"{budget}/minute"))
            built = rate_limiter(settings, lambda _k: True)
            assert built is not None
            limiter = built
        seconds, refused = asyncio.run(run(limiter))
        rows.append((name, len(seconds), statistics.median(seconds) * 1000, p(seconds, 0.99), refused, redis.accepted))
        redis.sock.close()
    print(f"{CONNECTIONS} concurrent callers × {CHARGES} charges, a Redis that accepts and never answers\n")
    print("| code | charges | p50 ms | p99 ms | refused (429) | connections to Redis |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, count, p50, p99, refused, accepted in rows:
        print(f"| {name} | {count} | {p50:.1f} | {p99:.1f} | {refused} | {accepted} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
