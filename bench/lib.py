"""What the bench scripts (``run.py``, ``fuzz.py``, ``loadtest.py``) share, in one place.

- **Processes**: every server or tool a script starts goes through ``spawn``, in its own session so
  that Ctrl-C reaches only the script, which then stops it by its id; ``run_main`` turns SIGINT,
  SIGTERM and SIGHUP into ``KeyboardInterrupt`` so that every ``finally`` runs (servers stopped,
  databases dropped, temp dirs removed) and then stops any child still running.
- **Serving the service**: ``python -m app.serve`` (uvicorn with the service's bounds) started like
  ``make run`` on a free port, waited for until it answers, with the environment, database set-up
  (migrate, seed, an ``admin`` key) and, for ``make fuzz`` and ``make loadtest``, a throwaway
  PostgreSQL database (``served``).
- **HTTP**: one way to build a request (``request_bytes``) and one way to read an answer
  (``read_response``), used by the load generators in ``bench/loadgen.py`` and by the blocking
  ``request`` for set-up calls and probes.
- **Description of the run**: machine, load average, resident memory of a process.

The scripts run as ``python bench/<script>.py``, so ``bench/`` is first on ``sys.path`` and they
import this module as ``lib``. Run them through ``make`` (which sets ``PYTHONDONTWRITEBYTECODE=1``)
or with ``python -B``, so that no ``bench/__pycache__`` lands in the tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
BIN = Path(sys.executable).parent  # .venv/bin (not resolved: the venv's python is a symlink)
HOST = "127.0.0.1"
#: what uvicorn is given to serve compute-advisor itself
SERVICE_APP = ["--factory", "app.asgi:create_app"]


def dumps(obj: Any) -> bytes:
    """Compact JSON, as a client would send it (and one body per line for wrk: it has no newline)."""
    return json.dumps(obj, separators=(",", ":")).encode()


# ----------------------------------------------------------------------------------------------- HTTP

#: what a request may fail with on the wire (TimeoutError is an OSError; ValueError: a malformed answer)
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    asyncio.IncompleteReadError,
    asyncio.LimitOverrunError,
    ValueError,
)


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    #: header names in lower case
    headers: dict[str, str]
    #: not in the repr: on Python 3.11, ``asyncio.run`` formats the finished task (its result included) when
    #: it checks its SIGINT handler, and the repr of a batch's 9.9 MB answer took ~55 ms of ``request``'s
    #: time after the last byte had arrived (the batch row's wall time measured the client, not the server)
    body: bytes = field(repr=False)
    #: bytes read from the connection, head and body
    size: int


def request_bytes(
    method: str, path: str, port: int, headers: dict[str, str] | None = None, body: bytes = b"", host: str = HOST
) -> bytes:
    """One HTTP/1.1 keep-alive request, ready to write.

    The load generators build these once per body and write them again and again, so that the
    client spends its CPU on sending, not on formatting. A body goes as JSON unless ``headers`` name
    another ``Content-Type``.
    """
    fields = dict(headers or {})
    if body and not any(name.lower() == "content-type" for name in fields):
        fields["Content-Type"] = "application/json"
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: keep-alive"]
    lines += [f"{name}: {value}" for name, value in fields.items()]
    if body or method in {"POST", "PUT", "PATCH"}:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def read_response(reader: asyncio.StreamReader) -> Response:
    """Read one answer. Only ``Content-Length`` framing: what uvicorn sends for every answer of the
    service and of the bare app; a chunked answer is refused (``ValueError``) rather than misread."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, _, rest = head.partition(b"\r\n")
    status = int(status_line.split(b" ", 2)[1])
    headers: dict[str, str] = {}
    for line in rest.split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if colon:
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise ValueError("a chunked answer: only Content-Length framing is read")
    length = int(headers.get("content-length") or 0)
    body = await reader.readexactly(length) if length else b""
    return Response(status, headers, body, len(head) + length)


