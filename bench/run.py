"""``make bench``: the serving targets of compute-advisor, judged against a bare Litestar app in the same run.

Starts the real service (``uvicorn --factory app.asgi:create_app``, one worker, uvloop + httptools, no
access log) **three times**, each on its own fresh SQLite database in a temp dir (migrated and seeded with
the CLI, an ``admin`` key made with ``compute-advisor keys create`` and sent as ``X-API-Key``):

- ``memory``: rate limits **on** (the production default), counted in the worker's memory;
- ``redis``: rate limits **on**, counted in Redis (``BENCH_REDIS_URL``, default
  ``redis://127.0.0.1:6379/0``, a namespace of its own per run); skipped, with a line saying so, when
  that Redis does not answer;
- ``off``: ``RATE_LIMIT=off``, reported beside them, never judged.

With limits on, the bench key gets a budget the bench cannot spend through the documented setting:
``RATE_LIMIT=1000000000/minute`` (``BENCH_RATE_LIMIT``) — the same charges and counters as the default
``10000/minute``, only the number differs; every answer is checked for its ``RateLimit-Limit``. Beside them,
``bench/bare_app.py`` (the same server and settings, parsing the JSON body and answering bytes captured from
the service at start-up, one captured answer per row kind). Each endpoint row is measured on the bare app and
on each service in turn, with the same load generator (``wrk`` when installed, else ``bench/loadgen.py``):
requests per second, p50/p99, and **server CPU per request** (user + system time of the serving process
from ``/proc/<pid>/stat`` over the measurement window ÷ the requests answered); every answer must have the
endpoint's status (200, 201 or 304).

- **Throughput**, ``CONNECTIONS`` connections, the bare app answering the captured default recommendation:
  price comparisons, one-profile evaluations and stored recommendations (the default answer: with its
  break-even sentence and confidence) with one repeated body (answered from the worker's memo: reported, not
  judged) and with ``DISTINCT`` bodies (every one computed: judged on requests/s ÷ the bare app's), and
  ``GET /v1/gpus`` plain (reported) and with ``If-None-Match`` → 304 (judged).
- **Latency with one client**: one connection sending one request after another, distinct bodies; judged on
  the service's median latency ÷ the bare app's (p99 and its ratio shown beside), the bare app answering the
  service's own captured answer to the row's first body: a stored recommendation (the default answer), a
  ``BATCH``-profile evaluation (scores; 8 distinct batches cycled) and a 10,000-draw uncertainty run.

Then ``/health/live`` is probed every 10 ms on one connection while ``HEAVY_CONNECTIONS`` connections send
heavy requests (100,000 uncertainty draws, break-even, sensitivity, 2,000 distinct profiles), a
``BATCH``-profile evaluation is timed over HTTP ``BATCH_RUNS`` times (each with profiles of its own; judged on
the median time and the highest peak) while the worker's resident memory is sampled every 5 ms, and
``bench/model.py`` (the model's work in process) runs after the servers are stopped. Last, one PASS/MISS line
per target, for each limits-on service: issue 39's (requests/s ≥ 0.3 × bare for computed price comparisons
and one-profile evaluations, ≥ 0.1 × for stored recommendations, ≥ 0.6 × for the 304; one-client median
latency ≤ 4 × bare for a recommendation, ≤ 8 × for the batch and the uncertainty run), then issue 23's, the
earlier targets (p99 of computed comparisons, ``/health/live`` under heavy requests, the batch's wall time
and RSS). The exit status is 0 with MISS lines (a report); 1 only when the run is broken (an answer other
than the endpoint's, a transport error, a 429, a limits-on service answering without rate-limit headers,
bench/model.py failing). Every process it starts is stopped on exit, error or Ctrl-C
(``lib.run_main``); everything it writes goes to a temp dir.

Environment: ``DURATION`` (seconds per measurement, 8), ``WARMUP`` (2), ``ROUNDS`` (1: how many times a row
measures the bare app and each service in turn, the services in the other order every other round, each app's
runs added up and its latency the median of theirs), ``CONNECTIONS`` (32), ``BATCH``
(profiles in the batch, 10000), ``BATCH_RUNS`` (3), ``LOADGEN`` (``wrk`` or ``python``; default: wrk if
found), ``DISTINCT`` (distinct bodies cycled through, 4000: far more than the memo's 256), ``SERVER``
(``uvicorn``, the default, or ``granian``: every app is served by it), ``LIMITS`` (which services, default
``memory,redis,off``), ``HEAVY_CONNECTIONS`` (4), ``BENCH_RATE_LIMIT``, ``BENCH_REDIS_URL``.

Quick before/after checks: ``ONLY`` (comma-separated row keys: ``price-comparisons``,
``price-comparisons-distinct``, ``evaluations``, ``evaluations-distinct``, ``recommendations``,
``recommendations-distinct``, ``gpus``, ``gpus-304``, ``recommendation-latency``, ``batch-latency``,
``uncertainty-latency``, ``health-live``, ``batch``, ``model``) measures those rows only, and the targets
are judged on them; with ``DURATION`` and ``LIMITS``, e.g.
``ONLY=price-comparisons-distinct,gpus-304 LIMITS=memory DURATION=3 WARMUP=1 make bench``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lib
import loadgen

from app.domain.insights.schemas import MAX_DRAWS
from app.openapi.generators import PROFILE_EXAMPLE

DURATION = float(os.environ.get("DURATION") or 8)
#: rounds of a row: the bare app and each service measured in turn this many times, the services in the
#: other order every other round, their runs added up (``merged``): a machine whose speed drifts within a
#: row then weighs on the bare app and the services alike
ROUNDS = max(1, int(os.environ.get("ROUNDS") or 1))
WARMUP = float(os.environ.get("WARMUP") or 2)
CONNECTIONS = int(os.environ.get("CONNECTIONS") or 32)
BATCH = int(os.environ.get("BATCH") or 10_000)
#: how many times the batch is timed: one request's wall time moved 0.26–0.36 s between runs on one machine
BATCH_RUNS = int(os.environ.get("BATCH_RUNS") or 3)
DISTINCT = int(os.environ.get("DISTINCT") or 4000)
HEAVY_CONNECTIONS = int(os.environ.get("HEAVY_CONNECTIONS") or 4)
#: the bench key's budget with limits on: the documented setting, far above what the bench can spend
BENCH_RATE_LIMIT = os.environ.get("BENCH_RATE_LIMIT") or "1000000000/minute"
BENCH_REDIS_URL = os.environ.get("BENCH_REDIS_URL") or "redis://127.0.0.1:6379/0"
LIMITS = [m.strip() for m in (os.environ.get("LIMITS") or "memory,redis,off").split(",") if m.strip()]
ONLY = {k.strip() for k in (os.environ.get("ONLY") or "").split(",") if k.strip()}
#: the uncertainty run of the one-client latency row
UNCERTAINTY_DRAWS = 10_000
#: distinct batches the one-client batch row cycles through (batches bypass the memo: a few suffice)
LATENCY_BATCHES = 8
PROBE_INTERVAL_S = 0.010
RSS_SAMPLE_S = 0.005

PROFILE: dict[str, Any] = dict(PROFILE_EXAMPLE)
# price comparisons refuse unknown fields: they take the profile's cost fields only
COMPARISON = {k: PROFILE[k] for k in ("gpus", "utilization", "horizon_years")}

# targets of issue 39 (performance v4): share of the bare app's requests/s on the rows where every request
# is computed (the repeated-body rows are reported, not judged: the memo answers them) and on the 304 read
TARGET_RATIO = {
    "price-comparisons-distinct": 0.3,
    "evaluations-distinct": 0.3,
    "recommendations-distinct": 0.1,
    "gpus-304": 0.6,
}
# ... and the service's median latency with one client ÷ the bare app's answering the same bytes
TARGET_LATENCY = {
    "recommendation-latency": 4.0,
    "batch-latency": 8.0,
    "uncertainty-latency": 8.0,
}
ISSUE = "issue 39"
# the earlier targets, of issue 23 (docs/performance.md, "Serving targets"), still judged: p99 of computed
# comparisons, /health/live under heavy requests, batch wall time, RSS during it
EARLIER = "earlier target (issue 23)"
TARGET_P99 = {"price-comparisons-distinct": 25.0}
TARGET_LIVE_P99_MS = 25.0
TARGET_BATCH_S = 0.3
TARGET_RSS_MB = 200.0

#: what the server is given to serve bench/bare_app.py, and where that app reads the bytes it answers with
#: (one ``<name>.json`` per captured answer, answered at ``/bare/<name>``)
BARE_APP = ["--app-dir", str(lib.BENCH_DIR), "--factory", "bare_app:create_app"]
BARE_BODY_ENV = "BENCH_BODY_DIR"
#: the captured answer of the rows measured with many connections: a stored recommendation, the default answer
DEFAULT_ANSWER = "recommendation"

#: the services, in the order measured after the bare app: (key, label, judged)
MODES = {
    "memory": "limits on, memory counters",
    "redis": "limits on, Redis counters",
    "off": "limits off",
}
JUDGED_MODES = ("memory", "redis")


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
  local i = %(start)d
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
    #: where the next run starts in ``bodies``: after what the last run sent, so that a measurement does
    #: not begin with the bodies its warm-up just had answered (and the memo still holds)
    start: int = 0

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

    def run(self, port: int, load: Load, duration: float, connections: int = CONNECTIONS) -> dict[str, Any]:
        if self.wrk:
            out = self._run_wrk(port, load, duration, connections)
        else:
            bodies = load.all_bodies()
            out = loadgen.run(port, load.method, load.path, load.headers, bodies, connections, duration, load.start)
        # the requests answered and those still in flight when the run stopped
        load.start = (load.start + out["requests"] + connections) % max(1, len(load.all_bodies()))
        return out

    def _run_wrk(self, port: int, load: Load, duration: float, connections: int) -> dict[str, Any]:
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
                "start": load.start,
                "headers": "\n".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()),
            }
        )
        argv = [self.wrk, "-t1", f"-c{connections}", f"-d{max(1, round(duration))}s", "--timeout", "10s"]
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


def batch_body(n: int, run: int = 0) -> bytes:
    """n profiles, utilization and gpus varied deterministically (from the ``run``-th n on); the scores of
    each (``detail: "scores"``)."""
    return lib.dumps({"profiles": [varied(run * n + i) for i in range(n)], "detail": "scores"})


def as_evaluation(p: dict[str, Any]) -> dict[str, Any]:
    return {"profiles": [p]}


def as_comparison(p: dict[str, Any]) -> dict[str, Any]:
    return {k: p[k] for k in COMPARISON}


def as_latency_recommendation(p: dict[str, Any]) -> dict[str, Any]:
    """A profile of the one-client recommendation row: one more person in the team than the many-connection
    row's, so that neither row is answered from the memo entries the other left."""
    return {**p, "team_size": PROFILE["team_size"] + 1}


