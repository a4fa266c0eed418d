"""Shared fixtures: fresh databases on SQLite and PostgreSQL, migrated and seeded, and API clients.

PostgreSQL tests run against 127.0.0.1:5432 (user postgres, trust auth), each in a database of
its own. Where no PostgreSQL answers they skip with the reason — unless REQUIRE_POSTGRES=1
(set by .ci/run), where they fail instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from alembic import command
from litestar.testing import TestClient

from app.asgi import create_app
from app.cli import alembic_config
from app.kb import keys, seeds
from app.lib.openapi_generators import PROFILE_EXAMPLE
from app.settings import PROJECT_ROOT, Settings

PG_HOST = os.environ.get("TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("TEST_PG_PORT", "5432"))
PG_ADMIN_URL = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test"
SEEDS = PROJECT_ROOT / "seeds"
BACKENDS = ["sqlite", "postgresql"]
#: the article's platform scenario: a 20-person team training often, no ops team
SME_PROFILE = dict(PROFILE_EXAMPLE)


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


class Databases:
    """Creates throwaway databases and drops them at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.pg_names: list[str] = []

    def new(self, backend: str) -> str:
        require_backend(backend)
        name = f"ca_test_{uuid.uuid4().hex[:12]}"
        if backend == "sqlite":
            return f"sqlite:///{self.tmp / (name + '.db')}"
        _pg_admin(f'CREATE DATABASE "{name}"')
        self.pg_names.append(name)
        return f"postgresql://postgres@{PG_HOST}:{PG_PORT}/{name}"

    def drop_all(self) -> None:
        for name in self.pg_names:
            _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    dbs = Databases(tmp_path_factory.mktemp("db"))
    yield dbs
    dbs.drop_all()


def migrate(url: str) -> None:
    command.upgrade(alembic_config(Settings(database_url=url)), "head")


def load_seeds(url: str, path: Path = SEEDS, note: str = "test seeds") -> seeds.Plan:
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    async def run() -> seeds.Plan:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                return await seeds.apply(session, seeds.read_seeds(path), note=note)
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
    url = databases.new(backend)
    migrate(url)
    return url


@pytest.fixture(scope="session", params=BACKENDS)
def seeded_db(request: pytest.FixtureRequest, databases: Databases) -> str:
    """A migrated database holding the reference seeds, shared by read-mostly tests."""
    url = databases.new(request.param)
    migrate(url)
    load_seeds(url)
    return url


def create_key(url: str, scopes: Sequence[str], name: str = "test", actor: str = "tests") -> tuple[int, str]:
    """Create an API key in the database at ``url``: (id, plaintext)."""
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    async def run() -> tuple[int, str]:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                created = await keys.create(session, name=name, scopes=scopes, actor=actor)
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
    # no rate limit unless a test asks for one (tests/test_rate_limits.py)
    settings = settings or Settings(database_url=url, knowledge_refresh_seconds=0.2, rate_limit=None)
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
    url = databases.new("sqlite")
    migrate(url)
    load_seeds(url)
    with make_client(url) as c:
        yield c
