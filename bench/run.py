"""``make bench``: throughput, latency and memory of compute-advisor against a bare Litestar app.

Starts the real service (``uvicorn --factory app.asgi:create_app``, one worker, uvloop + httptools,
``RATE_LIMIT=off``, a fresh SQLite database in a temp dir, migrated and seeded with the CLI, and an
``admin`` key made with ``compute-advisor keys create`` and sent as ``X-API-Key`` on every request) and
``bench/bare_app.py`` (same server and settings, answering a recommendation body captured from the
real service), drives both with the same load generator (``wrk`` when installed, else
``bench/loadgen.py``), times one batch evaluation, and prints Markdown tables. Evaluations, price
comparisons and stored recommendations are measured twice: with one repeated body (price comparisons
and recommendations are then answered from the worker's memo of its last 256 answers) and with
``DISTINCT`` bodies that vary ``gpus`` and ``utilization`` per request (every one computed). Every
process it starts is stopped on exit, error or Ctrl-C (``lib.run_main``); everything it writes goes to
a temp dir.

Environment: ``DURATION`` (seconds per measurement, 8), ``WARMUP`` (2), ``CONNECTIONS`` (32),
``BATCH`` (profiles in the batch, 10000), ``LOADGEN`` (``wrk`` or ``python``; default: wrk if found),
``DISTINCT`` (distinct bodies cycled through, 4000: far more than the memo's 256), ``SERVER``
(``uvicorn``, the default, or ``granian``: both apps are served by it). ``ONLY`` (comma-separated row
keys) measures some rows only, for quick before/after checks; the targets are then judged on those.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lib
import loadgen

from app.openapi.generators import PROFILE_EXAMPLE

DURATION = float(os.environ.get("DURATION") or 8)
WARMUP = float(os.environ.get("WARMUP") or 2)
CONNECTIONS = int(os.environ.get("CONNECTIONS") or 32)
BATCH = int(os.environ.get("BATCH") or 10_000)
DISTINCT = int(os.environ.get("DISTINCT") or 4000)

PROFILE: dict[str, Any] = dict(PROFILE_EXAMPLE)
# price comparisons refuse unknown fields: they take the profile's cost fields only
COMPARISON = {k: PROFILE[k] for k in ("gpus", "utilization", "horizon_years")}

# targets of the issue (docs/performance.md): share of the bare app's requests/s on the rows where every
# request is computed (the repeated-body rows are reported, not judged: the memo answers them), p99 of
# the computed endpoints, batch wall time over HTTP, Monte Carlo in process, peak memory per worker
TARGET_RATIO = {
    "price-comparisons-distinct": 0.50,
    "evaluations-distinct": 0.50,
    "recommendations-distinct": 0.20,
    "gpus-304": 0.85,
}
TARGET_P99 = ("price-comparisons-distinct", "evaluations-distinct", "recommendations-distinct")
TARGET_P99_MS = 50.0
TARGET_BATCH_S = 0.5
TARGET_MC_MS = 100.0
MC_DRAWS = 10_000
TARGET_RSS_MB = 200.0

#: what the server is given to serve bench/bare_app.py, and where that app reads the bytes it answers with
BARE_APP = ["--app-dir", str(lib.BENCH_DIR), "--factory", "bare_app:create_app"]
BARE_BODY_ENV = "BENCH_BODY_FILE"


# ----------------------------------------------------------------------------------------------- load


WRK_SCRIPT = """
-- one body per line (compact JSON has no newline); more than one: cycled through, one per request
local bodies = {}
for line in io.lines(%(body_path)s) do
  if #line > 0 then table.insert(bodies, line) end