def as_uncertainty(p: dict[str, Any]) -> dict[str, Any]:
    return {**p, "draws": UNCERTAINTY_DRAWS}


#: how each row with distinct bodies shapes its DISTINCT profiles
SHAPES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "price-comparisons-distinct": as_comparison,
    "evaluations-distinct": as_evaluation,
    "recommendations-distinct": lambda p: p,
    "recommendation-latency": as_latency_recommendation,
    "uncertainty-latency": as_uncertainty,
}


@functools.cache
def row_bodies(key: str) -> list[bytes]:
    """The distinct bodies of one row, built once: every service and the bare app are sent the same."""
    if key == "batch-latency":  # BATCH profiles each, none shared with the batch row's (BATCH_RUNS batches)
        return [batch_body(BATCH, BATCH_RUNS + k) for k in range(LATENCY_BATCHES)]
    return distinct_bodies(DISTINCT, SHAPES[key])


def heavy_bodies() -> list[tuple[str, bytes]]:
    """The heavy requests of the liveness row, each path with a few distinct bodies (no memo answers)."""
    out: list[tuple[str, bytes]] = []
    for i in range(8):
        p = varied(1000 + i)
        out.append(("/v1/uncertainty", lib.dumps({**p, "draws": MAX_DRAWS})))
        out.append(("/v1/break-even", lib.dumps(p)))
        out.append(("/v1/sensitivity", lib.dumps(p)))
        out.append(("/v1/evaluations", lib.dumps({"profiles": [varied(2000 * i + k) for k in range(2000)]})))
    return out


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    #: judged (every request computed, or the 304 read) or only reported (memoised, or the plain read)
    judged: bool
    #: the status every answer of the service must have
    status: int
    load: Load
    #: connections sending at once: CONNECTIONS, or one client sending one request after another
    clients: int = CONNECTIONS
    #: the captured answer the bare app replies with (``/bare/<answer>``)
    answer: str = DEFAULT_ANSWER


