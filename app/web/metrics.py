"""Prometheus metrics: requests (kept by ``app.web.edge`` under the names of Litestar's Prometheus
integration) and the service's own figures.

``GET /metrics`` answers the Prometheus text format to a key with the scope ``metrics:read`` (or
``admin``); ``METRICS_BIND`` adds a listener of its own that serves the same metrics without a key,
for a private network. With several worker processes, prometheus-client's multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR``, an empty directory at each start) makes every scrape — whichever
worker answers it — report the sum over all workers (gauges: as each metric's ``multiprocess_mode``
says). docs/operations.md lists every metric.

This module knows nothing of the knowledge base: the composition root feeds the knowledge store's
and the writer's figures through ``KnowledgeGauges`` and the ``writer_*`` functions.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from litestar import Response, get
from litestar.plugins.prometheus import PrometheusController
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    make_wsgi_app,
    multiprocess,
)
from prometheus_client.exposition import ThreadingWSGIServer

if TYPE_CHECKING:
    from collections.abc import Iterable
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from litestar.types import HTTPScope

log = logging.getLogger(__name__)

PREFIX = "compute_advisor"
METRICS_SCOPE = "metrics:read"
#: request duration buckets, in seconds: catalog reads take about a millisecond, batches seconds
#: the request metrics' labels, in Litestar's order
LABELS = ("method", "path", "status_code", "app_name")
APP_NAME = "compute-advisor"
_IN_PROGRESS = "metrics_in_progress"  # scope["state"] key: the in-progress gauge child a request raised
DURATION_BUCKETS: list[str | float] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

# ---- the service's own metrics (created once per process; gauges say how workers combine) ----------

KNOWLEDGE_VERSION = Gauge(
    f"{PREFIX}_knowledge_version_info",
    "The knowledge version served (1; 0 for a version this worker served before)",
    ["version"],
    multiprocess_mode="livemax",
)
SNAPSHOT_AGE = Gauge(
    f"{PREFIX}_knowledge_snapshot_age_seconds",
    "Seconds since the served knowledge snapshot was last confirmed current by a database read",
    multiprocess_mode="livemax",
)
KNOWLEDGE_RELOADS = Counter(
    f"{PREFIX}_knowledge_reloads_total",
    "Knowledge snapshots loaded, by what noticed the new version (start, poll, notify)",
    ["trigger"],
)
EVALUATIONS = Counter(
    f"{PREFIX}_evaluations_total",
    "Comparisons and evaluations computed (not answered from the memo), by kind",
    ["kind"],
)
MEMO_HITS = Counter(f"{PREFIX}_memo_hits_total", "Comparisons and evaluations answered from the memo", ["kind"])
OPTION_FAILURES = Counter(
    f"{PREFIX}_option_failures_total",
    "Assessments an option's plugin failed with an exception (a defect: the log has each with its request id)",
    ["option"],
)
OFFERS_CONSIDERED = Histogram(
    f"{PREFIX}_offers_considered",
    "Offers assessed per computed answer, over every option",
    buckets=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256, 512),
)
WRITER_QUEUE = Gauge(
    f"{PREFIX}_writer_queue_depth",
    "Stored recommendations waiting for their group commit",
    multiprocess_mode="livesum",
)
WRITER_COMMIT = Histogram(
    f"{PREFIX}_writer_commit_seconds",
    "Duration of one group commit of stored recommendations, by outcome (ok, error)",
    ["outcome"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
WORKER_POOL_QUEUE = Gauge(
    f"{PREFIX}_worker_pool_queue_depth",
    "CPU-heavy requests waiting for the worker pool (0 while the service has no pool)",
    multiprocess_mode="livesum",
)
DEGRADED = Gauge(
    f"{PREFIX}_degraded",
    "1 while answers come from the knowledge snapshot because the database does not answer",
    multiprocess_mode="livemax",
)
STORAGE_STATE = Gauge(
    f"{PREFIX}_storage_state",
    "1 for the storage state a worker is in (ok, full, read-only: a write failed for a full disk or a read-only "
    "database, until a write works again), 0 for the others (workers combined: the highest)",
    ["state"],
    multiprocess_mode="livemax",
)
RATE_LIMIT_REJECTIONS = Counter(f"{PREFIX}_rate_limit_rejections_total", "Requests refused with 429 (rate limit)")
DEPENDENCY_UP = Gauge(
    f"{PREFIX}_dependency_up",
    "1 while a dependency (redis, database) answers within its deadline, 0 while it does not "
    "(workers combined: the lowest)",
    ["name"],
    multiprocess_mode="livemin",
)


def multiprocess_mode() -> bool:
    """Whether prometheus-client writes this process's values to ``PROMETHEUS_MULTIPROC_DIR`` (decided
    by prometheus-client itself when it is imported)."""
    from prometheus_client import values

    return values.ValueClass is not values.MutexValue


def registry(multiproc_dir: Path | None) -> CollectorRegistry:
    """What a scrape reports: every worker's values in multiprocess mode, else this process's."""
    if multiproc_dir is None:
        return REGISTRY
    found = CollectorRegistry()
    multiprocess.MultiProcessCollector(found, path=str(multiproc_dir))  # type: ignore[no-untyped-call]
    return found


class KnowledgeGauges:
    """The knowledge store's state as metrics: version served, snapshot age, degraded mode, reloads."""

    def __init__(self) -> None:
        self._version: str | None = None

    def state(self, version: str | None, read_at: dt.datetime | None, degraded: bool) -> None:
        if version != self._version:
            if self._version is not None:
                if multiprocess_mode():  # labels cannot be removed there
                    KNOWLEDGE_VERSION.labels(self._version).set(0)
                else:
                    KNOWLEDGE_VERSION.remove(self._version)
            if version is not None:
                KNOWLEDGE_VERSION.labels(version).set(1)
            self._version = version
        if read_at is not None:
            SNAPSHOT_AGE.set(max(0.0, (dt.datetime.now(dt.UTC) - read_at).total_seconds()))
        DEGRADED.set(1 if degraded else 0)

    @staticmethod
    def loaded(trigger: str) -> None:
        KNOWLEDGE_RELOADS.labels(trigger).inc()


