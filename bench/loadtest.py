"""``make loadtest``: a fixed number of mixed requests against two workers on PostgreSQL.

Serves compute-advisor with uvicorn (two workers, uvloop + httptools, ``RATE_LIMIT=off``) on a fresh
PostgreSQL database that it creates, migrates, seeds and finally drops (``lib.served``), with an
``admin`` key. Then ``CONNECTIONS`` keep-alive connections (``loadgen.connection``, the asyncio client
of ``bench/loadgen.py``) share ``REQUESTS`` requests, drawn in a fixed, seeded order from this mix:

======================  ======  ==========================================================
kind                    share   request
======================  ======  ==========================================================
gpus                    12 %    ``GET /v1/gpus``
prices                  10 %    ``GET /v1/prices``, ``option`` filter from a fixed list
options                  8 %    ``GET /v1/options``
price-comparisons       20 %    ``POST /v1/price-comparisons``, varied profile
evaluations             20 %    ``POST /v1/evaluations``, one varied profile
recommendations         15 %    ``POST /v1/recommendations`` (stored, 201 + Location)
recommendation-get      15 %    ``GET /v1/recommendations/{id}`` of a stored one
======================  ======  ==========================================================

Profiles vary ``gpus``, ``utilization``, ``horizon_years``, ``ops_team`` and ``data_security`` over
fixed lists, so most decision requests are computed, not answered from the worker's memo. The
``GET /v1/recommendations/{id}`` requests pick among the recommendations stored so far (16 are
stored before the run starts). Reported: requests, errors (a status other than 2xx/304, or a
transport error), status counts and latency percentiles per kind and overall, as Markdown.

With ``HEAVY=N``, N of the planned requests, spread evenly over the run, are replaced by heavy ones,
in turn: break-even, sensitivity, uncertainty with 100,000 draws, 200 profiles with ``detail: "full"``
and 1,000 profiles that all differ. They run in each worker's thread pool (docs/operations.md,
"Heavy requests"); the table then shows what they cost the other kinds' latencies. A heavy request
may take up to ``HEAVY_TIMEOUT`` seconds (120) before it counts as a transport error.

Environment: ``REQUESTS`` (20000), ``CONNECTIONS`` (64), ``WORKERS`` (2), ``SEED`` (1), ``HEAVY`` (0).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import lib
from loadgen import connection, percentile_ms, run_loop

REQUESTS = int(os.environ.get("REQUESTS") or 20_000)
CONNECTIONS = int(os.environ.get("CONNECTIONS") or 64)
WORKERS = int(os.environ.get("WORKERS") or 2)
SEED = int(os.environ.get("SEED") or 1)
HEAVY = int(os.environ.get("HEAVY") or 0)
HEAVY_TIMEOUT = float(os.environ.get("HEAVY_TIMEOUT") or 120)
PRESTORED = 16

MIX: list[tuple[str, int]] = [
    ("gpus", 12),
    ("prices", 10),
    ("options", 8),
    ("price-comparisons", 20),
    ("evaluations", 20),
    ("recommendations", 15),
    ("recommendation-get", 15),
]
#: not drawn from the mix: ``HEAVY`` of them replace planned requests
HEAVY_KIND = "heavy"

GPUS = [1, 2, 4, 8, 16, 24, 32, 64, 128, 256, 512]
UTILIZATION = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
HORIZON = [1, 2, 3]
OPS = ["none", "basic", "professional"]
SECURITY = ["standard", "high"]
PRICE_OPTIONS = [None, "self_built_cluster", "rented_gpu_instances", "ai_compute_platform", "*"]


def profile(rng: random.Random) -> dict[str, Any]:
    return {
        "gpus": rng.choice(GPUS),
        "utilization": rng.choice(UTILIZATION),
        "horizon_years": rng.choice(HORIZON),
        "team_size": rng.choice([5, 20, 80]),
        "ops_team": rng.choice(OPS),
        "data_security": rng.choice(SECURITY),
        "start_within_days": rng.choice([14, 60, 180]),
    }


@dataclass
class Planned:
    kind: str
    method: str
    path: str | None  # None: a stored recommendation, chosen when sent
    body: bytes = b""


def plan(n: int, seed: int) -> list[Planned]:
    rng = random.Random(seed)
    kinds = rng.choices([k for k, _ in MIX], weights=[w for _, w in MIX], k=n)
    out: list[Planned] = []
    for kind in kinds:
        if kind == "gpus":
            out.append(Planned(kind, "GET", "/v1/gpus"))
        elif kind == "prices":
            option = rng.choice(PRICE_OPTIONS)
            out.append(Planned(kind, "GET", "/v1/prices" + (f"?option={option}" if option else "")))
        elif kind == "options":
            out.append(Planned(kind, "GET", "/v1/options"))
        elif kind == "price-comparisons":
            p = profile(rng)
            body = {k: p[k] for k in ("gpus", "utilization", "horizon_years")}
            out.append(Planned(kind, "POST", "/v1/price-comparisons", lib.dumps(body)))
        elif kind == "evaluations":
            out.append(Planned(kind, "POST", "/v1/evaluations", lib.dumps({"profiles": [profile(rng)]})))
        elif kind == "recommendations":
            out.append(Planned(kind, "POST", "/v1/recommendations", lib.dumps(profile(rng))))
        else:
            out.append(Planned(kind, "GET", None))
    for i in range(min(HEAVY, n)):
        out[(i * n) // HEAVY + n // (2 * HEAVY)] = heavy(i, rng)
    return out


def heavy(i: int, rng: random.Random) -> Planned:
    p = profile(rng)
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("/v1/break-even", p),
        ("/v1/sensitivity", p),
        ("/v1/uncertainty", {**p, "draws": 100_000}),
        ("/v1/evaluations", {"profiles": [{**profile(rng), "gpus": 1 + j} for j in range(200)], "detail": "full"}),
        ("/v1/evaluations", {"profiles": [{**profile(rng), "gpus": 1 + j} for j in range(1_000)]}),
    ]
    path, body = bodies[i % len(bodies)]
    return Planned(HEAVY_KIND, "POST", path, lib.dumps(body))


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    transport: int = 0


class Run:
    """``CONNECTIONS`` connections sharing the planned requests, in order, with statistics per kind.

    A ``GET /v1/recommendations/{id}`` picks its id when it is sent, among those stored so far: each
    201's ``Location`` is added to them."""

    def __init__(self, port: int, key: str, planned: list[Planned], stored: list[str]) -> None:
        self.port = port
        self.headers = {"X-API-Key": key}
        self.planned = planned
        self.next = 0
        self.stored = stored
        self.rng = random.Random(SEED + 1)
        self.stats: dict[str, Stats] = {k: Stats() for k, _ in [*MIX, (HEAVY_KIND, 0)]}

    def _next_request(self) -> tuple[Planned, bytes] | None:
        if self.next >= len(self.planned):
            return None
        item = self.planned[self.next]
        self.next += 1
        path = item.path or self.rng.choice(self.stored)
        return item, lib.request_bytes(item.method, path, self.port, self.headers, item.body)

    def _record(self, item: Planned, latency: float, response: lib.Response | None) -> None:
        stats = self.stats[item.kind]
        if response is None:
            stats.errors += 1
            stats.transport += 1
            return
        stats.latencies.append(latency)
        stats.codes[str(response.status)] = stats.codes.get(str(response.status), 0) + 1
        if not (200 <= response.status < 300 or response.status == 304):
            stats.errors += 1
        location = response.headers.get("location")
        if response.status == 201 and location:
            self.stored.append(location)

    async def go(self) -> float:
        start = time.perf_counter()
        timeout = max(30.0, HEAVY_TIMEOUT) if HEAVY else 30.0
        await asyncio.gather(
            *(connection(self.port, self._next_request, self._record, timeout) for _ in range(CONNECTIONS))
        )
        return time.perf_counter() - start