def cases(auth: dict[str, str], conditional: dict[str, str]) -> list[Case]:
    """The endpoint rows for one service's key and ETag; the bare app gets the same bodies and headers."""
    return throughput_cases(auth, conditional) + latency_cases(auth)


def throughput_cases(auth: dict[str, str], conditional: dict[str, str]) -> list[Case]:
    """The rows measured with CONNECTIONS connections: requests/s beside the bare app's."""

    def distinct(path: str, key: str) -> Load:
        bodies = row_bodies(key)
        return Load("POST", path, bodies[0], auth, bodies)

    rec, ev, pc = "/v1/recommendations", "/v1/evaluations", "/v1/price-comparisons"
    return [
        Case(
            "price-comparisons-distinct",
            "POST /v1/price-comparisons, distinct bodies",
            True,
            200,
            distinct(pc, "price-comparisons-distinct"),
        ),
        Case(
            "evaluations-distinct",
            "POST /v1/evaluations, 1 profile, distinct bodies",
            True,
            200,
            distinct(ev, "evaluations-distinct"),
        ),
        Case(
            "recommendations-distinct",
            "POST /v1/recommendations (stored, break-even + confidence), distinct bodies",
            True,
            201,
            distinct(rec, "recommendations-distinct"),
        ),
        Case("gpus-304", "GET /v1/gpus + If-None-Match → 304", True, 304, Load("GET", "/v1/gpus", headers=conditional)),
        Case(
            "price-comparisons",
            "POST /v1/price-comparisons, repeated body",
            False,
            200,
            Load("POST", pc, lib.dumps(COMPARISON), auth),
        ),
        Case(
            "evaluations",
            "POST /v1/evaluations, 1 profile, repeated body",
            False,
            200,
            Load("POST", ev, lib.dumps(as_evaluation(PROFILE)), auth),
        ),
        Case(
            "recommendations",
            "POST /v1/recommendations (stored), repeated body",
            False,
            201,
            Load("POST", rec, lib.dumps(PROFILE), auth),
        ),
        Case("gpus", "GET /v1/gpus → 200", False, 200, Load("GET", "/v1/gpus", headers=auth)),
    ]


def latency_cases(auth: dict[str, str]) -> list[Case]:
    """The rows measured with one client, one request after another, distinct bodies: the latency of one
    request beside the bare app's answering the service's own captured answer to the row's first body."""

    def one_client(key: str, label: str, path: str, status: int) -> Case:
        bodies = row_bodies(key)
        return Case(key, label, True, status, Load("POST", path, bodies[0], auth, bodies), clients=1, answer=key)

    return [
        one_client(
            "recommendation-latency",
            "POST /v1/recommendations (stored, the default answer), one client, distinct bodies",
            "/v1/recommendations",
            201,
        ),
        one_client(
            "batch-latency",
            f"POST /v1/evaluations, {BATCH:,} profiles (scores), one client, {LATENCY_BATCHES} distinct batches",
            "/v1/evaluations",
            200,
        ),
        one_client(
            "uncertainty-latency",
            f"POST /v1/uncertainty, {UNCERTAINTY_DRAWS:,} draws, one client, distinct bodies",
            "/v1/uncertainty",
            200,
        ),
    ]


ROW_KEYS = [c.key for c in cases({}, {})] + ["batch", "health-live", "model"]


def wanted(key: str) -> bool:
    return not ONLY or key in ONLY


# ----------------------------------------------------------------------------------------------- the apps


@dataclass
class App:
    """One server of the run: the bare app or one of the services (``MODES``)."""

    key: str
    label: str
    server: lib.Server
    auth: dict[str, str] = field(default_factory=dict)
    conditional: dict[str, str] = field(default_factory=dict)
    #: how the service was checked at start (rate-limit headers, Redis), for the report
    note: str = ""
    #: Redis namespace of its counters (the ``redis`` service)
    namespace: str = ""

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def pid(self) -> int:
        return self.server.worker_pid


def limits_env(mode: str, namespace: str) -> dict[str, str]:
    if mode == "off":
        return {"RATE_LIMIT": "off"}
    extra = {"RATE_LIMIT": BENCH_RATE_LIMIT}
    if mode == "redis":
        extra |= {"REDIS_URL": BENCH_REDIS_URL, "RATE_LIMIT_NAMESPACE": namespace}
    return extra


def start_service(tmp: Path, mode: str, problems: list[str]) -> App:
    """A service on its own database, with its key; checked: rate-limit headers as its mode says."""
    namespace = f"compute-advisor-bench:{uuid.uuid4().hex[:12]}"
    extra = limits_env(mode, namespace)
    # lib.service_env drops REDIS_URL (no shared Redis by default): the redis service's is put back after it
    env = {**lib.service_env(f"sqlite:///{tmp / f'bench-{mode}.db'}"), **extra}
    auth = {"X-API-Key": lib.prepare_database(env, f"bench-{mode}")}
    server = lib.start_server(lib.SERVICE_APP, tmp / f"service-{mode}.log", env, "/health/ready")
    app = App(mode, MODES[mode], server, auth, namespace=namespace if mode == "redis" else "")
    gpus = lib.request(app.port, "GET", "/v1/gpus", headers=auth)
    etag = gpus.headers.get("etag")
    app.conditional = {**auth, "If-None-Match": etag} if etag else dict(auth)
    if not etag:
        problems.append(f"{app.label}: GET /v1/gpus sent no ETag (no 304 possible)")
    limit = gpus.headers.get("ratelimit-limit")
    if mode == "off":
        app.note = "no RateLimit-* headers" if limit is None else f"RateLimit-Limit {limit} (expected none)"
        if limit is not None:
            problems.append(f"{app.label}: answers carry RateLimit-Limit {limit}")
    else:
        budget = BENCH_RATE_LIMIT.split("/")[0]
        app.note = f"RateLimit-Policy {gpus.headers.get('ratelimit-policy')}"
        if limit != budget:
            problems.append(f"{app.label}: RateLimit-Limit {limit!r}, expected {budget} (limits not on?)")
    if mode == "redis":
        app.note += f"; Redis {BENCH_REDIS_URL}, namespace {namespace}: {redis_state(app)}"
    return app


