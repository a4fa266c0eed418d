"""Alembic migrations on both databases: pytest-alembic's built-in checks, and a plain round trip.

The built-in tests (single head, upgrade, model definitions match the DDL, up/down consistency)
run once per backend through the ``alembic_engine`` fixture below, which hands pytest-alembic an
*async* engine: ``migrations/env.py`` must accept it (and a sync connection) as the handed-in
connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from conftest import BACKENDS, Databases, require_backend
from pytest_alembic.plugin.error import AlembicTestFailure
from pytest_alembic.tests import (
    test_model_definitions_match_ddl,
    test_single_head_revision,
    test_up_down_consistency,
    test_upgrade,
)
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.cli import alembic_config as make_alembic_config
from app.kb.models import Base
from app.settings import PROJECT_ROOT, Settings

__all__ = [
    "test_model_definitions_match_ddl",
    "test_single_head_revision",
    "test_up_down_consistency",
    "test_upgrade",
]

KB_TABLES = {
    "api_keys",
    "assumptions",
    "audit_events",
    "availability_rules",
    "data_security_levels",
    "exchange_rates",
    "idempotency_keys",
    "providers",
    "gpu_models",
    "knowledge_versions",
    "organisations",
    "org_prices",
    "price_items",
    "recommendations",
    "watches",
    "watch_deliveries",
    "regions",
    "scenario_rules",
    "server_skus",
}


@pytest.fixture(params=BACKENDS)
def alembic_engine(request: pytest.FixtureRequest, databases: Databases) -> Iterator[AsyncEngine]:
    """A fresh, empty database per test, on SQLite and on PostgreSQL, as an async engine."""
    require_backend(request.param)
    url = databases.new(request.param)
    engine = create_async_engine(Settings(database_url=url).async_database_url)
    try:
        yield engine
    finally:
        asyncio.run(engine.dispose())


@pytest.fixture
def alembic_config() -> dict[str, str]:
    return {"file": str(PROJECT_ROOT / "alembic.ini")}


def _tables_and_revision(url: str) -> tuple[set[str], str | None]:
    async def run() -> tuple[set[str], str | None]:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with engine.connect() as conn:
                names = set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))
                revision = None
                if "alembic_version" in names:
                    revision = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar()
                return names, revision
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_the_built_in_tests_see_an_async_engine_on_each_backend(alembic_engine: AsyncEngine, request) -> None:
    backend = request.node.callspec.params["alembic_engine"]
    assert isinstance(alembic_engine, AsyncEngine)
    expected = {"sqlite": "sqlite", "postgresql": "postgresql"}[backend]
    assert alembic_engine.dialect.name == expected


def test_pytest_alembic_runner_migrates_through_the_handed_in_async_engine(alembic_runner, alembic_engine) -> None:
    """env.py runs against the engine pytest-alembic hands in, not against DATABASE_URL."""
    alembic_runner.migrate_up_to("heads")
    url = alembic_engine.url.render_as_string(hide_password=False)
    plain = url.replace("sqlite+aiosqlite:", "sqlite:").replace("postgresql+asyncpg:", "postgresql:")
    tables, revision = _tables_and_revision(plain)
    assert tables >= KB_TABLES | {"alembic_version"}
    assert revision == ScriptDirectory.from_config(make_alembic_config(Settings())).get_current_head()
    alembic_runner.migrate_down_to("base")
    tables, revision = _tables_and_revision(plain)
    assert tables & KB_TABLES == set()
    assert revision is None


def test_model_definitions_match_ddl_notices_a_drift(alembic_runner, alembic_engine) -> None:
    """The built-in comparison is live: a database that lost an index no longer matches the models."""
    alembic_runner.migrate_up_to("heads")

    async def drop_index() -> None:
        async with alembic_engine.begin() as conn:
            await conn.execute(sa.text("DROP INDEX ix_recommendations_created_at"))
        await alembic_engine.dispose()

    asyncio.run(drop_index())
    with pytest.raises(AlembicTestFailure, match="ix_recommendations_created_at"):
        test_model_definitions_match_ddl(alembic_runner)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_upgrade_downgrade_upgrade_with_the_cli_config(databases: Databases, backend_name: str) -> None:
    url = databases.new(backend_name)
    cfg = make_alembic_config(Settings(database_url=url))
    script = ScriptDirectory.from_config(cfg)
    head = script.get_current_head()
    assert [r.revision for r in script.walk_revisions()][-1] == "0001"

    command.upgrade(cfg, "head")
    tables, revision = _tables_and_revision(url)
    assert tables == KB_TABLES | {"alembic_version"}
    assert revision == head

    command.downgrade(cfg, "base")
    tables, revision = _tables_and_revision(url)
    assert tables & KB_TABLES == set()
    assert revision is None

    command.upgrade(cfg, "head")
    tables, revision = _tables_and_revision(url)
    assert tables == KB_TABLES | {"alembic_version"}
    assert revision == head


def test_the_migration_creates_every_table_of_the_models() -> None:
    assert set(Base.metadata.tables) == KB_TABLES


def _run_sql(url: str, *statements: str) -> list[list[tuple[object, ...]]]:
    """Run ``statements`` in one transaction; the rows each SELECT returns."""

    async def run() -> list[list[tuple[object, ...]]]:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with engine.begin() as conn:
                out = []
                for sql in statements:
                    result = await conn.execute(sa.text(sql))
                    out.append([tuple(r) for r in result] if result.returns_rows else [])
                return out
        finally:
            await engine.dispose()

    return asyncio.run(run())


PRICE_COLUMNS = (
    "option, provider, item, subject, gpu_model, plan, unit, low, high, currency, region, valid_from, source, "
    "source_quality"
)


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_0005_renames_gcp_commitments_and_its_downgrade_drops_what_0004_cannot_hold(
    databases: Databases, backend_name: str
) -> None:
    """Up: GCP's reserved_1y rows become committed_use_1y (the plan as sold), free-form plans are
    accepted, regions and availability rules can be stored. Down: the rename is undone, rows with plans
    the old CHECK refuses are dropped, and so are the two tables."""
    require_backend(backend_name)
    url = databases.new(backend_name)
    cfg = make_alembic_config(Settings(database_url=url))
    command.upgrade(cfg, "0004")
    row = "'rented_gpu_instances', '{p}', 'instance_hour', 'a3-highgpu-8g', 'h100_sxm', '{plan}', 'per_server_hour', 1, 1, 'USD', 'us-central1', '2025-03-06', 't', 'verified'"  # noqa: E501
    _run_sql(
        url,
        f"INSERT INTO price_items ({PRICE_COLUMNS}) VALUES ({row.format(p='gcp', plan='reserved_1y')})",
        f"INSERT INTO price_items ({PRICE_COLUMNS}) VALUES ({row.format(p='aws', plan='reserved_1y')})",
    )

    command.upgrade(cfg, "0005")
    (plans,) = _run_sql(url, "SELECT provider, plan FROM price_items ORDER BY provider")
    assert plans == [("aws", "reserved_1y"), ("gcp", "committed_use_1y")]
    free_form = row.format(p="aws", plan="savings_plan_3y").replace("'2025-03-06'", "'2026-12-03'")
    _run_sql(
        url,
        f"INSERT INTO price_items ({PRICE_COLUMNS}, interconnect, min_kw) VALUES ({free_form}, 'efa', 250)",
        "INSERT INTO regions (key, name, kind, source) VALUES ('global', 'Global', 'global', 't')",
    )
    with pytest.raises(sa.exc.IntegrityError):  # the CHECK on interconnect
        bad = row.format(p="oci", plan="x")
        _run_sql(url, f"INSERT INTO price_items ({PRICE_COLUMNS}, interconnect) VALUES ({bad}, 'nvlink')")

    command.downgrade(cfg, "0004")
    (plans,) = _run_sql(url, "SELECT provider, plan FROM price_items ORDER BY provider, plan")
    assert plans == [("aws", "reserved_1y"), ("gcp", "reserved_1y")]
    tables, revision = _tables_and_revision(url)
    assert revision == "0004" and not tables & {"regions", "availability_rules"}
