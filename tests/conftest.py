"""Shared fixtures and helpers: throwaway databases on SQLite and PostgreSQL, API clients, Redis key
namespaces and free ports — each safe when the suite runs on several pytest-xdist workers at once
(``make test`` does: ``-n``, see the Makefile).

Databases (``databases``, one ``Databases`` a session, i.e. a worker):
- ``databases.new(backend)``: an empty database (a new SQLite file, a new PostgreSQL database);
- ``databases.migrated(backend)``: a fresh database at the migration head, no knowledge loaded;
- ``databases.seeded(backend)``: a fresh database at the head holding the shipped seeds (one knowledge
  version, note "test seeds"), as ``migrate(url)`` then ``load_seeds(url)`` would leave it.
  ``migrated`` and ``seeded`` copy a template built on first use (once per worker): a file copy for
  SQLite, ``CREATE DATABASE … TEMPLATE`` for PostgreSQL — milliseconds instead of a second and a half.
  SQLite takes ``at=path`` for a test that needs the file at a path of its own.
Use ``migrate`` and ``load_seeds`` themselves only where the migration or the load is what is tested
(or the seeds differ; ``load_seeds`` reads the shipped ones once per process, ``shipped_seeds()``).
SQLite files stay in pytest's temp directory. A PostgreSQL database that a test made — in its body or
in a function-scoped fixture — is dropped once the test ends, on a thread of its own while the next
test runs; those of session- and module-scoped fixtures at the end of the session.

Fixtures on top of it: ``backend`` (``sqlite`` and ``postgresql``), ``empty_db`` (migrated, per test),
``seeded_db`` (seeded, per session and backend: read-mostly tests only), ``client`` (an ``admin`` client
on ``seeded_db``), ``sqlite_client`` (on a seeded SQLite database of its own). ``make_client`` and
``create_key`` / ``admin_key`` build clients and keys on any of them.

PostgreSQL tests run against 127.0.0.1:5432 (user postgres, trust auth), each in a database of
its own. Where no PostgreSQL answers they skip with the reason — unless REQUIRE_POSTGRES=1
(set by .ci/run), where they fail instead. The same holds for Redis (``redis_namespace``: a key
prefix of the test's own, deleted afterwards; REQUIRE_REDIS=1).

Parallel runs: never bind a fixed port (``free_port()``), never write into the repository (temp paths
from ``tmp_path``; an autouse check fails a test that creates ``compute-advisor.db`` or ``.dev-api-key``
there), never share a database or a Redis key with another test. Mark a test that takes ten seconds or
more ``@pytest.mark.slow`` (a module of them: ``pytestmark = pytest.mark.slow``): slow tests run first,
so that the workers overlap them instead of waiting for the last one. A test that needs the machine to
itself (timing) has no place in the suite: ``make bench`` is for that.

Served instances: ``Server`` (uvicorn on a free port, one worker, as ``make run`` serves it, waited for
until ready) and ``served`` (one ``Server`` for the session, on a seeded SQLite database of its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
from alembic import command
from litestar.testing import TestClient

from app.asgi import create_app
from app.cli import alembic_config
from app.kb import keys, seeds
from app.openapi.generators import PROFILE_EXAMPLE
from app.settings import PROJECT_ROOT, Settings

PG_HOST = os.environ.get("TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("TEST_PG_PORT", "5432"))
PG_ADMIN_URL = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test"
REDIS_URL = "redis://127.0.0.1:6379/15"
SEEDS = PROJECT_ROOT / "seeds"
BACKENDS = ["sqlite", "postgresql"]
#: the article's platform scenario: a 20-person team training often, no ops team
SME_PROFILE = dict(PROFILE_EXAMPLE)
#: this process's pytest-xdist worker ("gw0", "gw1", …), "main" when the suite runs in one process
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the system picks it; never a fixed one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_available() -> str | None:
    """None when PostgreSQL answers, else why not."""
    import asyncpg

    async def probe() -> None:
        conn = await asyncpg.connect(PG_ADMIN_URL.replace("postgresql://", "postgres://"), timeout=3)
        await conn.close()

    try:
        asyncio.run(probe())
        return None
    except Exception as exc:
        return f"PostgreSQL at {PG_HOST}:{PG_PORT} does not answer ({type(exc).__name__}: {exc})"


_PG_PROBLEM: str | bool | None = False


def require_backend(backend: str) -> None:
    global _PG_PROBLEM
    if backend != "postgresql":
        return
    if _PG_PROBLEM is False:
        _PG_PROBLEM = _pg_available()
    if _PG_PROBLEM:
        if os.environ.get("REQUIRE_POSTGRES") == "1":
            pytest.fail(f"REQUIRE_POSTGRES=1 but {_PG_PROBLEM}")
        pytest.skip(str(_PG_PROBLEM))


#: the npm tools pinned in clients/typescript/package.json (the TypeScript client, Redocly CLI)
NODE_TOOLS = PROJECT_ROOT / "clients" / "typescript"


def require_node_tool(name: str) -> Path:
    """The npm-installed command ``name`` of clients/typescript (``npm ci`` there), or a skip with the reason;
    a failure instead under ``REQUIRE_NODE=1`` (``.ci/run`` sets it after installing them)."""
    tool = NODE_TOOLS / "node_modules" / ".bin" / name
    problem = None
    if shutil.which("node") is None:
        problem = "node is not on PATH (apt-get install nodejs npm)"
    elif not tool.exists():
        problem = f"{name} is not installed: run `npm ci` in clients/typescript"
    if problem:
        if os.environ.get("REQUIRE_NODE") == "1":
            pytest.fail(f"REQUIRE_NODE=1 but {problem}")
        pytest.skip(problem)
    return tool


def _pg_admin(sql: str) -> None:
    import asyncpg

    async def run() -> None:
        conn = await asyncpg.connect(PG_ADMIN_URL.replace("postgresql://", "postgres://"))
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


class _Dropper:
    """Drops PostgreSQL databases on a thread of its own, over one connection, while the tests go on."""

    def __init__(self) -> None:
        self._names: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    def drop(self, names: Sequence[str]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="drop-databases")
            self._thread.start()
        for name in names:
            self._names.put(name)

    async def _run(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(PG_ADMIN_URL.replace("postgresql://", "postgres://"))
        try:
            while (name := await asyncio.to_thread(self._names.get)) is not None:
                try:
                    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                except Exception as exc:
                    self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            await conn.close()

    def close(self) -> None:
        """Wait until every database handed over is dropped."""
        if self._thread is not None:
            self._names.put(None)
            self._thread.join()
            self._thread = None


class Databases:
    """Creates throwaway databases — empty, migrated or seeded — and drops them at the end: those a test
    made (itself or through function-scoped fixtures) once it ends, in the background; those of longer-lived
    fixtures, and the templates, at the end of the session."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        #: PostgreSQL databases not yet handed to the dropper, in the order they were made
        self.pg_names: list[str] = []
        #: (backend, "migrated" | "seeded") -> the URL of the template the copies are made from
        self._templates: dict[tuple[str, str], str] = {}
        self._template_names: list[str] = []
        self._dropper = _Dropper()

    def new(self, backend: str) -> str:
        """An empty database: nothing migrated."""
        require_backend(backend)
        if backend == "sqlite":
            return f"sqlite:///{self.tmp / (self._name() + '.db')}"
        return self._create_pg("", self.pg_names)

    def _name(self) -> str:
        return f"ca_test_{WORKER}_{uuid.uuid4().hex[:12]}"

    def _create_pg(self, options: str, names: list[str]) -> str:
        name = self._name()
        _pg_admin(f'CREATE DATABASE "{name}"{options}')
        names.append(name)
        return f"postgresql://postgres@{PG_HOST}:{PG_PORT}/{name}"

    def migrated(self, backend: str, *, at: Path | None = None) -> str:
        """A fresh database at the migration head, holding no knowledge."""
        return self._copy(backend, "migrated", at)

    def seeded(self, backend: str, *, at: Path | None = None) -> str:
        """A fresh database at the migration head holding the shipped seeds (one knowledge version)."""
        return self._copy(backend, "seeded", at)

    def _template(self, backend: str, stage: str) -> str:
        if (backend, stage) not in self._templates:
            require_backend(backend)
            if backend == "sqlite":
                url = f"sqlite:///{self.tmp / ('template-' + stage + '.db')}"
            else:
                url = self._create_pg("", self._template_names)
            migrate(url)
            if stage == "seeded":
                load_seeds(url)
            self._templates[backend, stage] = url
        return self._templates[backend, stage]

    def _copy(self, backend: str, stage: str, at: Path | None) -> str:
        template = self._template(backend, stage)
        if backend == "sqlite":
            path = at if at is not None else Path(self.new("sqlite").removeprefix("sqlite:///"))
            with (
                contextlib.closing(sqlite3.connect(template.removeprefix("sqlite:///"))) as source,
                contextlib.closing(sqlite3.connect(path)) as target,
            ):
                source.backup(target)  # a consistent copy, whatever the template's journal holds
            return f"sqlite:///{path}"
        if at is not None:
            raise ValueError("at= names an SQLite file")
        return self._create_pg(f' TEMPLATE "{template.rsplit("/", 1)[1]}"', self.pg_names)

    def drop_since(self, made: int) -> None:
        """Hand the PostgreSQL databases made after the first ``made`` to the dropper."""
        self._dropper.drop(self.pg_names[made:])
        del self.pg_names[made:]

    def drop_all(self) -> None:
        self.drop_since(0)
        self._dropper.drop(self._template_names)
        self._template_names.clear()
        self._dropper.close()
        assert not self._dropper.errors, f"databases not dropped: {self._dropper.errors}"


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    dbs = Databases(tmp_path_factory.mktemp("db"))
    yield dbs
    dbs.drop_all()