def evaluation_computed(kind: str, count: int = 1) -> None:
    EVALUATIONS.labels(kind).inc(count)


def memo_hit(kind: str) -> None:
    MEMO_HITS.labels(kind).inc()


def option_failed(option: str) -> None:
    OPTION_FAILURES.labels(option).inc()


def offers_considered(count: int) -> None:
    OFFERS_CONSIDERED.observe(count)


def writer_queue(depth: int) -> None:
    WRITER_QUEUE.set(depth)


def writer_commit(seconds: float, ok: bool) -> None:
    WRITER_COMMIT.labels("ok" if ok else "error").observe(seconds)


def worker_pool_queue(depth: int) -> None:
    """For the worker pool, once there is one: the requests waiting for it."""
    WORKER_POOL_QUEUE.set(depth)


def dependency_up(name: str, up: bool) -> None:
    DEPENDENCY_UP.labels(name=name).set(1 if up else 0)


def storage_state(state: str, states: tuple[str, ...] = ("ok", "full", "read-only")) -> None:
    """The storage state (``app.kb.storage_state``): 1 for ``state``, 0 for the others."""
    for name in states:
        STORAGE_STATE.labels(state=name).set(1 if name == state else 0)


def rate_limited() -> None:
    RATE_LIMIT_REJECTIONS.inc()


# ---- requests: Litestar's integration ----------------------------------------------------------------


