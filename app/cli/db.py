"""``migrate``: bring the database schema to a revision with Alembic.

Alembic is configured by ``app.kb.db.alembic_config``, the same wiring the service and the tests use,
so the CLI migrates exactly the database ``DATABASE_URL`` names.
"""

from __future__ import annotations

import click
from alembic import command

from app.cli.common import pass_settings
from app.kb.db import alembic_config
from app.settings import Settings


def safe_url(url: str) -> str:
    """The URL without its credentials, so that a password never lands in a terminal log."""
    head, sep, tail = url.rpartition("@")
    return f"{head.split('://')[0]}://…@{tail}" if sep else url


@click.command()
@click.argument("revision", default="head")
@pass_settings
def migrate(settings: Settings, revision: str) -> int:
    """Apply Alembic migrations to DATABASE_URL. REVISION defaults to head."""
    command.upgrade(alembic_config(settings), revision)
    click.echo(f"database at {revision}: {safe_url(settings.database_url)}")
    return 0