@pytest.fixture(autouse=True)
def _one_database_configuration_per_app() -> None:
    """advanced-alchemy keeps the keys of every database configuration made in the process in class-level sets
    (so that two databases of one app never share a key) and finds a free key by recursing once per
    configuration made before: a worker of this suite makes thousands of apps, each of one database, and would
    reach Python's recursion limit. The apps of earlier tests are gone, so their keys are forgotten."""
    from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

    for registry in (
        "_SESSION_SCOPE_KEY_REGISTRY",
        "_ENGINE_APP_STATE_KEY_REGISTRY",
        "_SESSIONMAKER_APP_STATE_KEY_REGISTRY",
    ):
        getattr(SQLAlchemyAsyncConfig, registry).clear()


@pytest.fixture(autouse=True)
def _drop_the_tests_databases(databases: Databases) -> Iterator[None]:
    # fixtures of a wider scope are set up before this one: what is made after this point is the test's own
    made = len(databases.pg_names)
    yield
    databases.drop_since(made)


def migrate(url: str) -> None:
    command.upgrade(alembic_config(Settings(database_url=url)), "head")


@functools.cache
def shipped_seeds() -> seeds.SeedSet:
    """The shipped seed files, read and validated once per process (nothing writes to ``seeds/``)."""
    return seeds.read_seeds(SEEDS)