class RequestMetrics:
    """Requests by route template, method and status — the names, labels and buckets of Litestar's
    Prometheus integration (``{PREFIX}_requests_total``, ``_request_duration_seconds``,
    ``_requests_in_progress``, ``_requests_error_total``), kept by ``app.web.edge`` in its one pass.

    An answer raised as an exception inside the edge (429 of the rate limit, 401/403 of
    authentication) is counted with its own status and duration; a request no route matched is not
    counted (its raw path would be a label anyone could multiply). The labelled children of each
    metric are looked up once per label set, not on every request.
    """

    def __init__(self) -> None:
        self.count = Counter(f"{PREFIX}_requests_total", "Total requests", LABELS)
        self.time = Histogram(
            f"{PREFIX}_request_duration_seconds", "Request duration, in seconds", LABELS, buckets=DURATION_BUCKETS
        )
        self.in_progress = Gauge(
            f"{PREFIX}_requests_in_progress",
            "Total requests currently in progress",
            LABELS,
            multiprocess_mode="livesum",
        )
        self.errors = Counter(f"{PREFIX}_requests_error_total", "Total errors in requests", LABELS)
        self._children: dict[tuple[int, tuple[Any, ...]], Any] = {}

    def _child(self, metric: Any, values: tuple[Any, ...]) -> Any:
        key = (id(metric), values)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*values)
        return found

    def started(self, scope: HTTPScope) -> None:
        """The handler of a routed request is about to run: it is in progress until ``finished``."""
        state = scope.setdefault("state", {})
        if _IN_PROGRESS not in state:
            gauge = self._child(self.in_progress, (scope["method"], scope["path_template"], 200, APP_NAME))
            gauge.inc()
            state[_IN_PROGRESS] = gauge

    def finished(self, scope: HTTPScope, status: int | None, seconds: float) -> None:
        state = scope.get("state") or {}
        gauge = state.pop(_IN_PROGRESS, None)
        if gauge is not None:
            gauge.dec()
        route = scope.get("path_template")
        if route is None:
            return
        values = (scope["method"], route, 500 if status is None else status, APP_NAME)
        if values[2] >= 500:
            self._child(self.errors, values).inc()
        self._child(self.count, values).inc()
        self._child(self.time, values).observe(seconds)


_REQUEST_METRICS: list[RequestMetrics] = []


def request_metrics() -> RequestMetrics:
    """This process's request metrics (made once: a metric is registered once per process)."""
    if not _REQUEST_METRICS:
        _REQUEST_METRICS.append(RequestMetrics())
    return _REQUEST_METRICS[0]


def metrics_controller(multiproc_dir: Path | None, before_scrape: Callable[[], None]) -> type[PrometheusController]:
    """``GET /metrics``: Litestar's Prometheus controller behind the scope ``metrics:read``;
    ``before_scrape`` brings this worker's gauges up to date first."""

    class MetricsController(PrometheusController):
        path = "/metrics"

        @get(
            opt={"scope": METRICS_SCOPE},
            include_in_schema=False,
            sync_to_thread=False,
            summary="Prometheus metrics",
        )
        def get(self) -> Response[bytes]:
            before_scrape()
            # the exposition format's type as prometheus-client names it, charset included: given as the
            # header itself, since Litestar adds "; charset=utf-8" to a text/ media type (twice, here)
            return Response(
                generate_latest(registry(multiproc_dir)),
                media_type=CONTENT_TYPE_LATEST,
                headers={"Cache-Control": "no-store", "Content-Type": CONTENT_TYPE_LATEST},
            )

    return MetricsController


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the service's own log has the scrapes' effects
        pass


def only_metrics(app: WSGIApplication) -> WSGIApplication:
    """The metrics at ``/metrics``, a 404 anywhere else (prometheus-client's app answers on every path)."""

    def serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"Not found: the metrics are at /metrics\n"]
        return app(environ, start_response)

    return serve


class MetricsListener:
    """``METRICS_BIND``: a small HTTP server in a thread, serving the metrics at ``/metrics`` without a key.

    Every worker tries to bind the address; one succeeds and the others leave it to that one (with
    ``PROMETHEUS_MULTIPROC_DIR`` it reports every worker's values, which is why several workers need it).
    """

    def __init__(self, host: str, port: int, multiproc_dir: Path | None) -> None:
        self.host, self.port = host, port
        self.multiproc_dir = multiproc_dir
        self._server: ThreadingWSGIServer | None = None

    def start(self) -> bool:
        app = only_metrics(make_wsgi_app(registry(self.multiproc_dir)))
        try:
            family = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
            server_class = type("MetricsServer", (ThreadingWSGIServer,), {"address_family": family})
            self._server = make_server(self.host, self.port, app, server_class, handler_class=_QuietHandler)
        except OSError as exc:
            log.info("metrics listener %s:%s not started in worker %s: %s", self.host, self.port, os.getpid(), exc)
            return False
        threading.Thread(target=self._server.serve_forever, name="metrics-listener", daemon=True).start()
        log.info("metrics served without a key on %s:%s/metrics", self.host, self.port)
        return True

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def process_exit(multiproc_dir: Path | None) -> None:
    """A worker that ends takes its live gauges with it (multiprocess mode)."""
    if multiproc_dir is not None and multiprocess_mode():
        multiprocess.mark_process_dead(os.getpid(), str(multiproc_dir))  # type: ignore[no-untyped-call]
