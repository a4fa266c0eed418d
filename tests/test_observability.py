"""Metrics, structured logs and traces of one served app (in-process); replicas: test_replicas.py."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import itertools
import json
import logging
import random
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SEEDS, SME_PROFILE, Databases, create_key, free_port, load_seeds, make_client
from litestar import get
from litestar.testing import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families
from seed_snapshot import knowledge_from_seeds

from app.asgi import create_app
from app.core.types import Profile
from app.host.manager import create_option_host
from app.settings import Settings, parse_bind, parse_rate_limit, parse_trace_exporters
from app.web.log_lines import ConsoleFormatter, JsonFormatter, RequestLine
from app.web.logs import RequestContextFilter
from app.web.request_id import CURRENT_REQUEST_ID

COMPARISON = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}


@pytest.fixture(scope="module")
def db(databases: Databases) -> str:
    """One seeded SQLite database for the module (nothing here depends on the backend but NOTIFY)."""
    return databases.seeded("sqlite")


def settings(url: str, **kw: Any) -> Settings:
    return Settings(**{"database_url": url, "knowledge_refresh_seconds": 0.2, "rate_limit": None, **kw})


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, frozenset(s.labels.items()))] = s.value
    return found


def value(text: str, name: str, **labels: Any) -> float:
    return samples(text).get((name, frozenset((k, str(v)) for k, v in labels.items())), 0.0)


def scrape(c: TestClient) -> str:  # type: ignore[type-arg]
    r = c.get("/metrics")
    assert r.status_code == 200, r.text
    return r.text


def requests_total(text: str, path: str, method: str = "GET", status: int = 200) -> float:
    labels = {"app_name": "compute-advisor", "method": method, "path": path, "status_code": status}
    return value(text, "compute_advisor_requests_total", **labels)


# ---- metrics -------------------------------------------------------------------------------------


def test_metrics_need_a_key_with_the_metrics_scope(db: str) -> None:
    metrics_key = create_key(db, ["metrics:read"], name="prometheus")[1]
    catalog_key = create_key(db, ["catalog:read"], name="portal")[1]
    with make_client(db, api_key=None, settings=settings(db)) as c:
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers={"X-API-Key": catalog_key}).status_code == 403
        r = c.get("/metrics", headers={"X-API-Key": metrics_key})
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/plain; version=")
        assert "# TYPE compute_advisor_knowledge_version_info gauge" in r.text
        assert c.get("/metrics", headers={"X-API-Key": create_key(db, ["admin"])[1]}).status_code == 200
        assert c.get("/v1/gpus", headers={"X-API-Key": metrics_key}).status_code == 403  # and nothing else
    assert "/metrics" not in create_app(settings(db)).openapi_schema.paths  # type: ignore[operator]


def test_request_metrics_by_route_template_method_and_status(db: str) -> None:
    with make_client(db, settings=settings(db)) as c:
        before = scrape(c)
        assert c.get("/v1/gpus/h100_sxm").status_code in (200, 404)
        status = c.get("/v1/gpus/h100_sxm").status_code
        assert c.get("/v1/gpus/no-such-gpu").status_code == 404
        assert c.get("/v1/options", headers={"X-API-Key": "ca_not_a_key"}).status_code == 401
        after = scrape(c)
    template = "/v1/gpus/{key}"
    assert requests_total(after, template, status=status) - requests_total(before, template, status=status) == 2
    assert requests_total(after, template, status=404) - requests_total(before, template, status=404) == 1
    assert not any("h100_sxm" in name or "no-such-gpu" in str(labels) for name, labels in samples(after))
    # a 401 the edge answers (no key) is counted as a 401 (not as a 200 that took no time)
    assert requests_total(after, "/v1/options", status=401) - requests_total(before, "/v1/options", status=401) == 1
    labels = {"app_name": "compute-advisor", "method": "GET", "path": template, "status_code": "404"}
    assert value(after, "compute_advisor_request_duration_seconds_count", **labels) >= 1
    assert value(after, "compute_advisor_request_duration_seconds_sum", **labels) > 0
    in_flight = {"app_name": "compute-advisor", "method": "GET", "path": "/metrics", "status_code": "200"}
    assert value(after, "compute_advisor_requests_in_progress", **in_flight) == 1  # the scrape itself


def offers_assessed(body: dict[str, Any]) -> int:
    host = create_option_host()
    kb = knowledge_from_seeds()
    fields = {k: v for k, v in body.items() if k in {f.name for f in dataclasses.fields(Profile)}}
    profile = Profile(**fields, as_of=dt.datetime.now(dt.UTC).date())
    return sum(host.assess(option, profile, kb).offers_considered for option in host.options)


def test_service_metrics_follow_evaluations_memo_writer_and_knowledge(db: str) -> None:
    with make_client(db, settings=settings(db)) as c:
        version = c.get("/health/ready").json()["checks"]["knowledge_version"]
        before = scrape(c)
        profile = {**SME_PROFILE, "gpus": 24}  # a profile no other test asks for: computed here first
        for _ in range(3):
            assert c.post("/v1/recommendations", params={"store": "false"}, json=profile).status_code == 200
        assert c.post("/v1/recommendations", json=profile).status_code == 201
        assert c.post("/v1/evaluations", json={"profiles": [profile] * 9}).status_code == 200
        after = scrape(c)

    def delta(name: str, **labels: Any) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("compute_advisor_evaluations_total", kind="evaluation") == 1  # the first one
    assert delta("compute_advisor_memo_hits_total", kind="evaluation") == 3  # the same profile again
    assert delta("compute_advisor_evaluations_total", kind="batch") == 9  # 9 profiles, vectorised
    assert delta("compute_advisor_offers_considered_count") == 1  # per computed answer
    # every offer each option assessed before choosing one (the seeds' offers, counted without the service)
    assert delta("compute_advisor_offers_considered_sum") == offers_assessed(profile)
    assert delta("compute_advisor_writer_commit_seconds_count", outcome="ok") == 1
    assert value(after, "compute_advisor_writer_queue_depth") == 0
    assert value(after, "compute_advisor_knowledge_version_info", version=version) == 1
    assert value(after, "compute_advisor_knowledge_reloads_total", trigger="start") >= 1
    assert 0 <= value(after, "compute_advisor_knowledge_snapshot_age_seconds") < 60
    assert value(after, "compute_advisor_degraded") == 0
    assert value(after, "compute_advisor_worker_pool_queue_depth") == 0
    assert ("compute_advisor_rate_limit_rejections_total", frozenset()) in samples(after)


def test_rate_limit_rejections_are_counted_with_their_status(db: str) -> None:
    key = create_key(db, ["admin"], name="limited")[1]
    with make_client(db, api_key=key, settings=settings(db, rate_limit=parse_rate_limit("2/minute"))) as c:
        before = c.get("/metrics").text  # counts against the budget too: 1 of 2
        assert c.get("/v1/options").status_code == 200
        assert c.get("/v1/options").status_code == 429
        assert c.get("/metrics").status_code == 429
    with make_client(db, settings=settings(db)) as c:
        after = scrape(c)
    assert (
        value(after, "compute_advisor_rate_limit_rejections_total")
        - value(before, "compute_advisor_rate_limit_rejections_total")
        == 2
    )
    assert requests_total(after, "/v1/options", status=429) - requests_total(before, "/v1/options", status=429) == 1


def test_metrics_bind_serves_the_metrics_without_a_key(db: str) -> None:
    port = free_port()
    with make_client(db, settings=settings(db, metrics_bind=("127.0.0.1", port))) as c:
        c.get("/v1/options")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
        assert "compute_advisor_knowledge_version_info" in text
        assert "compute_advisor_request_duration_seconds_bucket" in text
        for elsewhere in ("/", "/v1/options", "/metrics/x", "/favicon.ico"):  # the metrics at /metrics only
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{elsewhere}", timeout=5)
            assert refused.value.code == 404, elsewhere
            assert b"compute_advisor" not in refused.value.read()
    with pytest.raises(OSError):  # stopped with the app
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_metrics_settings() -> None:
    assert parse_bind("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_bind(":9464") == ("0.0.0.0", 9464)
    assert parse_bind("[::1]:9464") == ("::1", 9464)
    for bad in ("9464", "host:", "host:99999", "host:x"):
        with pytest.raises(ValueError, match="METRICS_BIND"):
            parse_bind(bad)
    env = {"METRICS_BIND": "10.0.0.5:9464", "PROMETHEUS_MULTIPROC_DIR": "/run/ca"}
    s = Settings.from_env(env)
    assert s.metrics_bind == ("10.0.0.5", 9464) and s.prometheus_multiproc_dir == Path("/run/ca")
    assert Settings.from_env({}).metrics_bind is None


# ---- logs ----------------------------------------------------------------------------------------


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_json_logs_one_line_per_request_with_its_request_id(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, key = create_key(db, ["admin"], name="procurement system")
    with make_client(db, api_key=key, settings=settings(db, log_format="json")) as c:
        app = c.app

        @get("/v1/test-log", opt={"scope": "catalog:read"}, sync_to_thread=False)
        def test_log() -> dict[str, str]:
            logging.getLogger("app.somewhere").warning("inside the request")
            return {}

        app.register(test_log)
        version = c.get("/health/ready").json()["checks"]["knowledge_version"]
        capsys.readouterr()
        assert c.get("/v1/gpus", headers={"X-Request-ID": "abc"}).status_code == 200
        assert c.get("/v1/test-log", headers={"X-Request-ID": "def"}).status_code == 200
        assert c.get("/no/such/path", headers={"X-Request-ID": "ghi"}).status_code == 404
    lines = _json_lines(capsys.readouterr().err)
    requests = {line["request_id"]: line for line in lines if line["logger"] == "app.request"}
    line = requests["abc"]
    assert line["level"] == "info" and line["time"].endswith("Z")
    assert line["method"] == "GET" and line["path"] == "/v1/gpus" and line["route"] == "/v1/gpus"
    assert line["status"] == 200 and line["duration_ms"] > 0
    assert line["key"] == "procurement system" and line["knowledge_version"] == version
    assert key not in json.dumps(lines) and key[:8] not in json.dumps(lines)  # never the key, not even a prefix
    inside = next(x for x in lines if x["logger"] == "app.somewhere")
    assert inside["request_id"] == "def" and inside["message"] == "inside the request"
    assert requests["ghi"]["status"] == 404 and requests["ghi"]["route"] is None  # router 404s are logged too
    assert requests["ghi"]["key"] is None


def test_console_logs_for_people(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with make_client(db, settings=settings(db)) as c:  # LOG_FORMAT defaults to console
        capsys.readouterr()
        c.get("/v1/options", headers={"X-Request-ID": "abc"})
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "app.request" in x)
    assert " INFO " in line and "[abc] GET /v1/options 200 " in line and "key=test admin" in line
    assert not line.startswith("{")


def test_formatters_carry_the_request_id_and_tracebacks() -> None:
    record = logging.LogRecord("app.x", logging.ERROR, __file__, 1, "failed %s", ("here",), None)
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    token = CURRENT_REQUEST_ID.set("rid-1")
    try:
        RequestContextFilter().filter(record)
    finally:
        CURRENT_REQUEST_ID.reset(token)
    doc = json.loads(JsonFormatter().format(record))
    assert doc["request_id"] == "rid-1" and doc["message"] == "failed here" and doc["level"] == "error"
    assert "ValueError: boom" in doc["exception"]
    assert "[rid-1] failed here" in ConsoleFormatter().format(record)


def test_log_settings() -> None:
    assert Settings.from_env({}).log_format == "console"
    assert Settings.from_env({"LOG_FORMAT": "JSON", "LOG_LEVEL": "debug"}).log_level == "DEBUG"
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        Settings.from_env({"LOG_FORMAT": "xml"})
    with pytest.raises(ValueError, match="LOG_LEVEL"):
        Settings.from_env({"LOG_LEVEL": "loud"})


# ---- traces --------------------------------------------------------------------------------------


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _named(found: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def test_traces_per_request_and_around_evaluation_snapshot_load_and_writer(
    db: str, spans: tuple[TracerProvider, InMemorySpanExporter], capsys: pytest.CaptureFixture[str]
) -> None:
    provider, exporter = spans
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with make_client(db, settings=settings(db, log_format="json"), tracer_provider=provider) as c:
        assert c.post("/v1/price-comparisons", json={**COMPARISON, "gpus": 40}).status_code == 200
        created = c.post(
            "/v1/recommendations",
            json={**SME_PROFILE, "gpus": 40},
            headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01", "X-Request-ID": "traced"},
        )
        assert created.status_code == 201
        assert c.get(created.headers["location"]).status_code == 200
    found = exporter.get_finished_spans()
    assert _named(found, "knowledge.load"), [s.name for s in found]  # at start-up
    load = _named(found, "knowledge.load")[0]
    assert load.attributes is not None and load.attributes["knowledge.trigger"] == "start"

    compare = _named(found, "POST /v1/price-comparisons")[0]
    assert compare.kind == SpanKind.SERVER and compare.attributes is not None
    assert compare.attributes["http.route"] == "/v1/price-comparisons"
    computed = _named(found, "decision.comparison")[0]
    assert computed.parent is not None and computed.parent.span_id == compare.context.span_id

    recommend = _named(found, "POST /v1/recommendations")[0]
    assert format(recommend.context.trace_id, "032x") == trace_id  # the caller's trace continues
    assert recommend.attributes is not None and recommend.attributes["compute_advisor.request_id"] == "traced"
    evaluation = _named(found, "decision.evaluation")[0]
    store = _named(found, "writer.store")[0]
    commit = _named(found, "writer.commit")[0]
    assert evaluation.parent is not None and evaluation.parent.span_id == recommend.context.span_id
    assert store.parent is not None and store.parent.span_id == recommend.context.span_id
    assert commit.parent is None and [link.context.span_id for link in commit.links] == [store.context.span_id]
    assert commit.attributes is not None and commit.attributes["writer.rows"] == 1
    assert _named(found, "GET /v1/recommendations/{rec_id}")  # named by the route template

    lines = _json_lines(capsys.readouterr().err)
    line = next(x for x in lines if x.get("request_id") == "traced" and x["logger"] == "app.request")
    assert line["trace_id"] == trace_id  # a log line leads to its trace


def test_tracing_is_off_by_default_and_on_with_the_standard_variables() -> None:
    assert parse_trace_exporters({}) == ()
    assert parse_trace_exporters({"OTEL_TRACES_EXPORTER": "otlp"}) == ("otlp",)
    assert parse_trace_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == ("otlp",)
    assert parse_trace_exporters({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}) == ("otlp",)
    assert parse_trace_exporters({"OTEL_TRACES_EXPORTER": "console,otlp"}) == ("console", "otlp")
    assert parse_trace_exporters({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}) == ()
    assert parse_trace_exporters({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}) == ()
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER"):
        parse_trace_exporters({"OTEL_TRACES_EXPORTER": "zipkin"})
    app = create_app(Settings(database_url="sqlite:///:memory:"))
    assert "OpenTelemetryPlugin" not in {type(p).__name__ for p in app.plugins}
    traced = create_app(Settings(database_url="sqlite:///:memory:", trace_exporters=("console",)))
    assert "OpenTelemetryPlugin" in {type(p).__name__ for p in traced.plugins}


# ---- CORS ----------------------------------------------------------------------------------------


def test_cors_origins_for_a_browser_page(db: str) -> None:
    origin = "https://explorer.example.org"
    assert Settings.from_env({"CORS_ORIGINS": f"{origin}, https://b.example.org"}).cors_origins == (
        origin,
        "https://b.example.org",
    )
    preflight = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-api-key",
    }
    with make_client(db, settings=settings(db, cors_origins=(origin,))) as c:
        r = c.options("/v1/price-comparisons", headers=preflight)
        assert r.status_code in (200, 204) and r.headers["access-control-allow-origin"] == origin
        r = c.get("/v1/options", headers={"Origin": origin})
        assert r.headers["access-control-allow-origin"] == origin
        assert "x-request-id" in r.headers["access-control-expose-headers"].lower()
        other = c.get("/v1/options", headers={"Origin": "https://elsewhere.example.org"})
        assert "access-control-allow-origin" not in other.headers
    with make_client(db, settings=settings(db)) as c:  # none by default, and no CORS layer installed
        assert "access-control-allow-origin" not in c.get("/v1/options", headers={"Origin": origin}).headers
        assert c.app.cors_config is None


# ---- a new knowledge version announced on PostgreSQL ---------------------------------------------


@pytest.mark.slow
def test_postgresql_announces_a_new_version_to_every_worker_at_once(databases: Databases, tmp_path: Path) -> None:
    url = databases.seeded("postgresql")
    seeds = tmp_path / "seeds"
    shutil.copytree(SEEDS, seeds)
    hardware = seeds / "10-hardware.yaml"
    hardware.write_text(hardware.read_text().replace("name: GeForce RTX 4090", "name: RTX 4090 (announced)"))
    # a poll every 10 minutes: only the announcement can bring the new version within this test
    with make_client(url, settings=settings(url, knowledge_refresh_seconds=600)) as c:
        deadline = time.monotonic() + 20
        while not c.app.state.knowledge_store.listening and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.app.state.knowledge_store.listening
        before = scrape(c)
        new_version = load_seeds(url, seeds).version
        loaded = time.monotonic()
        while c.get("/health/ready").json()["checks"]["knowledge_version"] != new_version:
            assert time.monotonic() - loaded < 20, "the announcement did not arrive"
            time.sleep(0.02)
        after = scrape(c)
    reloads = "compute_advisor_knowledge_reloads_total"
    assert value(after, reloads, trigger="notify") - value(before, reloads, trigger="notify") == 1
    assert value(after, "compute_advisor_knowledge_version_info", version=new_version) == 1
    assert (reloads, frozenset({("trigger", "poll")})) not in samples(after) or value(
        after, reloads, trigger="poll"
    ) == value(before, reloads, trigger="poll")


def test_sqlite_has_no_announcements_and_polls(db: str) -> None:
    with make_client(db, settings=settings(db)) as c:
        assert c.app.state.knowledge_store.listening is False


def test_request_ids_made_here_are_32_hex_digits_and_never_repeat(client) -> None:
    ids = [client.get("/health/live").headers["x-request-id"] for _ in range(50)]
    assert len(set(ids)) == 50 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_request_ids_do_not_reveal_how_many_requests_were_served(client) -> None:
    """Ids made one after another share nothing that counts: neither half steps by the requests served
    between them (a counter in the id would tell anyone who sees two ids the worker's request volume)."""
    ids = [client.get("/health/live").headers["x-request-id"] for _ in range(50)]
    tails = [int(i[16:], 16) for i in ids]
    steps = [b - a for a, b in itertools.pairwise(tails)]
    assert sum(1 for s in steps if 0 < s <= 4) <= 1
    assert len({i[16:] for i in ids}) == 50


def test_a_forked_worker_draws_its_own_request_id_prefix() -> None:
    import os

    from app.web.request_id import _IDS

    parent = _IDS.new()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first id, to the parent
        os.write(write, _IDS.new().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    assert len(child) == 32 and child[:16] != parent[:16]


def _queued_logging(monkeypatch: pytest.MonkeyPatch, stream: Any) -> logging.Logger:
    from app.web import logs

    monkeypatch.setattr(sys, "stderr", stream)
    logs.configure_logging(Settings(database_url="sqlite:///unused.db", log_format="json"), queued=True)
    return logging.getLogger("app.queued-test")


def test_queued_lines_are_written_in_order_by_the_thread_and_flushed(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.web import logs
    from app.web.request_id import CURRENT_REQUEST_ID

    stream = io.StringIO()
    log = _queued_logging(monkeypatch, stream)
    token = CURRENT_REQUEST_ID.set("queued-rid")
    try:
        for i in range(5):
            log.warning("line %d of %s", i, "five")
    finally:
        CURRENT_REQUEST_ID.reset(token)
        logs.flush_logs()
    lines = _json_lines(stream.getvalue())
    logs.configure_logging(Settings(database_url="sqlite:///unused.db"))  # the plain handler back
    assert [x["message"] for x in lines] == [f"line {i} of five" for i in range(5)]
    assert {x["request_id"] for x in lines} == {"queued-rid"}  # read where the line was logged


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_a_request_line_queued_without_its_record_reads_as_its_record(
    monkeypatch: pytest.MonkeyPatch, log_format: str
) -> None:
    """The serving worker queues a request's line as its fields where its handler alone takes it; the writer
    thread writes the same line as the record would have made. Another handler on the way (pytest's
    own, here) takes the record as before."""
    from app.web import logs

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    logs.configure_logging(Settings(database_url="sqlite:///unused.db", log_format=log_format), queued=True)
    root = logging.getLogger()
    ours = next(h for h in root.handlers if h.get_name() == logs.HANDLER_NAME)
    others = [h for h in root.handlers if h is not ours]
    monkeypatch.setattr(time, "time", lambda: 1_765_000_000.25)  # the record's clock and the line's
    monkeypatch.setattr(time, "time_ns", lambda: 1_765_000_000_250_000_000)
    user = type("Principal", (), {"name": "procurement system"})()
    scope: Any = {"method": "GET", "path": "/v1/gpus", "path_template": "/v1/gpus", "client": ("10.0.0.7", 1)}
    token = CURRENT_REQUEST_ID.set("rid-7")
    try:
        for handler in others:  # this handler alone: the line without a record
            root.removeHandler(handler)
        assert isinstance(ours, logs._QueuedStderrHandler) and ours.sole_taker()
        logs.log_request({**scope, "user": user, "state": {"trace_id": "ab" * 16}}, 304, 0.0012345, "kv-1")
        logs.log_request({**scope, "state": {}}, None, 0.5, None)  # no answer: an error line
        queued = [type(item) for item in ours.queued]
        logs.flush_logs()
        fast = stream.getvalue().splitlines()
        stream.truncate(0), stream.seek(0)
        root.addHandler(logging.NullHandler())  # another taker: records, as before
        assert not ours.sole_taker()
        logs.log_request({**scope, "user": user, "state": {"trace_id": "ab" * 16}}, 304, 0.0012345, "kv-1")
        logs.log_request({**scope, "state": {}}, None, 0.5, None)
        queued += [type(item) for item in ours.queued]
        logs.flush_logs()
        slow = stream.getvalue().splitlines()
    finally:
        CURRENT_REQUEST_ID.reset(token)
        root.handlers = [h for h in root.handlers if not isinstance(h, logging.NullHandler)]
        for handler in others:
            root.addHandler(handler)
        logs.configure_logging(Settings(database_url="sqlite:///unused.db"))  # the plain handler back
    assert queued == [RequestLine] * 2 + [logging.LogRecord] * 2
    assert fast == slow and len(fast) == 2
    if log_format == "json":
        first, second = (json.loads(line) for line in fast)
        assert first["request_id"] == "rid-7" and first["status"] == 304 and first["key"] == "procurement system"
        assert first["trace_id"] == "ab" * 16 and first["time"] == "2025-12-06T05:46:40.250Z"
        assert second["level"] == "error" and second["status"] is None
    else:
        assert "INFO    app.request [rid-7] GET /v1/gpus 304 1.234 ms" in fast[0]
        assert "key=procurement system" in fast[0]


def test_a_lines_time_is_written_as_datetime_writes_it() -> None:
    """The whole second's text is made once per second; the line's time is the same as ``datetime``'s
    (microseconds rounded half to even, then cut to milliseconds), at every second's edge too."""
    from app.web import log_lines

    def expected(created: float) -> str:
        return dt.datetime.fromtimestamp(created, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    rnd = random.Random(5)
    edges = [
        1_765_000_000.0,
        1_765_000_000.9995,
        1_765_000_000.9999995,
        1_765_000_000.0004999,
        0.0,
        4_102_444_799.9999997,
    ]
    edges += [int(rnd.uniform(1.7e9, 1.8e9)) + 0.9999995 + rnd.uniform(-1e-7, 1e-7) for _ in range(2_000)]
    times = (
        edges
        + [rnd.uniform(1.7e9, 1.8e9) for _ in range(5_000)]
        + sorted(rnd.uniform(1.765e9, 1.765e9 + 3) for _ in range(5_000))
    )
    assert [log_lines._time(t) for t in times] == [expected(t) for t in times]


def test_lines_past_the_queue_limit_are_counted_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.web import logs

    monkeypatch.setattr(logs, "WRITE_INTERVAL_SECONDS", 60.0)  # the thread writes on flush only
    monkeypatch.setattr(logs, "MAX_QUEUED", 3)
    stream = io.StringIO()
    log = _queued_logging(monkeypatch, stream)
    for i in range(10):
        log.warning("line %d", i)
    logs.flush_logs()
    text = stream.getvalue()
    logs.configure_logging(Settings(database_url="sqlite:///unused.db"))
    assert [x["message"] for x in _json_lines(text)] == ["line 0", "line 1", "line 2"]
    assert text.rstrip().endswith("7 log lines dropped: the log stream did not take them")


def test_a_forked_worker_writes_its_queued_lines_with_a_thread_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from app.web import logs

    log = _queued_logging(monkeypatch, io.StringIO())
    log.warning("the parent's thread is started")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its line through its own thread, into the pipe
        sys.stderr = os.fdopen(write, "w")
        log.warning("from the child")
        logs.flush_logs()
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as child:
        written = child.read()
    logs.configure_logging(Settings(database_url="sqlite:///unused.db"))
    assert [x["message"] for x in _json_lines(written)] == ["from the child"]
