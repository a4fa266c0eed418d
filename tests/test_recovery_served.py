"""Backup, restore and recovery against a served instance (uvicorn, one worker) under load.

- A backup taken while recommendations are being stored holds every one acknowledged before it
  started, byte for byte, once restored into a fresh database (both databases).
- ``restore --force`` into the database a running service uses: the service serves the restored
  knowledge version after its next poll; recommendations stored after the backup are gone (both).
- SQLite: the file moved away (nothing is created in its place; computations go on from memory) and
  back, then replaced by a restored copy (a swapped volume): ready again without a restart.
- PostgreSQL "restarted" mid-load: the machine's server is shared and is not restarted; the test cuts
  the service's connections with a TCP proxy it controls (every open connection killed, new ones
  refused) and restores it. No acknowledged row is lost; computations answer throughout.

No timing is asserted beyond generous deadlines; the recovery times are printed (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import (
    PG_HOST,
    PG_PORT,
    SEEDS,
    SME_PROFILE,
    Databases,
    Server,
    create_key,
    load_seeds,
    make_client,
    ready_within,
)
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from test_backup_restore import require_backup_tools
from test_degraded_mode import BlockableProxy

from app.cli import main
from app.settings import Settings

pytestmark = pytest.mark.slow

COMPARISON = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}
DEADLINE = 60.0


def measured(what: str, seconds: float) -> None:
    print(f"\nMEASURED {what}: {seconds:.2f} s", flush=True)


def key_verified(base: str, key: str) -> None:
    """One request with ``key`` before a load starts: the service has verified the key and keeps it, so a
    lookup that outlasts its timeout on a busy machine is answered from that (degraded mode) instead of
    a 503 — dozens of first lookups at once are not what these tests are about."""
    r = httpx.get(base + "/v1/knowledge-version", headers={"X-API-Key": key}, timeout=DEADLINE)
    assert r.status_code == 200, r.text


def until(check: Any, what: str, deadline: float = DEADLINE) -> float:
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    pytest.fail(f"not within {deadline} s: {what}")


@dataclass
class Stored:
    id: str
    sent: float
    acked: float
    body: bytes


@dataclass
class Load:
    """Threads that store recommendations and ask for price comparisons until stopped."""

    base: str
    key: str
    writers: int = 2
    stored: list[Stored] = field(default_factory=list)
    statuses: dict[str, Counter[Any]] = field(default_factory=lambda: {"store": Counter(), "compute": Counter()})
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _count(self, kind: str, status: Any) -> None:
        with self._lock:
            self.statuses[kind][status] += 1

    def _write(self, n: int) -> None:
        with httpx.Client(base_url=self.base, headers={"X-API-Key": self.key}, timeout=30) as c:
            i = 0
            while not self._stop.is_set():
                i += 1
                sent = time.monotonic()
                try:
                    r = c.post("/v1/recommendations", json={**SME_PROFILE, "gpus": 8 + (n * 997 + i) % 120})
                except httpx.TransportError as exc:
                    self._count("store", type(exc).__name__)
                    continue
                self._count("store", r.status_code)
                if r.status_code == 201:
                    with self._lock:
                        self.stored.append(Stored(r.json()["id"], sent, time.monotonic(), r.content))

    def _compute(self) -> None:
        with httpx.Client(base_url=self.base, headers={"X-API-Key": self.key}, timeout=30) as c:
            while not self._stop.is_set():
                try:
                    self._count("compute", c.post("/v1/price-comparisons", json=COMPARISON).status_code)
                except httpx.TransportError as exc:
                    self._count("compute", type(exc).__name__)
                time.sleep(0.05)

    def __enter__(self) -> Load:
        key_verified(self.base, self.key)
        self._threads = [threading.Thread(target=self._write, args=(n,), daemon=True) for n in range(self.writers)]
        self._threads.append(threading.Thread(target=self._compute, daemon=True))
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=60)

    def acked_after(self, moment: float) -> int:
        with self._lock:
            return sum(1 for s in self.stored if s.sent > moment)


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def compute_advisor(url: str, *argv: str) -> Done:
    """The CLI against ``url``, in this process (not the server's: the service runs in its own), as
    ``main`` runs for the console script; the interpreter's start-up is spared on a busy machine."""
    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        if saved is None:
            del os.environ["DATABASE_URL"]
        else:
            os.environ["DATABASE_URL"] = saved
    print(out.getvalue(), err.getvalue(), sep="", end="", flush=True)
    return Done(code, out.getvalue(), err.getvalue())


def prepared(databases: Databases, backend: str, *, backups: bool = True) -> tuple[str, str]:
    if backups:
        require_backup_tools(backend)
    url = databases.seeded(backend)
    return url, create_key(url, ["admin"], name="served")[1]


def changed_seeds(tmp_path: Path) -> Path:
    seeds = tmp_path / "seeds-changed"
    shutil.copytree(SEEDS, seeds)
    hardware = seeds / "10-hardware.yaml"
    hardware.write_text(hardware.read_text().replace("name: GeForce RTX 4090", "name: RTX 4090 (24 GB)"))
    return seeds


def stored_ids(url: str) -> set[str]:
    async def run() -> set[str]:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with engine.connect() as conn:
                return set((await conn.scalars(text("SELECT id FROM recommendations"))).all())
        finally:
            await engine.dispose()

    return asyncio.run(run())


def backup_under_load(server: Server, load: Load, out: Path) -> tuple[float, float]:
    """Back up while ``load`` stores recommendations; when the backup process started and ended."""
    until(lambda: len(load.stored) >= 20, "20 recommendations stored")
    started = time.monotonic()
    done = compute_advisor(server.url, "backup", "--out", str(out))
    ended = time.monotonic()
    assert done.returncode == 0, done.stdout + done.stderr
    measured("backup under load", ended - started)
    until(lambda: load.acked_after(ended) >= 10, "10 recommendations stored after the backup")
    return started, ended


def assert_no_server_errors(load: Load) -> None:
    assert set(load.statuses["compute"]) == {200}, load.statuses
    assert set(load.statuses["store"]) <= {201, 503}, load.statuses


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_backup_taken_under_load_restores_byte_for_byte_into_a_fresh_and_into_the_live_database(
    databases: Databases, backend: str, tmp_path: Path
) -> None:
    url, key = prepared(databases, backend)
    out = tmp_path / "under-load.backup"
    with Server(url, tmp_path / "server.log") as server, Load(server.base, key) as load:
        started, ended = backup_under_load(server, load, out)
        backed_up = server.get("/v1/knowledge-version", key).json()["version"]

        # into a fresh database: every recommendation acknowledged before the backup, byte for byte
        target = databases.new(backend) if backend == "postgresql" else f"sqlite:///{tmp_path / 'restored.db'}"
        done = compute_advisor(target, "restore", str(out))
        assert done.returncode == 0, done.stdout + done.stderr
        restored = stored_ids(target)
        assert restored <= {s.id for s in load.stored}  # nothing that was not acknowledged
        before = [s for s in load.stored if s.acked < started]
        after = [s for s in load.stored if s.sent > ended]
        assert len(before) >= 20 and len(after) >= 10
        assert {s.id for s in before} <= restored
        assert not {s.id for s in after} & restored
        with make_client(target, api_key=key) as c:
            for s in list(load.stored):
                if s.id in restored:
                    got = c.get(f"/v1/recommendations/{s.id}")
                    assert got.status_code == 200, got.text
                    assert got.content == s.body  # byte for byte, as acknowledged
        print(f"\nrestored {len(restored)} recommendations, {len(before)} acknowledged before the backup started")

        # into the live database, under the running service: its version served after the next poll
        newer = load_seeds(url, changed_seeds(tmp_path), note="after the backup").version
        until(lambda: server.get("/v1/knowledge-version", key).json()["version"] == newer, "the new version served")
        refused = compute_advisor(url, "restore", str(out))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "in use" in refused.stderr and "--force" in refused.stderr
        done = compute_advisor(url, "restore", "--force", str(out))
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"knowledge version: {backed_up}" in done.stdout
        seconds = until(
            lambda: server.get("/v1/knowledge-version", key).json().get("version") == backed_up,
            "the restored knowledge version served",
        )
        measured(f"{backend}: restore --force done -> restored version served", seconds)
        ready_within(server, DEADLINE, "ready after the restore")
        assert server.get(f"/v1/recommendations/{after[0].id}", key).status_code == 404  # stored after the backup
        assert server.get(f"/v1/recommendations/{before[0].id}", key).content == before[0].body
        after_restore = time.monotonic()
        until(lambda: load.acked_after(after_restore) >= 5, "recommendations stored after the restore")
    assert_no_server_errors(load)


def test_sqlite_file_moved_away_and_replaced_while_serving(databases: Databases, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    path = data / "compute-advisor.db"
    url = databases.seeded("sqlite", at=path)
    _, key = create_key(url, ["admin"], name="served")
    backup = tmp_path / "file.backup"
    with Server(url, tmp_path / "server.log") as server, Load(server.base, key) as load:
        backup_under_load(server, load, backup)
        backed_up = server.get("/v1/knowledge-version", key).json()["version"]
        newer = load_seeds(url, changed_seeds(tmp_path), note="after the backup").version
        until(lambda: server.get("/v1/knowledge-version", key).json()["version"] == newer, "the new version served")

        # moved away: an outage, never a new empty database
        away = tmp_path / "moved-away.db"
        os.rename(path, away)
        until(lambda: server.get("/health/ready").status_code == 503, "not ready without the file")
        compute = httpx.post(server.base + "/v1/price-comparisons", json=COMPARISON, headers={"X-API-Key": key})
        assert compute.status_code == 200 and compute.headers["x-knowledge-source"].startswith("cached; ")
        assert server.get("/v1/knowledge-version", key).status_code == 503
        time.sleep(1)  # a few polls and requests later
        assert not path.exists(), "the service created a database"
        os.rename(away, path)
        measured("sqlite: file moved back -> ready", ready_within(server, DEADLINE, "ready with the file back"))
        assert server.get("/v1/knowledge-version", key).json()["version"] == newer

        # replaced: a restored copy swapped in with its directory (a volume swap), no restart
        fresh = tmp_path / "data-restored"
        fresh.mkdir()
        done = compute_advisor(f"sqlite:///{fresh / path.name}", "restore", str(backup))
        assert done.returncode == 0, done.stdout + done.stderr
        before = len(load.stored)
        until(lambda: len(load.stored) > before + 5, "more recommendations stored")
        gone = load.stored[-1]
        os.rename(data, tmp_path / "data-old")
        os.rename(fresh, data)
        swapped = time.monotonic()
        measured("sqlite: file replaced -> ready", ready_within(server, DEADLINE, "ready on the replaced file"))
        until(
            lambda: server.get("/v1/knowledge-version", key).json().get("version") == backed_up,
            "the replaced file's knowledge version served",
        )
        measured("sqlite: file replaced -> its knowledge version served", time.monotonic() - swapped)
        assert server.get(f"/v1/recommendations/{gone.id}", key).status_code == 404  # only in the old file
        assert server.get(f"/v1/recommendations/{load.stored[0].id}", key).content == load.stored[0].body
    assert_no_server_errors(load)


def test_postgresql_cut_mid_load_loses_no_acknowledged_row(databases: Databases, tmp_path: Path) -> None:
    url, key = prepared(databases, "postgresql", backups=False)
    proxy = BlockableProxy((PG_HOST, PG_PORT))
    proxy.start()
    try:
        proxied = url.replace(f"@{PG_HOST}:{PG_PORT}/", f"@127.0.0.1:{proxy.port}/")
        with Server(proxied, tmp_path / "server.log") as server, Load(server.base, key) as load:
            until(lambda: len(load.stored) >= 20, "20 recommendations stored")
            proxy.block()
            cut = time.monotonic()
            until(lambda: server.get("/health/ready").status_code == 503, "not ready while cut off")
            time.sleep(3)
            during = dict(load.statuses["compute"])
            proxy.unblock()
            back = time.monotonic()
            measured("postgresql: connections restored -> ready", ready_within(server, DEADLINE, "ready again"))
            measured("postgresql: cut -> restored -> ready (outage seen by readiness)", time.monotonic() - cut)
            until(lambda: load.acked_after(back) >= 10, "recommendations stored again")
        assert sum(during.values()) > 0
    finally:
        proxy.close()
    assert_no_server_errors(load)
    assert load.statuses["store"][503] > 0, load.statuses  # the cut was seen
    lost = {s.id for s in load.stored} - stored_ids(url)
    assert not lost, f"{len(lost)} acknowledged recommendations lost"
    print(f"\nstatuses: {dict(load.statuses['store'])} (store), {dict(load.statuses['compute'])} (compute)")
