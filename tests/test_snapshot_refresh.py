"""Every worker serves a new knowledge version within 5 seconds of a seed load (two workers)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import SEEDS, admin_key, free_port, load_seeds

from app.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow


def _ready(client: httpx.Client, url: str, key: str) -> dict:
    """Readiness's checks with their details (the worker's pid: for a caller with a key)."""
    return client.get(url, headers={"Connection": "close", "X-API-Key": key}).json()["checks"]


def test_two_workers_switch_to_a_new_knowledge_version_within_5_seconds(databases, tmp_path: Path) -> None:
    url = databases.seeded("sqlite")
    key = admin_key(url)
    port = free_port()
    env = {**os.environ, "DATABASE_URL": url, "KNOWLEDGE_REFRESH_SECONDS": "2"}
    # a file, not a pipe nobody reads: the service logs a line per request, and a full pipe would block it
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.serve",
            "--port",
            str(port),
            "--workers",
            "2",
            "--log-level",
            "warning",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    ready = f"http://127.0.0.1:{port}/health/ready"
    try:
        with httpx.Client(timeout=5, limits=httpx.Limits(max_keepalive_connections=0)) as client:
            old: dict[int, str] = {}
            deadline = time.monotonic() + 60
            while len(old) < 2 and time.monotonic() < deadline:  # both workers up, both on the old version
                try:
                    checks = _ready(client, ready, key)
                    old[checks["worker_pid"]] = checks["knowledge_version"]
                except httpx.TransportError:
                    time.sleep(0.2)
            if len(old) < 2:
                pytest.fail(f"two workers did not both answer within 60 s: {old}")
            assert len(set(old.values())) == 1

            seeds = tmp_path / "seeds"
            shutil.copytree(SEEDS, seeds)
            hardware = seeds / "10-hardware.yaml"
            hardware.write_text(hardware.read_text().replace("name: GeForce RTX 4090", "name: RTX 4090 (24 GB)"))
            new_version = load_seeds(url, seeds).version
            loaded_at = time.monotonic()

            seen: dict[int, float] = {}
            while len(seen) < 2 and time.monotonic() - loaded_at < 10:
                checks = _ready(client, ready, key)
                if checks["knowledge_version"] == new_version:
                    seen.setdefault(checks["worker_pid"], time.monotonic() - loaded_at)
            assert set(seen) == set(old), f"workers on the new version: {seen}, workers: {list(old)}"
            assert max(seen.values()) < 5, f"seconds until each worker served {new_version}: {seen}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