def row(label: str, s: Stats, seconds: float) -> str:
    lat = sorted(s.latencies)
    n = len(lat) + s.transport
    codes = lib.codes_text(s.codes)
    if s.transport:
        codes += f", transport errors×{s.transport}"
    return (
        f"| {label} | {n:,} | {s.errors} | {codes} | {n / seconds:,.0f} | {percentile_ms(lat, 50):.1f} | "
        f"{percentile_ms(lat, 90):.1f} | {percentile_ms(lat, 99):.1f} | "
        f"{lat[-1] * 1000 if lat else float('nan'):.0f} |"
    )


def main() -> int:
    return lib.run_main(loadtest, "server stopped, database dropped")


def loadtest() -> int:
    planned = plan(REQUESTS, SEED)
    with lib.served("loadtest", workers=WORKERS) as srv:
        hdr = {"X-API-Key": srv.key}
        rng = random.Random(SEED + 2)
        stored: list[str] = []
        for _ in range(PRESTORED):
            resp = lib.request(srv.port, "POST", "/v1/recommendations", lib.dumps(profile(rng)), hdr)
            if resp.status != 201:
                raise SystemExit(f"storing a recommendation failed: {resp.status} {resp.body[:300]!r}")
            stored.append(resp.headers["location"])
        # warm both workers' code paths (a few requests of every kind; not counted)
        warm = Run(srv.port, srv.key, [p for p in plan(200, SEED + 3) if p.kind != HEAVY_KIND], list(stored))
        run_loop(warm.go())
        before = lib.loadavg()
        run = Run(srv.port, srv.key, planned, stored)
        seconds = run_loop(run.go())
        after = lib.loadavg()
        rss = [lib.rss_mb(pid) for pid in srv.pids]

    total = Stats()
    others = Stats()  # every kind but the heavy ones
    for kind, s in run.stats.items():
        if kind != HEAVY_KIND:
            others.latencies += s.latencies
            others.errors += s.errors
            others.transport += s.transport
            for k, v in s.codes.items():
                others.codes[k] = others.codes.get(k, 0) + v
        total.latencies += s.latencies
        total.errors += s.errors
        total.transport += s.transport
        for k, v in s.codes.items():
            total.codes[k] = total.codes.get(k, 0) + v
    print("## compute-advisor load test\n")
    print(*lib.machine(), sep="\n")
    print(
        f"- service: uvicorn, {WORKERS} workers, uvloop + httptools, no access log, RATE_LIMIT=off, "
        f"PostgreSQL {lib.pg_version()} on the same machine (fresh database), asyncpg "
        f"{importlib.metadata.version('asyncpg')}, an admin key"
    )
    print(
        f"- client: bench/loadtest.py (Python asyncio + uvloop, on the same machine), {CONNECTIONS} keep-alive "
        f"connections, {REQUESTS:,} requests in a seeded mix (seed {SEED}); {PRESTORED} recommendations stored "
        "and 200 mixed requests sent before, not counted"
        + (f"; {HEAVY} heavy requests mixed in (break-even, sensitivity, 100,000 draws, full batches)" if HEAVY else "")
    )
    print(f"- load average before: {before}; after: {after}")
    peaks = ", ".join(f"{r.get('VmHWM', 0):.0f} MB" for r in rss) or "unknown"
    print(f"- peak RSS (VmHWM) of each worker after the run: {peaks}\n")
    sent = len(total.latencies) + total.transport
    print(f"{sent:,} requests in {seconds:.1f} s ({sent / seconds:,.0f} req/s), {total.errors} errors\n")
    print("| kind | requests | errors | status codes | req/s | p50 ms | p90 ms | p99 ms | max ms |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    labels = {
        "gpus": "GET /v1/gpus",
        "prices": "GET /v1/prices[?option=…]",
        "options": "GET /v1/options",
        "price-comparisons": "POST /v1/price-comparisons",
        "evaluations": "POST /v1/evaluations (1 profile)",
        "recommendations": "POST /v1/recommendations (stored)",
        "recommendation-get": "GET /v1/recommendations/{id}",
    }
    for kind, _ in MIX:
        print(row(labels[kind], run.stats[kind], seconds))
    if HEAVY:
        heavy_label = "heavy (break-even, sensitivity, uncertainty, full and large batches)"
        print(row(heavy_label, run.stats[HEAVY_KIND], seconds))
        print(row("all but the heavy", others, seconds))
    print(row("**all**", total, seconds))
    return 0 if total.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