def load_seeds(url: str, path: Path = SEEDS, note: str = "test seeds") -> seeds.Plan:
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    seed_set = shipped_seeds() if path == SEEDS else seeds.read_seeds(path)

    async def run() -> seeds.Plan:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                return await seeds.apply(session, seed_set, note=note)
        finally:
            await engine.dispose()

    return asyncio.run(run())


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return str(request.param)


@pytest.fixture
def empty_db(databases: Databases, backend: str) -> str:
    """A fresh, migrated database with no knowledge loaded."""
    return databases.migrated(backend)


@pytest.fixture(scope="session", params=BACKENDS)
def seeded_db(request: pytest.FixtureRequest, databases: Databases) -> str:
    """A migrated database holding the reference seeds, shared by read-mostly tests."""
    return databases.seeded(request.param)


def create_key(
    url: str, scopes: Sequence[str], name: str = "test", actor: str = "tests", org: str | None = None
) -> tuple[int, str]:
    """Create an API key in the database at ``url`` (of organisation ``org``, made if it does not exist yet):
    (id, plaintext)."""
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    from app.kb import orgs
    from app.kb import service_records as sr

    async def run() -> tuple[int, str]:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                if org is not None and await session.get(sr.Organisation, org) is None:
                    await orgs.create(session, org, name=None, actor=actor)
                created = await keys.create(session, name=name, scopes=scopes, actor=actor, org=org)
                return created.row.id, created.key
        finally:
            await engine.dispose()

    return asyncio.run(run())


_ADMIN_KEYS: dict[str, str] = {}


def admin_key(url: str) -> str:
    """One ``admin`` key per test database, made on first use."""
    if url not in _ADMIN_KEYS:
        _ADMIN_KEYS[url] = create_key(url, ["admin"], name="test admin")[1]
    return _ADMIN_KEYS[url]


