"""``make backup-bench``: backup and restore sizes and durations with 10,000 stored recommendations.

For each database (SQLite in a temporary directory; a fresh PostgreSQL database on ``PG_URL``, dropped
afterwards) the script migrates, seeds and makes an ``admin`` key with the CLI, serves the service
(uvicorn, ``WORKERS`` workers) and stores ``RECOMMENDATIONS`` recommendations through the API
(``POST /v1/recommendations``, varied profiles, ``CONNECTIONS`` keep-alive connections). Then, with the
CLI as an operator runs it:

- ``compute-advisor backup`` while the service is idle, and again while it stores more recommendations
  (``CONNECTIONS`` connections, for as long as the backup takes);
- the service stopped, ``compute-advisor restore`` of the idle backup into a fresh database.

Reported, as Markdown: the database's size, the backup file's size, the duration each command reports
for its own work and the wall time of the whole command (interpreter start-up, imports and the
checks included), and the restored database's size. The knowledge base is the one ``seeds/`` holds
today, named by its knowledge version.

Environment: ``RECOMMENDATIONS`` (10000), ``CONNECTIONS`` (16), ``WORKERS`` (2), ``BACKENDS``
(``sqlite,postgresql``), ``SEED`` (1), ``PG_URL`` and ``PG_ADMIN_DB`` (see ``bench/lib.py``).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import lib
from loadgen import connection, run_loop
from loadtest import profile

RECOMMENDATIONS = int(os.environ.get("RECOMMENDATIONS") or 10_000)
CONNECTIONS = int(os.environ.get("CONNECTIONS") or 16)
WORKERS = int(os.environ.get("WORKERS") or 2)
BACKENDS = [b.strip() for b in (os.environ.get("BACKENDS") or "sqlite,postgresql").split(",") if b.strip()]
SEED = int(os.environ.get("SEED") or 1)


@dataclass
class Storing:
    """Requests that store recommendations: ``limit`` of them, or until ``stop`` is set."""

    port: int
    key: str
    limit: int | None
    rng: random.Random
    stop: threading.Event = field(default_factory=threading.Event)
    sent: int = 0
    codes: dict[str, int] = field(default_factory=dict)

    def _next(self) -> tuple[None, bytes] | None:
        if self.stop.is_set() or (self.limit is not None and self.sent >= self.limit):
            return None
        self.sent += 1
        body = lib.dumps(profile(self.rng))
        return None, lib.request_bytes("POST", "/v1/recommendations", self.port, {"X-API-Key": self.key}, body)

    def _record(self, _tag: None, _latency: float, response: lib.Response | None) -> None:
        code = "transport error" if response is None else str(response.status)
        self.codes[code] = self.codes.get(code, 0) + 1

    async def _go(self) -> None:
        await asyncio.gather(*(connection(self.port, self._next, self._record, 60) for _ in range(CONNECTIONS)))

    def run(self) -> float:
        start = time.perf_counter()
        run_loop(self._go())
        return time.perf_counter() - start


@dataclass
class Figures:
    backend: str
    stored: int = 0
    store_seconds: float = 0.0
    knowledge_version: str = ""
    database_bytes: int = 0
    backup_bytes: int = 0
    backup_seconds: float = 0.0
    backup_wall: float = 0.0
    loaded_backup_seconds: float = 0.0
    loaded_backup_wall: float = 0.0
    loaded_stored: int = 0
    restore_seconds: float = 0.0
    restore_wall: float = 0.0
    restored_bytes: int = 0
    restored_rows: str = ""


def timed_cli(env: dict[str, str], *argv: str) -> tuple[str, float]:
    start = time.perf_counter()
    out = lib.cli(env, *argv)
    return out, time.perf_counter() - start


def own_seconds(out: str) -> float:
    """The duration a ``backup``/``restore`` command reports for its own work: "(…, 0.42 s)"."""
    found = re.search(r"([\d.]+) s\)", out)
    if found is None:
        raise SystemExit(f"no duration in:\n{out}")
    return float(found.group(1))


def database_bytes(url: str) -> int:
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    name = url.rsplit("/", 1)[1]
    return int(lib.pg_admin(lambda conn: conn.fetchval("SELECT pg_database_size($1)", name)))


def measure(backend: str, tmp: Path) -> Figures:
    fig = Figures(backend)
    created: list[str] = []

    def new_url(name: str) -> str:
        if backend == "sqlite":
            return f"sqlite:///{tmp / (name + '.db')}"
        db = f"ca_backupbench_{name}_{uuid.uuid4().hex[:8]}"
        lib.pg_admin(lambda conn: conn.execute(f'CREATE DATABASE "{db}"'))
        created.append(db)
        return f"{lib.PG_URL}/{db}"

    try:
        url = new_url("source")
        env = lib.service_env(url)
        key = lib.prepare_database(env, "backup-bench")
        server = lib.start_server(lib.SERVICE_APP, tmp / f"{backend}-server.log", env, "/health/ready", WORKERS)
        try:
            storing = Storing(server.port, key, RECOMMENDATIONS, random.Random(SEED))
            fig.store_seconds = storing.run()
            fig.stored = storing.codes.get("201", 0)
            if fig.stored != RECOMMENDATIONS:
                raise SystemExit(f"storing failed: {storing.codes}")
            idle = tmp / f"{backend}-idle.backup"
            out, fig.backup_wall = timed_cli(env, "backup", "--out", str(idle))
            fig.backup_seconds = own_seconds(out)
            fig.backup_bytes = idle.stat().st_size
            fig.knowledge_version = re.findall(r"knowledge version: (\S+)", out)[0]

            more = Storing(server.port, key, None, random.Random(SEED + 1))
            loader = threading.Thread(target=more.run, daemon=True)
            loader.start()
            time.sleep(2)  # the load is running
            out, fig.loaded_backup_wall = timed_cli(env, "backup", "--out", str(tmp / f"{backend}-loaded.backup"))
            more.stop.set()
            loader.join(timeout=120)
            fig.loaded_backup_seconds = own_seconds(out)
            fig.loaded_stored = more.codes.get("201", 0)
            bad = {k: v for k, v in more.codes.items() if k != "201"}
            if bad:
                raise SystemExit(f"storing during the backup failed: {more.codes}")
        finally:
            lib.stop(server.proc)
        fig.database_bytes = database_bytes(url)

        target = new_url("restored")
        out, fig.restore_wall = timed_cli(lib.service_env(target), "restore", str(idle))
        fig.restore_seconds = own_seconds(out.splitlines()[0])
        fig.restored_rows = re.findall(r"rows: (.*)", out)[0]
        fig.restored_bytes = database_bytes(target)
    finally:
        for db in created:
            lib.pg_admin(lambda conn, db=db: conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))
    return fig


def mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


def report(figs: list[Figures]) -> None:
    print("## Backup and restore with stored recommendations\n")
    print(*lib.machine(), sep="\n")
    if "postgresql" in BACKENDS:
        print(f"- PostgreSQL {lib.pg_version()} on the same machine; pg_dump/pg_restore from PATH")
    print(
        f"- service: uvicorn, {WORKERS} workers, RATE_LIMIT=off; {RECOMMENDATIONS:,} recommendations stored "
        f"through POST /v1/recommendations over {CONNECTIONS} connections (seed {SEED}); the seeds of seeds/ "
        f"({', '.join(sorted({f.knowledge_version for f in figs}))})"
    )
    print(f"- load average after: {lib.loadavg()}\n")
    print(
        "| database | stored | database size | backup file | backup (idle): own / wall | backup under load: own / "
        "wall (stored meanwhile) | restore into a fresh database: own / wall | restored size | restored rows |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for f in figs:
        print(
            f"| {f.backend} | {f.stored:,} in {f.store_seconds:.0f} s | {mb(f.database_bytes)} | "
            f"{mb(f.backup_bytes)} | {f.backup_seconds:.2f} s / {f.backup_wall:.1f} s | "
            f"{f.loaded_backup_seconds:.2f} s / {f.loaded_backup_wall:.1f} s ({f.loaded_stored:,}) | "
            f"{f.restore_seconds:.2f} s / {f.restore_wall:.1f} s | {mb(f.restored_bytes)} | {f.restored_rows} |"
        )


def bench() -> int:
    figs: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="compute-advisor-backup-bench-") as tmp:
        for backend in BACKENDS:
            print(f"{backend}: storing {RECOMMENDATIONS:,} recommendations, backing up, restoring…", file=sys.stderr)
            figs.append(measure(backend, Path(tmp)))
    report(figs)
    return 0


if __name__ == "__main__":
    sys.exit(lib.run_main(bench, "servers stopped, databases dropped"))
