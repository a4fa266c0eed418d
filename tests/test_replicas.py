"""Served instances, as `python -m app.serve` subprocesses (uvicorn, as deploy/serve runs it) on free ports.

- Two replicas over one PostgreSQL database and one Redis: one rate-limit budget across both, a seed
  load reaching both at once (PostgreSQL's NOTIFY; their poll is set to a minute), a recommendation
  stored on one read on the other. Mandatory under REQUIRE_POSTGRES=1 and REQUIRE_REDIS=1.
- Two workers of one instance export one set of metrics (prometheus-client's multiprocess mode).

The seed-load propagation time is measured and printed (``pytest -s``), not asserted: the test
fails only when a replica misses the new version for 20 s, or learns of it by its poll.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import (
    REDIS_URL,
    SEEDS,
    SME_PROFILE,
    Databases,
    RedisNamespace,
    admin_key,
    create_key,
    free_port,
    load_seeds,
)
from prometheus_client.parser import text_string_to_metric_families

from app.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.log.read_text(errors="replace").splitlines() if x.startswith("{")]


def serve(env: dict[str, str], log: Path, workers: int = 1) -> Served:
    port = free_port()
    argv = [sys.executable, "-m", "app.serve", "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--workers", str(workers), "--no-access-log"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    return Served(proc, port, log)


def wait_ready(server: Served, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            pytest.fail(f"server exited with {server.proc.returncode}:\n{server.log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{server.url}/health/ready", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"not ready after {timeout} s:\n{server.log.read_text()[-3000:]}")


def stop(server: Served) -> None:
    if server.proc.poll() is None:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()


def metric(text: str, name: str, **labels: Any) -> float:
    wanted = {k: str(v) for k, v in labels.items()}
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in wanted.items())
    )


def test_two_replicas_over_one_postgresql_and_one_redis(
    databases: Databases, redis_namespace: RedisNamespace, tmp_path: Path
) -> None:
    url = databases.seeded("postgresql")  # skips (or fails under REQUIRE_POSTGRES=1) without PostgreSQL
    admin = {"X-API-Key": admin_key(url)}
    limited = {"X-API-Key": create_key(url, ["catalog:read"], name="portal")[1]}
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": url,
        "REDIS_URL": REDIS_URL,
        "RATE_LIMIT": "20/minute",
        "RATE_LIMIT_NAMESPACE": redis_namespace.prefix,
        "KNOWLEDGE_REFRESH_SECONDS": "60",  # only the announcement can bring a new version within the test
        "LOG_FORMAT": "json",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    a, b = serve(env, tmp_path / "a.log"), serve(env, tmp_path / "b.log")
    try:
        wait_ready(a)
        wait_ready(b)
        with httpx.Client(timeout=10) as http:
            # one rate-limit budget across both replicas: 20 a minute for this key, wherever it asks
            answers = [http.get(f"{(a, b)[i % 2].url}/v1/options", headers=limited).status_code for i in range(30)]
            assert answers.count(200) == 20 and answers.count(429) == 10, answers
            assert 429 in answers[0::2] and 429 in answers[1::2]  # both replicas refuse once it is spent

            # a recommendation stored through one replica is read through the other
            created = http.post(f"{a.url}/v1/recommendations", json=SME_PROFILE, headers=admin)
            assert created.status_code == 201, created.text
            read = http.get(f"{b.url}{created.headers['location']}", headers={**admin, "X-Request-ID": "read-on-b"})
            assert read.status_code == 200 and read.json() == created.json()

            # a seed load reaches both replicas at once
            seeds = tmp_path / "seeds"
            shutil.copytree(SEEDS, seeds)
            hardware = seeds / "10-hardware.yaml"
            hardware.write_text(hardware.read_text().replace("name: GeForce RTX 4090", "name: RTX 4090 (replicas)"))
            new_version = load_seeds(url, seeds).version
            loaded = time.monotonic()
            seen: dict[str, float] = {}
            while len(seen) < 2 and time.monotonic() - loaded < 20:
                for name, server in (("a", a), ("b", b)):
                    if name not in seen:
                        checks = http.get(f"{server.url}/health/ready").json()["checks"]
                        if checks["knowledge_version"] == new_version:
                            seen[name] = time.monotonic() - loaded
                time.sleep(0.01)
            assert set(seen) == {"a", "b"}, f"replicas on {new_version} within 20 s: {seen}"
            for server in (a, b):  # and they learnt of it from the announcement, not from their poll
                text = http.get(f"{server.url}/metrics", headers=admin).text
                assert metric(text, "compute_advisor_knowledge_reloads_total", trigger="notify") == 1
                assert metric(text, "compute_advisor_knowledge_reloads_total", trigger="poll") == 0
                assert metric(text, "compute_advisor_knowledge_version_info", version=new_version) == 1
            print(
                f"\nseed load -> replicas serving {new_version}: "
                + ", ".join(f"{k} {v:.3f} s" for k, v in seen.items())
            )
    finally:
        stop(a)
        stop(b)
    # each replica logged its own requests, as JSON lines carrying the request id, path and status
    line = next(x for x in b.lines() if x.get("request_id") == "read-on-b" and x["logger"] == "app.request")
    assert line["path"] == created.headers["location"] and line["status"] == 200
    assert line["route"] == "/v1/recommendations/{rec_id}" and line["knowledge_version"]


def test_two_workers_export_one_set_of_metrics(databases: Databases, tmp_path: Path) -> None:
    url = databases.seeded("sqlite")
    key = {"X-API-Key": admin_key(url)}
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": url,
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
    }
    server = serve(env, tmp_path / "server.log", workers=2)
    try:
        wait_ready(server)
        workers: dict[int, int] = {}  # worker pid -> readiness checks it answered
        readiness = 0
        deadline = time.monotonic() + 60
        # new connections each time, so that both workers take some
        with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as http:
            while (len(workers) < 2 or readiness < 20) and time.monotonic() < deadline:
                r = http.get(f"{server.url}/health/ready", headers=key)  # the worker's pid: for a key only
                readiness += 1
                pid = r.json()["checks"]["worker_pid"]
                workers[pid] = workers.get(pid, 0) + 1
            assert len(workers) == 2, f"both workers answered: {workers}"
            for _ in range(6):  # whichever worker answers a scrape reports both workers' requests
                text = http.get(f"{server.url}/metrics", headers=key).text
                assert metric(text, "compute_advisor_requests_total", path="/health/ready") >= readiness
                counted = metric(text, "compute_advisor_requests_total", path="/health/ready", status_code=200)
                assert counted >= readiness, (counted, readiness, workers)
                assert metric(text, "compute_advisor_knowledge_version_info") == 1  # one version, both workers
        pids = {int(p.stem.rsplit("_", 1)[1]) for p in metrics_dir.glob("counter_*.db")}
        assert set(workers) <= pids
    finally:
        stop(server)
    # a worker that ends takes its live gauges with it
    assert not list(metrics_dir.glob("gauge_live*.db")), list(metrics_dir.iterdir())