def make_client(
    url: str, *, api_key: str | None = "admin", settings: Settings | None = None, **kwargs: object
) -> TestClient:  # type: ignore[type-arg]
    """A client of a fresh app on ``url`` that sends an ``admin`` key (``api_key="admin"``), the given key,
    or none (``api_key=None``)."""
    # no rate limit unless a test asks for one (tests/test_rate_limits.py); no heap freezing (tests/test_heap.py)
    settings = settings or Settings(database_url=url, knowledge_refresh_seconds=0.2, rate_limit=None, gc_freeze=False)
    client = TestClient(create_app(settings, **kwargs))  # type: ignore[arg-type]
    if api_key is not None:
        client.headers["X-API-Key"] = admin_key(url) if api_key == "admin" else api_key
    return client


@pytest.fixture
def client(seeded_db: str) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with make_client(seeded_db) as c:
        yield c


@pytest.fixture
def sqlite_client(databases: Databases) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with make_client(databases.seeded("sqlite")) as c:
        yield c


#: seconds a served instance may take to start or to become ready again
SERVER_DEADLINE = 60.0


class Server:
    """compute-advisor served by uvicorn on a free port, one worker, as ``make run`` serves it."""

    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Server:
        env = {**os.environ, "DATABASE_URL": self.url, "RATE_LIMIT": "off", "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("REDIS_URL", None)
        argv = [sys.executable, "-m", "app.serve", "--port", str(self.port)]  # as deploy/serve and make run
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*argv, "--no-access-log", "--log-level", "warning"],
                cwd=PROJECT_ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            ready_within(self, SERVER_DEADLINE, "the server starts")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def get(self, path: str, key: str | None = None) -> httpx.Response:
        headers = {"X-API-Key": key} if key else {}
        return httpx.get(self.base + path, headers=headers, timeout=30)


def ready_within(server: Server, deadline: float, what: str) -> float:
    """Poll ``/health/ready`` until it answers 200; the seconds it took (fails after ``deadline``)."""
    start = time.monotonic()
    last: Any = None
    while time.monotonic() - start < deadline:
        if server.proc is not None and server.proc.poll() is not None:
            pytest.fail(f"the server exited: {server.log.read_text(errors='replace')[-3000:]}")
        try:
            last = httpx.get(server.base + "/health/ready", timeout=10)
            if last.status_code == 200:
                return time.monotonic() - start
        except httpx.TransportError as exc:
            last = exc
        time.sleep(0.05)
    pytest.fail(f"not within {deadline} s: {what}; last answer: {getattr(last, 'text', last)}")


@pytest.fixture(scope="session")
def served(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One ``Server`` for the session (a worker) on a seeded SQLite database of its own, for tests that
    read, or add only what no other test counts; each makes its own key (``create_key(served.url, …)``)."""
    with Server(databases.seeded("sqlite"), tmp_path_factory.mktemp("served") / "server.log") as server:
        yield server


class RedisNamespace(NamedTuple):
    """A Redis client and a key prefix of one test's own (``rate_limit_namespace``, ``RATE_LIMIT_NAMESPACE``)."""

    client: Any
    prefix: str


@pytest.fixture
def redis_namespace() -> Iterator[RedisNamespace]:
    """Redis at ``REDIS_URL`` and a key prefix of this test's own, whose keys are deleted afterwards. Skips
    where Redis does not answer, unless REQUIRE_REDIS=1 (``.ci/run``), where it fails."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except Exception as exc:
        client.close()
        why = f"Redis at {REDIS_URL} does not answer ({type(exc).__name__}: {exc})"
        if os.environ.get("REQUIRE_REDIS") == "1":
            pytest.fail(f"REQUIRE_REDIS=1 but {why}")
        pytest.skip(why)
    prefix = f"compute-advisor-test:{WORKER}:{uuid.uuid4().hex}"
    try:
        yield RedisNamespace(client, prefix)
    finally:
        for key in client.scan_iter(match=f"{prefix}*"):
            client.delete(key)
        client.close()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first, the rest in pytest's order: on several workers (``--dist
    worksteal``) the long ones are then spread and overlapped, and the run does not end on one alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: each group keeps its order


#: files of a working copy that ``make run`` creates and no test may (several runs may share the tree)
REPOSITORY_STATE = (PROJECT_ROOT / "compute-advisor.db", PROJECT_ROOT / ".dev-api-key")


@pytest.fixture(autouse=True)
def _leaves_the_repository_alone() -> Iterator[None]:
    absent = [p for p in REPOSITORY_STATE if not p.exists()]
    yield
    created = [p.name for p in absent if p.exists()]
    assert not created, f"the test created {created} in the working copy: use tmp_path"
