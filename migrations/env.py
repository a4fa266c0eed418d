"""Alembic environment: async engines, the URL from DATABASE_URL (or a connection handed in)."""

from __future__ import annotations

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.kb.models import Base
from app.settings import Settings

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(engine: AsyncEngine) -> None:
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_configure)
            await connection.commit()
    finally:
        # also for an engine handed in (it stays usable): its pooled connections belong to this event loop
        await engine.dispose()


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or Settings.from_env().async_database_url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connectable = config.attributes.get("connection")
    if isinstance(connectable, AsyncEngine):  # e.g. pytest-alembic's alembic_engine
        asyncio.run(_run_async(connectable))
    elif isinstance(connectable, Engine):
        with connectable.connect() as connection:
            _configure(connection)
            connection.commit()
    elif connectable is not None:  # a sync Connection handed in by the CLI or by tests
        _configure(connectable)
    else:
        url = config.get_main_option("sqlalchemy.url") or Settings.from_env().async_database_url
        asyncio.run(_run_async(create_async_engine(url)))


if context.is_offline_mode():
    run_offline()
else:
    run_online()