def redis_state(app: App) -> str:
    """The service's Redis as ``/health/ready`` reports it and how many counters it holds there."""
    ready = lib.request(app.port, "GET", "/health/ready", headers=app.auth)
    with contextlib.suppress(ValueError, AttributeError):
        state = json.loads(ready.body)["checks"]["dependencies"]["redis"]["state"]
        return f"{state}, {lib.redis_keys(BENCH_REDIS_URL, app.namespace + ':*')} counters"
    return f"readiness {ready.status}, no Redis state in it"


# ----------------------------------------------------------------------------------------------- measuring


def timed_load(driver: Driver, app: App, load: Load, clients: int) -> dict[str, Any]:
    """Warm-up, then the measurement with the serving process's CPU time read around it."""
    driver.run(app.port, load, WARMUP, clients)
    cpu = lib.cpu_seconds(app.pid)
    out = driver.run(app.port, load, DURATION, clients)
    out["cpu_s"] = lib.cpu_seconds(app.pid) - cpu
    out["cpu_us"] = out["cpu_s"] / out["requests"] * 1e6 if out["requests"] else math.nan
    return out


@dataclass
class Row:
    case: Case
    bare: dict[str, Any]
    #: service key (``MODES``) → its measurement
    modes: dict[str, dict[str, Any]]
    #: 1-minute load average when the row ended
    load: str

    def ratio(self, mode: str) -> float:
        return float(self.modes[mode]["rps"] / self.bare["rps"]) if self.bare["rps"] else 0.0

    def latency_ratio(self, mode: str, stat: str) -> float:
        """The service's latency ÷ the bare app's, ``stat`` ``p50_ms`` or ``p99_ms``: 1.0 is as quick."""
        bare = self.bare[stat]
        return float(self.modes[mode][stat] / bare) if bare else math.nan

    def cpu_ratio(self, mode: str) -> float:
        """Bare app's CPU per request ÷ the service's: 1.0 is as cheap as the bare app."""
        cpu = self.modes[mode]["cpu_us"]
        return float(self.bare["cpu_us"] / cpu) if cpu else 0.0


