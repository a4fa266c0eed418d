"""``make loadtest``: a fixed number of mixed requests against two workers on PostgreSQL.

Serves compute-advisor with uvicorn (two workers, uvloop + httptools, ``RATE_LIMIT=off``) on a fresh
PostgreSQL database that it creates, migrates, seeds and finally drops (``bench/served.py``), with an
``admin`` key. Then ``CONNECTIONS`` keep-alive connections (``bench/loadgen.py``'s asyncio client)
share ``REQUESTS`` requests, drawn in a fixed, seeded order from this mix:

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

Environment: ``REQUESTS`` (20000), ``CONNECTIONS`` (64), ``WORKERS`` (2), ``SEED`` (1).
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True

import asyncio  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

from run import HOST, loadavg, machine, request, rss_mb  # noqa: E402
from served import install_signal_handlers, pg_version, served  # noqa: E402

REQUESTS = int(os.environ.get("REQUESTS") or 20_000)
CONNECTIONS = int(os.environ.get("CONNECTIONS") or 64)
WORKERS = int(os.environ.get("WORKERS") or 2)
SEED = int(os.environ.get("SEED") or 1)
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


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


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
            out.append(Planned(kind, "POST", "/v1/price-comparisons", dumps(body)))
        elif kind == "evaluations":
            out.append(Planned(kind, "POST", "/v1/evaluations", dumps({"profiles": [profile(rng)]})))
        elif kind == "recommendations":
            out.append(Planned(kind, "POST", "/v1/recommendations", dumps(profile(rng))))
        else:
            out.append(Planned(kind, "GET", None))
    return out


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    transport: int = 0


class Run:
    def __init__(self, port: int, key: str, planned: list[Planned], stored: list[str]) -> None:
        self.port = port
        self.key = key
        self.planned = planned
        self.next = 0
        self.stored = stored
        self.rng = random.Random(SEED + 1)
        self.stats: dict[str, Stats] = {k: Stats() for k, _ in MIX}

    def _bytes(self, item: Planned) -> bytes:
        path = item.path or self.rng.choice(self.stored)
        lines = [
            f"{item.method} {path} HTTP/1.1",
            f"Host: {HOST}:{self.port}",
            f"X-API-Key: {self.key}",
        ]
        if item.method == "POST":
            lines += ["Content-Type: application/json", f"Content-Length: {len(item.body)}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + item.body

    async def _read(self, reader: asyncio.StreamReader) -> tuple[int, str | None]:
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, _, rest = head.partition(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        length, location = 0, None
        for line in rest.split(b"\r\n"):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"location":
                location = value.strip().decode()
        if length:
            await reader.readexactly(length)
        return status, location

    async def worker(self) -> None:
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        while self.next < len(self.planned):
            item = self.planned[self.next]
            self.next += 1
            stats = self.stats[item.kind]
            try:
                if reader is None or writer is None:
                    reader, writer = await asyncio.open_connection(HOST, self.port)
                data = self._bytes(item)
                start = time.perf_counter()
                writer.write(data)
                status, location = await asyncio.wait_for(self._read(reader), timeout=30)
                stats.latencies.append(time.perf_counter() - start)
                stats.codes[str(status)] = stats.codes.get(str(status), 0) + 1
                if not (200 <= status < 300 or status == 304):
                    stats.errors += 1
                if status == 201 and location:
                    self.stored.append(location)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                stats.errors += 1
                stats.transport += 1
                if writer is not None:
                    writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    async def go(self) -> float:
        start = time.perf_counter()
        await asyncio.gather(*(self.worker() for _ in range(CONNECTIONS)))
        return time.perf_counter() - start


def pct(sorted_s: list[float], q: float) -> float:
    if not sorted_s:
        return float("nan")
    return sorted_s[min(len(sorted_s) - 1, int(q / 100 * len(sorted_s)))] * 1000


def row(label: str, s: Stats, seconds: float) -> str:
    lat = sorted(s.latencies)
    n = len(lat) + s.transport
    codes = ", ".join(f"{k}×{v}" for k, v in sorted(s.codes.items())) or "none"
    if s.transport:
        codes += f", transport errors×{s.transport}"
    return (
        f"| {label} | {n:,} | {s.errors} | {codes} | {n / seconds:,.0f} | {pct(lat, 50):.1f} | "
        f"{pct(lat, 90):.1f} | {pct(lat, 99):.1f} | {lat[-1] * 1000 if lat else float('nan'):.0f} |"
    )


def main() -> int:
    install_signal_handlers()
    try:
        return loadtest()
    except KeyboardInterrupt:
        print("\ninterrupted: server stopped, database dropped", file=sys.stderr)
        return 130


def loadtest() -> int:
    planned = plan(REQUESTS, SEED)
    with served("loadtest", workers=WORKERS) as srv:
        hdr = {"X-API-Key": srv.key}
        rng = random.Random(SEED + 2)
        stored: list[str] = []
        for _ in range(PRESTORED):
            status, headers, body = request(srv.port, "POST", "/v1/recommendations", dumps(profile(rng)), hdr)
            if status != 201:
                raise SystemExit(f"storing a recommendation failed: {status} {body[:300]!r}")
            stored.append(headers["location"])
        # warm both workers' code paths (a few requests of every kind; not counted)
        warm = Run(srv.port, srv.key, plan(200, SEED + 3), list(stored))
        asyncio.run(warm.go())
        before = loadavg()
        run = Run(srv.port, srv.key, planned, stored)
        try:
            import uvloop

            seconds = uvloop.run(run.go())
        except ImportError:
            seconds = asyncio.run(run.go())
        after = loadavg()
        rss = [rss_mb(pid) for pid in srv.pids]

    total = Stats()
    for s in run.stats.values():
        total.latencies += s.latencies
        total.errors += s.errors
        total.transport += s.transport
        for k, v in s.codes.items():
            total.codes[k] = total.codes.get(k, 0) + v
    print("## compute-advisor load test\n")
    print(*machine(), sep="\n")
    print(
        f"- service: uvicorn, {WORKERS} workers, uvloop + httptools, no access log, RATE_LIMIT=off, "
        f"PostgreSQL {pg_version()} on the same machine (fresh database), asyncpg "
        f"{importlib.metadata.version('asyncpg')}, an admin key"
    )
    print(
        f"- client: bench/loadtest.py (Python asyncio + uvloop, on the same machine), {CONNECTIONS} keep-alive "
        f"connections, {REQUESTS:,} requests in a seeded mix (seed {SEED}); {PRESTORED} recommendations stored "
        "and 200 mixed requests sent before, not counted"
    )
    print(f"- load average before: {before}; after: {after}")
    peaks = ", ".join(f"{r.get('VmHWM', 0):.0f} MB" for r in rss) or "unknown"
    print(f"- peak RSS (VmHWM) of each worker after the run: {peaks}\n")
    print(
        f"{total.latencies.__len__() + total.transport:,} requests in {seconds:.1f} s "
        f"({(len(total.latencies) + total.transport) / seconds:,.0f} req/s), {total.errors} errors\n"
    )
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
    print(row("**all**", total, seconds))
    return 0 if total.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
