"""A served compute-advisor on a throwaway PostgreSQL database, for ``make fuzz`` and ``make loadtest``.

``served(workers=2)`` creates a fresh database on ``PG_URL`` (``postgresql://postgres@127.0.0.1:5432``;
the server must allow the ``postgres`` role to create databases), migrates and seeds it with the CLI,
creates an ``admin`` key, serves the app with uvicorn (``RATE_LIMIT=off``) and yields the port and key.
On exit — normal, error, Ctrl-C or SIGTERM — it stops the server (its whole process group) and drops
the database.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.dont_write_bytecode = True

from run import BIN, HOST, ROOT, free_port, spawn, stop, uvicorn_argv, wait_ready  # noqa: E402

PG_URL = os.environ.get("PG_URL", "postgresql://postgres@127.0.0.1:5432").rstrip("/")
PG_ADMIN_DB = os.environ.get("PG_ADMIN_DB", "test")


@dataclass
class Served:
    port: int
    key: str
    database_url: str
    pids: list[int]
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def install_signal_handlers() -> None:
    """Ctrl-C, SIGTERM and SIGHUP unwind through every ``finally``, so servers stop and databases go."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)


def pg_admin(sql: str) -> None:
    """One statement on the admin database (asyncpg, the service's own driver)."""
    import asyncio

    import asyncpg

    async def go() -> None:
        conn = await asyncpg.connect(f"postgres://{PG_URL.split('://', 1)[1]}/{PG_ADMIN_DB}", timeout=10)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(go())


def pg_version() -> str:
    import asyncio

    import asyncpg

    async def go() -> str:
        conn = await asyncpg.connect(f"postgres://{PG_URL.split('://', 1)[1]}/{PG_ADMIN_DB}", timeout=10)
        try:
            return str(await conn.fetchval("SHOW server_version"))
        finally:
            await conn.close()

    return asyncio.run(go())


def cli(env: dict[str, str], *argv: str) -> str:
    proc = subprocess.run([str(BIN / "compute-advisor"), *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"compute-advisor {' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def worker_pids(parent: int) -> list[int]:
    """The uvicorn worker processes: children of the supervisor started by multiprocessing's spawn
    (not its resource tracker)."""
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for kid in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
            with contextlib.suppress(OSError):
                if b"spawn_main" in Path(f"/proc/{kid}/cmdline").read_bytes():
                    pids.append(int(kid))
    return pids


@contextlib.contextmanager
def served(name: str, workers: int = 2, extra_env: dict[str, str] | None = None) -> Iterator[Served]:
    db = f"ca_{name}_{uuid.uuid4().hex[:10]}"
    url = f"{PG_URL}/{db}"
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": url,
        "RATE_LIMIT": "off",
        **(extra_env or {}),
    }
    env.pop("DEBUG", None)
    env.pop("REDIS_URL", None)
    tmp = Path(tempfile.mkdtemp(prefix=f"compute-advisor-{name}-"))
    log = tmp / "server.log"
    proc = None
    pg_admin(f'CREATE DATABASE "{db}"')
    print(f"database {db} created", file=sys.stderr, flush=True)
    try:
        cli(env, "migrate")
        cli(env, "seeds", "load")
        key = cli(env, "keys", "create", "--name", name, "--scope", "admin").strip().splitlines()[-1].strip()
        port = free_port()
        argv = uvicorn_argv(port, ["--factory", "app.asgi:create_app"])
        argv[argv.index("--workers") + 1] = str(workers)
        proc = spawn(argv, log, env)
        wait_ready(proc, port, "/health/ready", log)
        yield Served(port, key, url, worker_pids(proc.pid), log)
    except BaseException:
        with contextlib.suppress(OSError):
            print(f"--- server log (tail) ---\n{log.read_text(errors='replace')[-4000:]}", file=sys.stderr)
        raise
    finally:
        if proc is not None:
            stop(proc)
        with contextlib.suppress(Exception):
            pg_admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            print(f"database {db} dropped", file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
