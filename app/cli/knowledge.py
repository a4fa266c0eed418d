"""``knowledge version``: which knowledge version the database serves, for an admin checking a deploy."""

from __future__ import annotations

import asyncio
import datetime as dt

import click

from app.cli.common import Group, pass_settings, tally_of
from app.kb import models as m
from app.kb import snapshot
from app.kb.db import transaction
from app.settings import Settings


@click.group(name="knowledge", cls=Group)
def group() -> None:
    """Knowledge versions (one per seed load that changed something)."""


async def _latest(settings: Settings) -> m.KnowledgeVersion | None:
    async with transaction(settings) as session:
        return await snapshot.latest_version(session)


@group.command()
@pass_settings
def version(settings: Settings) -> int:
    """Show the newest knowledge version (exit status 1 when there is none)."""
    latest = asyncio.run(_latest(settings))
    if latest is None:
        click.echo("no knowledge version: run `compute-advisor seeds load`")
        return 1
    counts = f"  {tally_of(latest.summary)}" if latest.summary else ""  # a data migration's version has none
    created = latest.created_at if latest.created_at.tzinfo is None else latest.created_at.astimezone(dt.UTC)
    click.echo(f"{latest.label}  {created:%Y-%m-%d %H:%M:%S} UTC  {latest.note}{counts}")
    return 0