def measure(driver: Driver, bare: App, services: list[App], case_key: str, problems: list[str]) -> Row:
    """One endpoint row: the bare app, then each service, each with its own key and the same bodies;
    ``ROUNDS`` times, the services in the other order every other round, each app's runs merged."""
    by_app = {app.key: next(c for c in cases(app.auth, app.conditional) if c.key == case_key) for app in services}
    case = by_app[services[0].key]
    print(f"… {case.label}", file=sys.stderr, flush=True)
    bare_load = Load(case.load.method, f"/bare/{case.answer}", case.load.body, case.load.headers, case.load.bodies)
    bare_runs: list[dict[str, Any]] = []
    runs: dict[str, list[dict[str, Any]]] = {app.key: [] for app in services}
    for n in range(ROUNDS):
        b = timed_load(driver, bare, bare_load, case.clients)
        check(problems, f"bare app, {case.label}", b, 200)
        bare_runs.append(b)
        for app in services if n % 2 == 0 else services[::-1]:
            run = timed_load(driver, app, by_app[app.key].load, case.clients)
            check(problems, f"{app.label}, {case.label}", run, case.status)
            if app.key == "redis":
                run["redis"] = redis_state(app)
            runs[app.key].append(run)
    modes = {app.key: merged(runs[app.key]) for app in services}
    return Row(case, merged(bare_runs), modes, lib.loadavg().split()[0])


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """An app's runs of one row as one measurement: requests, time, CPU, errors, answers and bytes added up
    (requests/s and CPU per request over all of them), latency the median of the runs' p50 and of their p99,
    the longest answer the longest of all."""
    if len(runs) == 1:
        return runs[0]
    requests = sum(r["requests"] for r in runs)
    seconds = sum(r["duration_s"] for r in runs)
    cpu = sum(r["cpu_s"] for r in runs)
    codes: dict[str, int] = {}
    for r in runs:
        for code, count in r["codes"].items():
            codes[code] = codes.get(code, 0) + count
    return {
        **runs[-1],  # what a run says of the app beside its figures (its Redis counters): the last one's
        "requests": requests,
        "duration_s": seconds,
        "rps": requests / seconds if seconds else 0.0,
        "p50_ms": statistics.median(r["p50_ms"] for r in runs),
        "p99_ms": statistics.median(r["p99_ms"] for r in runs),
        "max_ms": max(r["max_ms"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "codes": codes,
        "bytes": sum(r["bytes"] for r in runs),
        "cpu_s": cpu,
        "cpu_us": cpu / requests * 1e6 if requests else math.nan,
    }


def check(problems: list[str], what: str, result: dict[str, Any], status: int) -> None:
    """A measurement is broken when any answer is not the endpoint's status or a request failed."""
    other = {k: v for k, v in result["codes"].items() if k != str(status)}
    if other or result["errors"] or not result["requests"]:
        problems.append(
            f"{what}: {lib.codes_text(result['codes'])}, {result['errors']} errors (every answer should be {status})"
        )


@dataclass
class Liveness:
    probes: list[float]
    heavy: dict[str, dict[str, int]]
    heavy_latencies: list[float]
    seconds: float

    def pct(self, q: float) -> float:
        ok = sorted(x for x in self.probes if not math.isnan(x))
        return loadgen.percentile_ms(ok, q)

    @property
    def failed(self) -> int:
        return sum(1 for x in self.probes if math.isnan(x))


def measure_liveness(app: App) -> Liveness:
    """``/health/live`` every 10 ms on one connection while HEAVY_CONNECTIONS send heavy requests for
    DURATION seconds; probes from 0.5 s after the first heavy request until the last one answers."""
    print(f"… {app.label}: /health/live under heavy requests", file=sys.stderr, flush=True)
    heavy = [(path, lib.request_bytes("POST", path, app.port, app.auth, body)) for path, body in heavy_bodies()]
    codes: dict[str, dict[str, int]] = {}
    latencies: list[float] = []
    deadline = time.perf_counter() + DURATION
    done = threading.Event()

    def drive() -> None:
        def sender(first: int) -> Callable[[], tuple[str, bytes] | None]:
            i = first

            def next_request() -> tuple[str, bytes] | None:
                nonlocal i
                if time.perf_counter() >= deadline:
                    return None
                path, data = heavy[i % len(heavy)]
                i += 1
                return path, data

            return next_request

        def record(path: str, latency: float, response: lib.Response | None) -> None:
            status = str(response.status) if response is not None else "no answer"
            per = codes.setdefault(path, {})
            per[status] = per.get(status, 0) + 1
            latencies.append(latency)

        async def go() -> None:
            conns = [loadgen.connection(app.port, sender(k * 5), record, 300) for k in range(HEAVY_CONNECTIONS)]
            await asyncio.gather(*conns)

        try:
            loadgen.run_loop(go())
        finally:
            done.set()

    started = time.perf_counter()
    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    time.sleep(0.5)
    probes = loadgen.probe(
        app.port, lib.request_bytes("GET", "/health/live", app.port), PROBE_INTERVAL_S, lambda: not done.is_set()
    )
    thread.join()
    return Liveness(probes, codes, sorted(latencies), time.perf_counter() - started)


@dataclass
class Probe:
    """One timed batch evaluation (status 0: no answer, ``detail`` then names the error)."""

    profiles: int
    status: int
    seconds: float
    body_size: int
    detail: str
    #: highest VmRSS of the worker sampled every 5 ms while the request ran, MiB
    rss_mb: float = 0.0
    #: the worker's VmRSS just before the request, MiB
    rss_before_mb: float = 0.0


def time_batch(app: App, n: int, run: int = 0) -> Probe:
    body = batch_body(n, run)
    before = peak = lib.rss_mb(app.pid).get("VmRSS", 0.0)
    running = threading.Event()
    running.set()

    def sample() -> None:
        nonlocal peak
        while running.is_set():
            peak = max(peak, lib.rss_mb(app.pid).get("VmRSS", 0.0))
            time.sleep(RSS_SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        resp = lib.request(app.port, "POST", "/v1/evaluations", body, app.auth, timeout=300)
    except lib.TRANSPORT_ERRORS as exc:
        return Probe(n, 0, time.perf_counter() - start, len(body), type(exc).__name__, peak, before)
    finally:
        elapsed = time.perf_counter() - start
        running.clear()
        sampler.join()
    detail = ""
    if resp.status != 200:
        with contextlib.suppress(ValueError, AttributeError):
            detail = str(json.loads(resp.body).get("detail", ""))[:120]
    else:
        detail = f"{len(json.loads(resp.body)['results'])} results, {len(resp.body) / 1e6:.1f} MB answer"
    return Probe(n, resp.status, elapsed, len(body), detail, peak, before)


def measure_batch(app: App) -> list[Probe]:
    """A batch of BATCH profiles, BATCH_RUNS times; if refused, the largest accepted batch, to within 1 % of
    BATCH."""
    print(f"… {app.label}: batch of {BATCH} profiles, {BATCH_RUNS} times", file=sys.stderr, flush=True)
    probes = [time_batch(app, BATCH)]
    if probes[0].status == 200:
        probes += [time_batch(app, BATCH, run) for run in range(1, BATCH_RUNS)]
    if probes[0].status != 200:
        lo, hi = 0, BATCH
        while hi - lo > max(1, BATCH // 100):
            mid = (lo + hi) // 2
            probes.append(time_batch(app, mid))
            lo, hi = (mid, hi) if probes[-1].status == 200 else (lo, mid)
    return probes


def run_model() -> tuple[int, str]:
    """bench/model.py in its own process (after the servers are stopped): its exit status and report."""
    print("… model work in process (bench/model.py)", file=sys.stderr, flush=True)
    proc = subprocess.run(
        [sys.executable, str(lib.BENCH_DIR / "model.py")],
        cwd=lib.ROOT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
    )
    return proc.returncode, proc.stdout + (proc.stderr if proc.returncode not in (0, 1) else "")


# ----------------------------------------------------------------------------------------------- report


def fmt_ms(x: float) -> str:
    if math.isnan(x):
        return "–"
    return f"{x:.1f}" if x < 100 else f"{x:,.0f}"


def fmt_us(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:,.0f}"


def verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**MISS**"


def print_setup(driver: Driver, apps: list[App], redis_skip: str | None, load_before: str) -> None:
    print("## compute-advisor serving benchmark\n")
    print(*lib.machine(), sep="\n")
    print(f"- load average (1/5/15 min) at the start: {load_before}, on {os.cpu_count()} CPUs")
    rounds = f", {ROUNDS} rounds a row (`ROUNDS`: each app's runs added up, latency the median of theirs)"
    print(
        f"- load generator: {driver.name}, {CONNECTIONS} connections, keep-alive, {WARMUP:g} s warm-up, "
        f"{DURATION:g} s measured, per endpoint and app{rounds if ROUNDS > 1 else ''}"
    )
    if not shutil.which("wrk"):
        print("- wrk not found: install it with `apt-get install -y wrk` for a load generator that is not Python")
    print(f"- server (`SERVER={lib.server_name()}`), the same for every app: {lib.server_settings()}")
    print(
        "- services: SQLite (WAL) in a temp dir, one database and admin key each (sent as X-API-Key, to the bare "
        f"app too, which ignores it); limits on = `RATE_LIMIT={BENCH_RATE_LIMIT}`:"
    )
    for app in apps:
        print(f"  - {app.label}: {app.note}")
    if redis_skip:
        print(f"  - **limits on, Redis counters: skipped** — no Redis at {BENCH_REDIS_URL} ({redis_skip})")
    print(
        "- server CPU per request: user + system time of the serving process (/proc/<pid>/stat) over the "
        "measured window ÷ requests answered; ×bare CPU = the bare app's CPU per request ÷ the app's\n"
    )


def print_rows(rows: list[Row], judged: bool) -> None:
    """The rows measured with CONNECTIONS connections, judged or only reported."""
    rows = [row for row in rows if row.case.judged == judged and row.case.clients > 1]
    if not rows:
        print("(none measured: see ONLY)")
        return
    print("| endpoint | app | status codes | req/s | p50 ms | p99 ms | CPU µs/req | × bare req/s | × bare CPU | load |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        b = row.bare
        print(
            f"| {row.case.label} | bare app | {lib.codes_text(b['codes'])} | {b['rps']:,.0f} | {fmt_ms(b['p50_ms'])} "
            f"| {fmt_ms(b['p99_ms'])} | {fmt_us(b['cpu_us'])} | 1 | 1 | {row.load} |"
        )
        for mode, r in row.modes.items():
            print(
                f"| | {MODES[mode]} | {lib.codes_text(r['codes'])} | {r['rps']:,.0f} | {fmt_ms(r['p50_ms'])} "
                f"| {fmt_ms(r['p99_ms'])} | {fmt_us(r['cpu_us'])} | {row.ratio(mode):.2f} "
                f"| {row.cpu_ratio(mode):.2f} | |"
            )


def print_latency(rows: list[Row]) -> None:
    """The rows measured with one client: each app's median and p99 latency, and the service's ÷ the bare app's."""
    print(
        "| endpoint | app | status codes | requests | p50 ms | p99 ms | CPU µs/req | × bare p50 | × bare p99 | load |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        b = row.bare
        print(
            f"| {row.case.label} | bare app | {lib.codes_text(b['codes'])} | {b['requests']:,} | {fmt_ms(b['p50_ms'])} "
            f"| {fmt_ms(b['p99_ms'])} | {fmt_us(b['cpu_us'])} | 1 | 1 | {row.load} |"
        )
        for mode, r in row.modes.items():
            print(
                f"| | {MODES[mode]} | {lib.codes_text(r['codes'])} | {r['requests']:,} | {fmt_ms(r['p50_ms'])} "
                f"| {fmt_ms(r['p99_ms'])} | {fmt_us(r['cpu_us'])} | {row.latency_ratio(mode, 'p50_ms'):.2f} "
                f"| {row.latency_ratio(mode, 'p99_ms'):.2f} | |"
            )


def print_liveness(live: dict[str, Liveness]) -> None:
    print(
        f"| app | /health/live probes | p50 ms | p99 ms | max ms | failed | heavy requests ({HEAVY_CONNECTIONS} "
        "connections) | heavy p50 / max s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for mode, lv in live.items():
        heavy = "; ".join(f"{path.removeprefix('/v1/')} {lib.codes_text(c)}" for path, c in sorted(lv.heavy.items()))
        hl = lv.heavy_latencies
        print(
            f"| {MODES[mode]} | {len(lv.probes)} | {fmt_ms(lv.pct(50))} | {fmt_ms(lv.pct(99))} | {fmt_ms(lv.pct(100))} "
            f"| {lv.failed} | {heavy} | {hl[len(hl) // 2] if hl else math.nan:.1f} / {hl[-1] if hl else math.nan:.1f} |"
        )


def full_batches(probes: list[Probe]) -> list[Probe]:
    """The runs of the whole batch that were answered."""
    return [p for p in probes if p.status == 200 and p.profiles == BATCH]


def print_batches(batches: dict[str, list[Probe]]) -> None:
    print(
        "| app | batch POST /v1/evaluations | body | status | wall time s | worker RSS before MB "
        "| worker RSS during, peak MB | detail |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for mode, probes in batches.items():
        for p in probes:
            print(
                f"| {MODES[mode]} | {p.profiles:,} profiles | {p.body_size / 1e6:.2f} MB | {p.status or 'no answer'} | "
                f"{p.seconds:.2f} | {p.rss_before_mb:.0f} | {p.rss_mb:.0f} | {p.detail} |"
            )


#: a target's cell for one service: the measured text and whether it is met, or None when not measured there
Cell = Callable[[str], tuple[str, bool] | None]


def target_lines(rows: list[Row], live: dict[str, Liveness], batches: dict[str, list[Probe]]) -> list[tuple[str, Cell]]:
    """(target, cell) per target measured in this run: issue 39's, then the earlier ones of issue 23."""
    by_key = {row.case.key: row for row in rows}
    return share_lines(by_key) + latency_lines(by_key) + earlier_lines(by_key, live, batches)


def share_lines(by_key: dict[str, Row]) -> list[tuple[str, Cell]]:
    """The service's requests/s as a share of the bare app's, with CONNECTIONS connections."""
    lines: list[tuple[str, Cell]] = []
    for key, share in TARGET_RATIO.items():
        if key in by_key:
            row = by_key[key]

            def ratio_cell(mode: str, row: Row = row, share: float = share) -> tuple[str, bool] | None:
                if mode not in row.modes:
                    return None
                r = row.modes[mode]
                text = (
                    f"{row.ratio(mode):.2f} ({r['rps']:,.0f} vs {row.bare['rps']:,.0f} req/s; CPU "
                    f"{r['cpu_us']:,.0f} vs {row.bare['cpu_us']:,.0f} µs: {row.cpu_ratio(mode):.2f})"
                )
                return text, row.ratio(mode) >= share

            lines.append((f"{row.case.label}: ≥ {share:g} × bare req/s", ratio_cell))
    return lines


def latency_lines(by_key: dict[str, Row]) -> list[tuple[str, Cell]]:
    """The service's latency with one client ÷ the bare app's: judged on the median, the p99's shown beside."""
    lines: list[tuple[str, Cell]] = []
    for key, limit in TARGET_LATENCY.items():
        if key in by_key:
            row = by_key[key]

            def latency_cell(mode: str, row: Row = row, limit: float = limit) -> tuple[str, bool] | None:
                if mode not in row.modes:
                    return None
                r, b = row.modes[mode], row.bare
                p50, p99 = row.latency_ratio(mode, "p50_ms"), row.latency_ratio(mode, "p99_ms")
                text = (
                    f"{p50:.2f} (p50 {fmt_ms(r['p50_ms'])} vs {fmt_ms(b['p50_ms'])} ms; p99 {fmt_ms(r['p99_ms'])} "
                    f"vs {fmt_ms(b['p99_ms'])} ms: {p99:.2f}; {r['requests']:,} vs {b['requests']:,} requests)"
                )
                return text, p50 <= limit

            lines.append((f"{row.case.label}: median latency ≤ {limit:g} × bare", latency_cell))
    return lines


def earlier_lines(
    by_key: dict[str, Row], live: dict[str, Liveness], batches: dict[str, list[Probe]]
) -> list[tuple[str, Cell]]:
    """Issue 23's targets, still judged: p99 of computed comparisons, /health/live under heavy requests,
    the batch's wall time and the worker's RSS during it."""
    lines: list[tuple[str, Cell]] = []
    for key, limit in TARGET_P99.items():
        if key in by_key:
            row = by_key[key]

            def p99_cell(mode: str, row: Row = row, limit: float = limit) -> tuple[str, bool] | None:
                if mode not in row.modes:
                    return None
                r = row.modes[mode]
                return f"{fmt_ms(r['p99_ms'])} ms (p50 {fmt_ms(r['p50_ms'])})", r["p99_ms"] < limit

            lines.append((f"{EARLIER}: {row.case.label}: p99 < {limit:g} ms at {CONNECTIONS} connections", p99_cell))
    if live:

        def live_cell(mode: str) -> tuple[str, bool] | None:
            if mode not in live:
                return None
            lv = live[mode]
            return f"{fmt_ms(lv.pct(99))} ms ({len(lv.probes)} probes)", lv.pct(
                99
            ) < TARGET_LIVE_P99_MS and not lv.failed

        lines.append((f"{EARLIER}: /health/live p99 < {TARGET_LIVE_P99_MS:g} ms while heavy requests run", live_cell))
    if batches:

        def batch_cell(mode: str) -> tuple[str, bool] | None:
            if mode not in batches:
                return None
            first = batches[mode][0]
            if first.status == 200:
                times = sorted(p.seconds for p in full_batches(batches[mode]))
                median = statistics.median(times)
                runs = ", ".join(f"{t:.2f}" for t in times)
                return f"{median:.2f} s (median of {runs})", median < TARGET_BATCH_S
            ok = [p for p in batches[mode] if p.status == 200]
            largest = max(ok, key=lambda p: p.profiles, default=None)
            tail = f"; largest accepted {largest.profiles:,} in {largest.seconds:.2f} s" if largest else ""
            return f"refused ({first.status or 'no answer'}{tail})", False

        def rss_cell(mode: str) -> tuple[str, bool] | None:
            if mode not in batches:
                return None
            first = batches[mode][0]
            peak = max(p.rss_mb for p in batches[mode])
            return f"{peak:.0f} MB (highest of {len(batches[mode])})", peak < TARGET_RSS_MB and first.status == 200

        lines.append(
            (f"{EARLIER}: batch of {BATCH:,} profiles, detail scores, over HTTP < {TARGET_BATCH_S:g} s", batch_cell)
        )
        lines.append((f"{EARLIER}: worker RSS during the batch < {TARGET_RSS_MB:g} MB", rss_cell))
    return lines


def print_targets(modes: list[str], lines: list[tuple[str, Cell]]) -> tuple[int, int]:
    """The targets, one line each, judged for each limits-on service; limits off shown, not judged."""
    if not lines or not modes:
        print("(no serving row measured: see ONLY and LIMITS)")
        return 0, 0
    judged = [m for m in JUDGED_MODES if m in modes]
    shown = judged + [m for m in modes if m not in judged]
    print("| target | " + " | ".join(MODES[m] + ("" if m in judged else " (not judged)") for m in shown) + " |")
    print("| --- |" + " --- |" * len(shown))
    passed = missed = 0
    for target, cell in lines:
        cells = []
        for m in shown:
            got = cell(m)
            if got is None:
                cells.append("–")
                continue
            text, ok = got
            if m in judged:
                passed, missed = passed + ok, missed + (not ok)
                cells.append(f"{text} {verdict(ok)}")
            else:
                cells.append(text)
        print(f"| {target} | " + " | ".join(cells) + " |")
    return passed, missed


# ----------------------------------------------------------------------------------------------- main


def main() -> int:
    unknown = ONLY - set(ROW_KEYS)
    bad_modes = set(LIMITS) - set(MODES)
    if unknown or bad_modes:
        raise SystemExit(
            f"ONLY: rows are {', '.join(ROW_KEYS)}; LIMITS: {', '.join(MODES)} (got {unknown or bad_modes})"
        )
    tmp = Path(tempfile.mkdtemp(prefix="compute-advisor-bench-"))
    try:
        return lib.run_main(lambda: bench(tmp), "stopping the servers")
    finally:  # after run_main has stopped the servers
        shutil.rmtree(tmp, ignore_errors=True)


def bench(tmp: Path) -> int:
    load_before = lib.loadavg()
    driver = Driver(tmp)
    problems: list[str] = []
    modes = list(LIMITS)
    redis_skip = lib.redis_answers(BENCH_REDIS_URL) if "redis" in modes else None
    if redis_skip:
        print(f"no Redis at {BENCH_REDIS_URL} ({redis_skip}): the Redis service is skipped", file=sys.stderr)
        modes.remove("redis")
    serving = [k for k in ROW_KEYS if k != "model" and wanted(k)]
    services: list[App] = []
    bare: App | None = None
    rows: list[Row] = []
    live: dict[str, Liveness] = {}
    batches: dict[str, list[Probe]] = {}
    captured: dict[str, int] = {}
    if serving and modes:
        print(f"… starting {len(modes)} services and the bare app", file=sys.stderr, flush=True)
        services = [start_service(tmp, mode, problems) for mode in modes]
        answers = tmp / "bare"
        captured = capture_answers(services[0], answers, [k for k in serving if k in TARGET_LATENCY], problems)
        env = {**lib.service_env(f"sqlite:///{tmp / 'unused.db'}"), BARE_BODY_ENV: str(answers)}
        bare = App("bare", "bare app", lib.start_server(BARE_APP, tmp / "bare.log", env, "/bare"))
        for key in serving:
            if key == "health-live":
                live = {app.key: measure_liveness(app) for app in services}
                for mode, lv in live.items():
                    for path, codes in lv.heavy.items():
                        if set(codes) != {"200"}:
                            problems.append(f"{MODES[mode]}, heavy {path}: {lib.codes_text(codes)}")
            elif key == "batch":
                batches = {app.key: measure_batch(app) for app in services}
            else:
                rows.append(measure(driver, bare, services, key, problems))
        for app in services:
            if app.key == "redis":
                app.note += f"; after the rows: {redis_state(app)}"
        lib.stop_all()  # the model's rows get the machine to themselves
    model = run_model() if wanted("model") else None
    if model is not None and model[0] not in (0, 1):
        problems.append(f"bench/model.py failed ({model[0]})")

    print_setup(driver, services, redis_skip, load_before)
    print(
        f"Load average (1/5/15 min) at the start: {load_before}; at the end: {lib.loadavg()} — on "
        f"{os.cpu_count()} CPUs; the `load` column is the 1-minute figure after each row. Anything above ≈ 2 means "
        "other processes competed with the servers and the load generator.\n"
    )
    if rows:
        print_bodies(captured)
        print("### Judged rows: distinct bodies (every request computed) and the 304 read\n")
        print_rows(rows, judged=True)
        print("\n### Reported, not judged: repeated bodies (the memo answers them) and the plain read\n")
        print_rows(rows, judged=False)
    if any(row.case.clients == 1 for row in rows):
        print(
            "\n### Latency with one client (judged)\n\nOne connection, one request after another, distinct bodies, "
            f"{DURATION:g} s measured after {WARMUP:g} s of warm-up; median and p99 over the run, the service's ÷ the "
            "bare app's answering the service's own captured answer to the row's first body.\n"
        )
        print_latency([row for row in rows if row.case.clients == 1])
    if live:
        print(
            "\n### /health/live while heavy requests run\n\n"
            f"One connection probing every {PROBE_INTERVAL_S * 1000:g} ms while {HEAVY_CONNECTIONS} connections "
            f"send, in turn, uncertainty ({MAX_DRAWS:,} draws), break-even, sensitivity and a 2,000-profile "
            f"evaluation (distinct bodies) for {DURATION:g} s, until the last answers.\n"
        )
        print_liveness(live)
    if batches:
        print("\n### Batch over HTTP\n")
        print_batches(batches)
    if model is not None:
        print("\n" + model[1].strip())
    print(
        f"\n### Targets ({ISSUE}; issue 23's p99, liveness, batch and RSS lines kept as the earlier targets), judged "
        "on the limits-on services\n"
    )
    passed, missed = print_targets([app.key for app in services], target_lines(rows, live, batches))
    print(f"\n{passed} PASS, {missed} MISS")
    if problems:
        print("\n### Broken run\n")
        print(*(f"- {p}" for p in problems), sep="\n")
        return 1
    return 0


def capture_answers(service: App, into: Path, latency_keys: list[str], problems: list[str]) -> dict[str, int]:
    """The service's answers the bare app replies with, one ``<name>.json`` each in ``into``: the default
    recommendation (the rows with many connections) and, for each one-client row, the answer to its first
    body. Their sizes in bytes, by name."""
    into.mkdir()
    got = lib.request(service.port, "POST", "/v1/recommendations", lib.dumps(PROFILE), service.auth)
    if got.status != 201:
        raise SystemExit(f"capturing a recommendation failed: {got.status} {got.body[:300]!r}")
    missing = [k for k in ("break_even", "confidence") if not has_value(json.loads(got.body), k)]
    if missing:
        problems.append(f"the default recommendation lacks {', '.join(missing)}")
    answers = {DEFAULT_ANSWER: got.body}
    for case in (c for c in latency_cases(service.auth) if c.key in latency_keys):
        load = case.load
        got = lib.request(service.port, load.method, load.path, load.body, load.headers, timeout=300)
        if got.status != case.status:
            raise SystemExit(f"capturing {case.label} failed: {got.status} {got.body[:300]!r}")
        if (wrong := wrong_answer(case.key, json.loads(got.body))) is not None:
            problems.append(f"{case.label}: the captured answer {wrong}")
        answers[case.answer] = got.body
    for name, body in answers.items():
        (into / f"{name}.json").write_bytes(body)
    return {name: len(body) for name, body in answers.items()}


def wrong_answer(key: str, doc: Any) -> str | None:
    """Why a one-client row's captured answer is not the work the row means to time, or None."""
    if key == "batch-latency" and len(doc.get("results", ())) != BATCH:
        return f"holds {len(doc.get('results', ()))} results, not {BATCH:,}"
    if key == "uncertainty-latency" and doc.get("draws") != UNCERTAINTY_DRAWS:
        return f"says {doc.get('draws')} draws, not {UNCERTAINTY_DRAWS:,}"
    if key == "recommendation-latency" and not (has_value(doc, "break_even") and has_value(doc, "confidence")):
        return "lacks the break-even or the confidence of the default answer"
    return None


def print_bodies(captured: dict[str, int]) -> None:
    """What the rows send, and what the bare app answers."""
    sizes = "; ".join(f"{name} {size:,} bytes" for name, size in captured.items() if name != DEFAULT_ANSWER)
    print(
        f"Bodies: the profile {json.dumps(PROFILE)}; price comparisons get its cost fields "
        f'{json.dumps(COMPARISON)}; evaluations `{{"profiles": [profile]}}`. Distinct: {DISTINCT:,} variants '
        "(gpus 1–512, utilization 0.05–0.95) cycled one per request, so every request is computed. With many "
        f"connections the bare app answers every request with the captured {captured[DEFAULT_ANSWER]:,}-byte "
        "recommendation and is sent the same bodies and headers. One client: recommendations with a team of "
        f"{PROFILE['team_size'] + 1} (none of the other rows' bodies), batches of {BATCH:,} distinct profiles "
        f'(`"detail": "scores"`), uncertainty with `"draws": {UNCERTAINTY_DRAWS}`; the bare app answers each '
        f"row with the service's captured answer to its first body{': ' + sizes if sizes else ''}.\n"
    )


def has_value(doc: Any, key: str) -> bool:
    """Whether ``key`` holds a non-null value anywhere in a JSON document."""
    if isinstance(doc, dict):
        return (doc.get(key) is not None) or any(has_value(v, key) for v in doc.values())
    if isinstance(doc, list):
        return any(has_value(v, key) for v in doc)
    return False


if __name__ == "__main__":
    sys.exit(main())