end
wrk.method = %(method)s
if #bodies == 1 then wrk.body = bodies[1] end
%(headers)s
if #bodies > 1 then
  local i = 0
  function request()
    i = i %% #bodies + 1
    return wrk.format(nil, nil, nil, bodies[i])
  end
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) counts = {} end
function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end
function done(summary, latency, requests)
  local codes = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("counts")) do codes[tostring(k)] = (codes[tostring(k)] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(codes) do table.insert(parts, string.format('"%%s":%%d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%%d,"duration_us":%%d,"bytes":%%d,"p50_us":%%d,"p99_us":%%d,"max_us":%%d,' ..
    '"errors":{"connect":%%d,"read":%%d,"write":%%d,"status":%%d,"timeout":%%d},"codes":{%%s}}\\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout, table.concat(parts, ",")))
end
"""


@dataclass
class Load:
    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    #: several bodies, cycled through one per request (``body`` is then the first)
    bodies: list[bytes] = field(default_factory=list)

    def all_bodies(self) -> list[bytes]:
        return self.bodies or ([self.body] if self.body else [])


class Driver:
    """The load generator: wrk (1 thread) when installed and not refused with ``LOADGEN=python``,
    else ``bench/loadgen.py``; both give the same measurement dict."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        wanted = (os.environ.get("LOADGEN") or "").lower()
        self.wrk = shutil.which("wrk") if wanted in ("", "wrk") else None
        if wanted == "wrk" and not self.wrk:
            print("LOADGEN=wrk but wrk is not installed: falling back to bench/loadgen.py", file=sys.stderr)
        if self.wrk:
            proc = subprocess.run([self.wrk, "--version"], capture_output=True, text=True)
            version = (proc.stdout or proc.stderr).splitlines()[0].split(" [")[0]
            self.name = f"wrk ({version}, {self.wrk}), 1 thread"
        else:
            self.name = "bench/loadgen.py (Python asyncio, uvloop)"
        self._n = 0

    def run(self, port: int, load: Load, duration: float) -> dict[str, Any]:
        if not self.wrk:
            return loadgen.run(port, load.method, load.path, load.headers, load.all_bodies(), CONNECTIONS, duration)
        return self._run_wrk(port, load, duration)

    def _run_wrk(self, port: int, load: Load, duration: float) -> dict[str, Any]:
        assert self.wrk
        self._n += 1
        body_path = self.tmp / f"body{self._n}.bin"
        body_path.write_bytes(b"".join(b + b"\n" for b in load.all_bodies()))
        headers = dict(load.headers)
        if load.all_bodies():
            headers.setdefault("Content-Type", "application/json")
        script = self.tmp / f"load{self._n}.lua"
        script.write_text(
            WRK_SCRIPT
            % {
                "body_path": json.dumps(str(body_path)),
                "method": json.dumps(load.method),
                "headers": "\n".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()),
            }
        )
        argv = [self.wrk, "-t1", f"-c{CONNECTIONS}", f"-d{max(1, round(duration))}s", "--timeout", "10s"]
        argv += ["-s", str(script), f"http://{lib.HOST}:{port}{load.path}"]
        log = self.tmp / f"wrk{self._n}.out"
        proc = lib.spawn(argv, log, dict(os.environ))
        try:
            proc.wait(timeout=duration + 60)
        finally:
            lib.stop(proc)
        out = log.read_text(errors="replace")
        line = next((x for x in out.splitlines() if x.startswith("BENCH_RESULT ")), None)
        if proc.returncode != 0 or line is None:
            raise RuntimeError(f"wrk failed ({proc.returncode}):\n{out}")
        raw = json.loads(line.removeprefix("BENCH_RESULT "))
        seconds = raw["duration_us"] / 1e6
        return {
            "requests": raw["requests"],
            "duration_s": seconds,
            "rps": raw["requests"] / seconds if seconds else 0.0,
            "p50_ms": raw["p50_us"] / 1000,
            "p99_ms": raw["p99_us"] / 1000,
            "max_ms": raw["max_us"] / 1000,
            "errors": sum(raw["errors"].values()),
            "codes": raw["codes"],
            "bytes": raw["bytes"],
        }


# ----------------------------------------------------------------------------------------------- bodies


def varied(i: int) -> dict[str, Any]:
    """The i-th of many distinct profiles: gpus and utilization varied deterministically."""
    return {**PROFILE, "gpus": 1 + (i * 7) % 512, "utilization": round(0.05 + (i % 19) * 0.05, 2)}


def distinct_bodies(n: int, shape: Callable[[dict[str, Any]], dict[str, Any]]) -> list[bytes]:
    bodies = [lib.dumps(shape(varied(i))) for i in range(n)]
    if len(set(bodies)) != n:  # (gpus, utilization) repeats after lcm(512, 19) = 9728 profiles
        raise SystemExit(f"DISTINCT={n}: the bodies are not all distinct")
    return bodies


def batch_body(n: int) -> bytes:
    """n profiles, utilization and gpus varied deterministically; the scores of each (``detail: "scores"``)."""
    return lib.dumps({"profiles": [varied(i) for i in range(n)], "detail": "scores"})


def as_evaluation(p: dict[str, Any]) -> dict[str, Any]:
    return {"profiles": [p]}


def as_comparison(p: dict[str, Any]) -> dict[str, Any]:
    return {k: p[k] for k in COMPARISON}


def cases(auth: dict[str, str], conditional: dict[str, str]) -> list[tuple[str, str, Load]]:
    """(key, label, load on the service) per row; the bare app gets the same bodies and headers."""

    def distinct(path: str, shape: Callable[[dict[str, Any]], dict[str, Any]]) -> Load:
        bodies = distinct_bodies(DISTINCT, shape)
        return Load("POST", path, bodies[0], auth, bodies)

    return [
        (
            "recommendations",
            "POST /v1/recommendations (stored), repeated body",
            Load("POST", "/v1/recommendations", lib.dumps(PROFILE), auth),
        ),
        (
            "recommendations-distinct",
            "POST /v1/recommendations (stored), distinct bodies",
            distinct("/v1/recommendations", lambda p: p),
        ),
        (
            "evaluations",
            "POST /v1/evaluations, 1 profile, repeated body",
            Load("POST", "/v1/evaluations", lib.dumps(as_evaluation(PROFILE)), auth),
        ),
        (
            "evaluations-distinct",
            "POST /v1/evaluations, 1 profile, distinct bodies",
            distinct("/v1/evaluations", as_evaluation),
        ),
        (
            "price-comparisons",
            "POST /v1/price-comparisons, repeated body",
            Load("POST", "/v1/price-comparisons", lib.dumps(COMPARISON), auth),
        ),
        (
            "price-comparisons-distinct",
            "POST /v1/price-comparisons, distinct bodies",
            distinct("/v1/price-comparisons", as_comparison),
        ),
        ("gpus", "GET /v1/gpus", Load("GET", "/v1/gpus", headers=auth)),
        ("gpus-304", "GET /v1/gpus + If-None-Match", Load("GET", "/v1/gpus", headers=conditional)),
    ]


# ----------------------------------------------------------------------------------------------- measuring


@dataclass
class Row:
    key: str
    label: str
    real: dict[str, Any]
    bare: dict[str, Any]
    #: VmHWM and VmRSS of the service's worker right after its measurement
    rss: dict[str, float]

    @property
    def ratio(self) -> float:
        return float(self.real["rps"] / self.bare["rps"]) if self.bare["rps"] else 0.0


@dataclass
class Probe:
    """One timed batch evaluation (status 0: no answer, ``detail`` then names the error)."""

    profiles: int
    status: int
    seconds: float
    body_size: int
    detail: str


def measure(driver: Driver, real: lib.Server, bare: lib.Server, key: str, label: str, load: Load) -> Row:
    """Warm-up, then measurement, on the service, then the same on the bare app."""
    # the bare app gets the same request bodies and headers as the real endpoint
    bare_load = Load(load.method, "/bare", load.body, load.headers, load.bodies)
    print(f"… {label}", file=sys.stderr, flush=True)
    driver.run(real.port, load, WARMUP)
    r = driver.run(real.port, load, DURATION)
    rss = lib.rss_mb(real.worker_pid)
    driver.run(bare.port, bare_load, WARMUP)
    b = driver.run(bare.port, bare_load, DURATION)
    return Row(key, label, r, b, rss)


def time_batch(port: int, n: int, headers: dict[str, str]) -> Probe:
    body = batch_body(n)
    start = time.perf_counter()
    try:
        resp = lib.request(port, "POST", "/v1/evaluations", body, headers, timeout=300)
    except lib.TRANSPORT_ERRORS as exc:
        return Probe(n, 0, time.perf_counter() - start, len(body), type(exc).__name__)
    elapsed = time.perf_counter() - start
    detail = ""
    if resp.status != 200:
        with contextlib.suppress(ValueError, AttributeError):
            detail = str(json.loads(resp.body).get("detail", ""))[:120]
    else:
        detail = f"{len(json.loads(resp.body)['results'])} results, {len(resp.body) / 1e6:.1f} MB answer"
    return Probe(n, resp.status, elapsed, len(body), detail)


def measure_batch(port: int, headers: dict[str, str]) -> list[Probe]:
    """A batch of BATCH profiles; if refused, the largest accepted batch, to within 1 % of BATCH."""
    print(f"… batch of {BATCH} profiles", file=sys.stderr, flush=True)
    probes = [time_batch(port, BATCH, headers)]
    if probes[0].status != 200:
        lo, hi = 0, BATCH
        while hi - lo > max(1, BATCH // 100):
            mid = (lo + hi) // 2
            probes.append(time_batch(port, mid, headers))
            lo, hi = (mid, hi) if probes[-1].status == 200 else (lo, mid)
    return probes


# ----------------------------------------------------------------------------------------------- report


def fmt_ms(x: float) -> str:
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def print_setup(driver: Driver) -> None:
    print("## compute-advisor benchmark\n")
    print(*lib.machine(), sep="\n")
    print(
        f"- load generator: {driver.name}, {CONNECTIONS} connections, keep-alive, {WARMUP:g} s warm-up, "
        f"{DURATION:g} s measured, per endpoint"
    )
    if not shutil.which("wrk"):
        print("- wrk not found: install it with `apt-get install -y wrk` for a load generator that is not Python")
    print(
        f"- server (`SERVER={lib.server_name()}`), the same for the service and the bare app: {lib.server_settings()}"
    )
    print(
        "- service: SQLite (WAL) in a temp dir, RATE_LIMIT=off, an admin key sent as X-API-Key on every request "
        "(to the bare app too, which ignores it)\n"
    )


def print_rows(rows: list[Row]) -> None:
    print(
        "| endpoint | status codes | req/s | p50 ms | p99 ms | errors | peak RSS MB "
        "| bare req/s | bare p99 ms | ratio |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        r, b = row.real, row.bare
        print(
            f"| {row.label} | {lib.codes_text(r['codes'])} | {r['rps']:,.0f} | {fmt_ms(r['p50_ms'])} | "
            f"{fmt_ms(r['p99_ms'])} | {r['errors']} | {row.rss.get('VmHWM', 0):.0f} | {b['rps']:,.0f} | "
            f"{fmt_ms(b['p99_ms'])} | {row.ratio:.2f} |"
        )


def print_probes(probes: list[Probe]) -> None:
    print("| batch POST /v1/evaluations | body | status | wall time s | detail |")
    print("| ---: | ---: | ---: | ---: | --- |")
    for p in probes:
        print(
            f"| {p.profiles:,} profiles | {p.body_size / 1e6:.2f} MB | {p.status or 'no answer'} | "
            f"{p.seconds:.2f} | {p.detail} |"
        )


def verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**MISS**"


def print_targets(rows: list[Row], probes: list[Probe], peak_rss: float, mc: MonteCarlo) -> None:
    """The targets of the issue, each with what was measured and PASS or MISS."""
    print("\n| target | measured | verdict |")
    print("| --- | --- | --- |")
    by_key = {row.key: row for row in rows}
    for key, share in TARGET_RATIO.items():
        if key not in by_key:
            continue
        row = by_key[key]
        codes = row.real["codes"]
        ok = row.ratio >= share and row.real["errors"] == 0
        note = f" ({row.real['rps']:,.0f} vs {row.bare['rps']:,.0f} req/s)"
        if key == "gpus-304":
            got_304 = codes.get("304", 0) == row.real["requests"] and row.real["requests"] > 0
            ok = ok and got_304
            note += "" if got_304 else f" — but not all 304: the service answered {lib.codes_text(codes)}"
        print(f"| {row.label}: ≥ {share:.2f} × bare req/s | {row.ratio:.2f}{note} | {verdict(ok)} |")
    for key in TARGET_P99:
        if key not in by_key:
            continue
        row = by_key[key]
        p99 = row.real["p99_ms"]
        print(
            f"| {row.label}: p99 < {TARGET_P99_MS:g} ms at {CONNECTIONS} connections | {fmt_ms(p99)} ms "
            f"(p50 {fmt_ms(row.real['p50_ms'])} ms) | {verdict(p99 < TARGET_P99_MS)} |"
        )
    first = probes[0]
    if first.status == 200:
        print(
            f"| batch of {BATCH:,} profiles, detail scores, over HTTP < {TARGET_BATCH_S:g} s | {first.seconds:.2f} s "
            f"| {verdict(first.seconds < TARGET_BATCH_S)} |"
        )
    else:
        largest = max((p for p in probes if p.status == 200), key=lambda p: p.profiles, default=None)
        if largest:
            tail = f"; largest accepted {largest.profiles:,} profiles in {largest.seconds:.2f} s"
        else:
            tail = "; none accepted"
        print(
            f"| batch of {BATCH:,} profiles < {TARGET_BATCH_S:g} s | refused ({first.status or 'no answer'}{tail}) "
            f"| **MISS** |"
        )
    print(
        f"| Monte Carlo {MC_DRAWS:,} draws × all {mc.options} options, in process < {TARGET_MC_MS:g} ms | "
        f"{mc.warm_ms:.1f} ms per profile (median of {mc.profiles} distinct profiles, samples of the seed already "
        f"drawn); {mc.cold_ms:.1f} ms for the first request of a new seed (samples drawn) | "
        f"{verdict(mc.warm_ms < TARGET_MC_MS)} warm, {verdict(mc.cold_ms < TARGET_MC_MS)} new seed |"
    )
    print(
        f"| peak RSS per worker < {TARGET_RSS_MB:g} MB (every price book loaded) | {peak_rss:.0f} MB (VmHWM, "
        f"after every row and the batch) | {verdict(peak_rss < TARGET_RSS_MB)} |"
    )


@dataclass
class MonteCarlo:
    options: int
    profiles: int
    #: median ms per profile once the seed's samples are drawn
    warm_ms: float
    #: ms of the first call with a new seed (draws the samples, then computes)
    cold_ms: float


def time_monte_carlo() -> MonteCarlo:
    """``app.engine.insights.uncertainty`` in this process: MC_DRAWS draws over every option, the seed
    snapshot (every price book), the built-in plugins. Distinct profiles, so nothing but the samples
    (drawn once per knowledge version and seed, as in the service) is reused."""
    print("… Monte Carlo in process", file=sys.stderr, flush=True)
    import datetime as dt
    import statistics

    sys.path.insert(0, str(lib.ROOT / "tests"))
    from seed_snapshot import knowledge_from_seeds  # type: ignore[import-not-found]

    from app.engine import decision
    from app.engine import insights as ins
    from app.host.manager import create_option_host
    from app.sdk.types import Profile

    host = create_option_host()
    kb = knowledge_from_seeds()
    options = list(host.options)
    weights = decision.default_weights(kb)

    def profile(i: int) -> Profile:
        v = varied(i)
        return Profile(
            gpus=v["gpus"],
            utilization=v["utilization"],
            horizon_years=v["horizon_years"],
            as_of=dt.date(2026, 12, 1),
            team_size=v["team_size"],
            ops_team=v["ops_team"],
            data_security=v["data_security"],
            start_within_days=v["start_within_days"],
        )

    def once(i: int, seed: int) -> float:
        start = time.perf_counter()
        ins.uncertainty(host, profile(i), kb, options, weights, draws=MC_DRAWS, seed=seed)
        return (time.perf_counter() - start) * 1000

    cold = once(0, 12345)
    warm = [once(i, 12345) for i in range(1, 16)]
    return MonteCarlo(len(options), len(warm), statistics.median(warm), cold)


# ----------------------------------------------------------------------------------------------- main


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="compute-advisor-bench-"))
    try:
        return lib.run_main(lambda: bench(tmp), "stopping the servers")
    finally:  # after run_main has stopped the servers
        shutil.rmtree(tmp, ignore_errors=True)


def bench(tmp: Path) -> int:
    env = lib.service_env(f"sqlite:///{tmp / 'bench.db'}")
    # every request to either server carries the key (the bare app ignores it)
    auth = {"X-API-Key": lib.prepare_database(env, "bench")}

    driver = Driver(tmp)
    load_before = lib.loadavg()
    print_setup(driver)

    real = lib.start_server(lib.SERVICE_APP, tmp / "service.log", env, "/health/ready")
    # the bare app answers with a real recommendation, captured now
    sample = lib.request(real.port, "POST", "/v1/recommendations", lib.dumps(PROFILE), auth)
    if sample.status != 201:
        raise SystemExit(f"capturing a recommendation failed: {sample.status} {sample.body[:300]!r}")
    sample_path = tmp / "sample_recommendation.json"
    sample_path.write_bytes(sample.body)
    bare = lib.start_server(BARE_APP, tmp / "bare.log", {**env, BARE_BODY_ENV: str(sample_path)}, "/bare")

    # conditional catalog read: the ETag the service gives, if it gives one
    gpus = lib.request(real.port, "GET", "/v1/gpus", headers=auth)
    etag = gpus.headers.get("etag")
    conditional = {**auth, "If-None-Match": etag} if etag else dict(auth)
    if etag:
        etag_note = f"ETag {etag}"
    else:
        etag_note = "the service sent no ETag, so the request went without If-None-Match (no 304 possible)"

    only = {k for k in (os.environ.get("ONLY") or "").split(",") if k}
    chosen = [c for c in cases(auth, conditional) if not only or c[0] in only]
    rows = [measure(driver, real, bare, key, label, load) for key, label, load in chosen]
    probes = measure_batch(real.port, auth)
    real_rss = lib.rss_mb(real.worker_pid)
    bare_rss = lib.rss_mb(bare.worker_pid)
    monte_carlo = time_monte_carlo()

    print(
        f"Load average (1/5/15 min) before: {load_before}; after: {lib.loadavg()} — on {os.cpu_count()} CPUs; "
        "anything above ≈ 2 means other processes competed with the server and the load generator.\n"
    )
    print(
        f"Bodies: the profile {json.dumps(PROFILE)}; price comparisons get its cost fields "
        f'{json.dumps(COMPARISON)} (unknown fields are refused); evaluations get `{{"profiles": [profile]}}`. '
        "Repeated body: that one body on every request (the worker answers price comparisons and the evaluation "
        "behind a recommendation, and evaluations of up to 8 profiles, from its memo of 256 answers). "
        f"Distinct bodies: {DISTINCT:,} variants of it (gpus 1–512, utilization 0.05–0.95), cycled through one "
        "per request, so every request is computed. "
        f"Service answer sizes: recommendation {len(sample.body)} B, GET /v1/gpus {len(gpus.body)} B. "
        f"The bare app answers every request with the captured {len(sample.body)}-byte recommendation "
        f"and is sent the same body and headers. Conditional read: {etag_note}.\n"
    )
    print_rows(rows)
    print(
        f"\nPeak RSS = VmHWM of the service's worker process after that endpoint (cumulative). "
        f"After the batch: service VmHWM {real_rss.get('VmHWM', 0):.0f} MB, VmRSS {real_rss.get('VmRSS', 0):.0f} MB; "
        f"bare app VmHWM {bare_rss.get('VmHWM', 0):.0f} MB.\n"
    )
    print_probes(probes)
    print_targets(rows, probes, real_rss.get("VmHWM", 0), monte_carlo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