async def _exchange(port: int, data: bytes, timeout: float) -> Response:
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            writer.write(data)
            return await read_response(reader)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def request(
    port: int,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> Response:
    """One request on a fresh connection, blocking: for set-up calls and probes, not for load.

    It runs the load generators' own request and response code on a private event loop, so that the
    bench has one HTTP client, not one per script. Raises one of ``TRANSPORT_ERRORS``.
    """
    return asyncio.run(_exchange(port, request_bytes(method, path, port, headers, body), timeout))


# ----------------------------------------------------------------------------------------------- processes

_children: list[subprocess.Popen[bytes]] = []


def spawn(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start a child in its own session, so that Ctrl-C reaches only us and we stop it by its id."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    _children.append(proc)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child and its whole process group (uvicorn's workers too): SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc in _children:
        _children.remove(proc)


def stop_all() -> None:
    """Stop every child still running, the last started first."""
    for proc in reversed(list(_children)):
        stop(proc)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run_main(body: Callable[[], int], interrupted: str) -> int:
    """Run a script's body so that every way out cleans up after it, and return its exit status.

    Ctrl-C, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` (SIGINT even when the script was started
    with it ignored), so they unwind through every ``finally`` like an error does; the script then
    says ``interrupted: <interrupted>`` and exits with 130. Whatever child is still running is stopped.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)
    try:
        return body()
    except KeyboardInterrupt:
        print(f"\ninterrupted: {interrupted}", file=sys.stderr)
        return 130
    finally:
        stop_all()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_ready(proc: subprocess.Popen[bytes], port: int, path: str, log: Path, timeout: float = 60) -> None:
    """Wait until ``GET path`` answers 200; fail with the log's tail when the server exits or is too slow."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        with contextlib.suppress(*TRANSPORT_ERRORS):
            if request(port, "GET", path, timeout=2).status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"server not ready on :{port}{path} after {timeout:.0f}s:\n{log.read_text()[-3000:]}")


#: the ASGI servers the bench can serve with (``SERVER``): both apps of one run get the same one
SERVERS = ("uvicorn", "granian")


def server_name() -> str:
    """``SERVER`` from the environment: ``uvicorn`` (the default, as ``make run``) or ``granian``."""
    name = (os.environ.get("SERVER") or "uvicorn").lower()
    if name not in SERVERS:
        raise SystemExit(f"SERVER={name!r}: one of {', '.join(SERVERS)}")
    if not (BIN / name).exists():
        raise SystemExit(f"SERVER={name}: not installed in the venv (`{BIN / 'pip'} install {name}`)")
    return name


def uvicorn_argv(port: int, target: list[str], workers: int = 1) -> list[str]:
    """The same server and settings as ``make run`` (no access log), loop and parser named explicitly."""
    return [
        str(BIN / "uvicorn"),
        *target,
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
    ]


def granian_argv(port: int, target: list[str], workers: int = 1) -> list[str]:
    """Granian serving the same target (uvicorn's ``--app-dir`` becomes ``--working-dir``): ASGI, HTTP/1,
    uvloop, no access log, its own default runtime threads."""
    argv = [str(BIN / "granian"), "--interface", "asgi", "--http", "1", "--loop", "uvloop", "--no-ws"]
    argv += ["--host", HOST, "--port", str(port), "--workers", str(workers), "--log-level", "warning"]
    rest = list(target)
    if "--app-dir" in rest:
        i = rest.index("--app-dir")
        argv += ["--working-dir", rest[i + 1]]
        del rest[i : i + 2]
    if "--factory" in rest:
        rest.remove("--factory")
        argv.append("--factory")
    return argv + rest


def service_argv(port: int, workers: int = 1) -> list[str]:
    """compute-advisor as production serves it (``deploy/serve``, ``make run``): ``python -m app.serve``,
    uvicorn with the service's bounded protocol and settings."""
    argv = [str(BIN / "python"), "-m", "app.serve", "--host", HOST, "--port", str(port)]
    return [*argv, "--workers", str(workers), "--log-level", "warning"]


def server_argv(port: int, target: list[str], workers: int = 1) -> list[str]:
    if target == SERVICE_APP and server_name() == "uvicorn":
        return service_argv(port, workers)
    return (granian_argv if server_name() == "granian" else uvicorn_argv)(port, target, workers)


def server_settings() -> str:
    """What the report says about the server both apps run on."""
    if server_name() == "granian":
        return (
            f"granian {_version('granian')}, ASGI interface, HTTP/1, uvloop, one worker, no access log, "
            "default runtime threads"
        )
    return (
        f"uvicorn {_version('uvicorn')}, one worker, uvloop {_version('uvloop')} + httptools "
        f"{_version('httptools')}, no access log"
    )


def _version(pkg: str) -> str:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def worker_pid(self) -> int:
        """The process that runs the app: uvicorn with one worker runs it itself, granian in a child."""
        kids: list[int] = []
        with contextlib.suppress(OSError):
            kids = [int(k) for k in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()]
        return kids[0] if server_name() == "granian" and kids else self.proc.pid


def start_server(target: list[str], log: Path, env: dict[str, str], ready_path: str, workers: int = 1) -> Server:
    """The bench's server (``SERVER``) serving ``target`` on a free port, once ``ready_path`` answers 200
    (stopped if it never does)."""
    port = free_port()
    proc = spawn(server_argv(port, target, workers), log, env)
    try:
        wait_ready(proc, port, ready_path, log)
    except BaseException:
        stop(proc)
        raise
    return Server(proc, port, log)


def service_env(database_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the service is set up and served in: this one, with its own database, no
    rate limits (the load would be refused), no debug pages and no shared Redis; and no bytecode
    written into the tree by the servers either."""
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": database_url,
        "RATE_LIMIT": "off",
        **(extra or {}),
    }
    env.pop("DEBUG", None)
    env.pop("REDIS_URL", None)
    return env


def cli(env: dict[str, str], *argv: str) -> str:
    """``compute-advisor argv…``; its standard output, or SystemExit with all it said."""
    proc = subprocess.run([str(BIN / "compute-advisor"), *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"compute-advisor {' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def prepare_database(env: dict[str, str], key_name: str) -> str:
    """Migrate and seed ``env``'s database with the CLI, as an operator would, and return a new
    ``admin`` key (the last line ``keys create`` prints)."""
    cli(env, "migrate")
    cli(env, "seeds", "load")
    return cli(env, "keys", "create", "--name", key_name, "--scope", "admin").strip().splitlines()[-1].strip()


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


def rss_mb(pid: int) -> dict[str, float]:
    """VmHWM (peak) and VmRSS (now) of one process, in MiB (from /proc: psutil is not installed)."""
    out: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0]) / 1024
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process, every thread of it, in seconds (``utime`` and ``stime`` of
    ``/proc/<pid>/stat``, in clock ticks: 10 ms resolution, so read it over a window of seconds)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces: field 3 on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------------------------- Redis


def redis_answers(url: str, timeout: float = 1.0) -> str | None:
    """``None`` when the Redis at ``url`` answers ``PING``, else why not (for the report's skip line)."""
    import redis  # the service's own client (REDIS_URL), so nothing more is installed for the bench

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    except redis.RedisError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    return None


def redis_keys(url: str, pattern: str) -> int:
    """How many keys match ``pattern`` (``SCAN``): whether the service counted in Redis at all."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=5)
    try:
        return sum(1 for _ in client.scan_iter(match=pattern, count=1000))
    finally:
        client.close()


# ----------------------------------------------------------------------------------------------- PostgreSQL

PG_URL = os.environ.get("PG_URL", "postgresql://postgres@127.0.0.1:5432").rstrip("/")
PG_ADMIN_DB = os.environ.get("PG_ADMIN_DB", "test")


def pg_admin(work: Callable[[Any], Awaitable[T]]) -> T:
    """``work(connection)`` on the admin database ``PG_ADMIN_DB``, with asyncpg (the service's own
    driver, so nothing more is installed for the bench)."""
    import asyncpg  # type: ignore[import-untyped]  # no stubs; the service uses it through SQLAlchemy

    async def go() -> T:
        conn = await asyncpg.connect(f"postgres://{PG_URL.split('://', 1)[1]}/{PG_ADMIN_DB}", timeout=10)
        try:
            return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(go())


def pg_version() -> str:
    return str(pg_admin(lambda conn: conn.fetchval("SHOW server_version")))


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


@contextlib.contextmanager
def served(name: str, workers: int = 2, extra_env: dict[str, str] | None = None) -> Iterator[Served]:
    """compute-advisor served by uvicorn (``workers`` workers, ``RATE_LIMIT=off``) on a fresh
    PostgreSQL database ``ca_<name>_<random>`` on ``PG_URL`` (the ``postgres`` role must be allowed to
    create databases), migrated and seeded with the CLI, with an ``admin`` key.

    On the way out — normal, error, Ctrl-C or SIGTERM (see ``run_main``) — the server is stopped (its
    whole process group) and the database dropped; on an error the server log's tail is printed.
    """
    db = f"ca_{name}_{uuid.uuid4().hex[:10]}"
    url = f"{PG_URL}/{db}"
    env = service_env(url, extra_env)
    with tempfile.TemporaryDirectory(prefix=f"compute-advisor-{name}-") as tmp:
        log = Path(tmp) / "server.log"
        server = None
        pg_admin(lambda conn: conn.execute(f'CREATE DATABASE "{db}"'))
        print(f"database {db} created", file=sys.stderr, flush=True)
        try:
            key = prepare_database(env, name)
            server = start_server(SERVICE_APP, log, env, "/health/ready", workers)
            yield Served(server.port, key, url, worker_pids(server.proc.pid), log)
        except BaseException:
            with contextlib.suppress(OSError):
                print(f"--- server log (tail) ---\n{log.read_text(errors='replace')[-4000:]}", file=sys.stderr)
            raise
        finally:
            if server is not None:
                stop(server.proc)
            with contextlib.suppress(Exception):
                pg_admin(lambda conn: conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))
                print(f"database {db} dropped", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------- the machine


def machine() -> list[str]:
    """Markdown bullets naming the CPU, memory, kernel and the versions that shape the figures."""
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "unknown"
    with contextlib.suppress(OSError, IndexError):
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem = f"{kb / 1024 / 1024:.1f} GiB"

    version = _version
    return [
        f"- CPUs: {os.cpu_count()} (usable: {len(os.sched_getaffinity(0))}), model: {cpu}",
        f"- memory: {mem}; kernel {platform.release()}",
        f"- Python {platform.python_version()}; litestar {version('litestar')}, uvicorn {version('uvicorn')}, "
        f"granian {version('granian')}, "
        f"uvloop {version('uvloop')}, httptools {version('httptools')}, msgspec {version('msgspec')}, "
        f"pydantic {version('pydantic')}, SQLAlchemy {version('sqlalchemy')}, aiosqlite {version('aiosqlite')}",
    ]


def loadavg() -> str:
    """1, 5 and 15 minute load averages: whether other processes competed for the CPUs."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def codes_text(codes: dict[str, int]) -> str:
    """Status counts as ``200×1234, 304×5``."""
    return ", ".join(f"{k}×{v}" for k, v in sorted(codes.items())) or "none"
