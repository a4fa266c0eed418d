"""``recommendations prune``: delete stored recommendations older than the retention period.

The period is ``--days N`` or, without it, ``RECOMMENDATION_RETENTION_DAYS``; with neither only the
Idempotency-Key claims older than 24 h are deleted. One transaction, audited
(``recommendations.prune``); ``--dry-run`` counts and writes nothing. Run it from cron or a timer.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import click

from app.cli.common import Group, actor_option, pass_settings
from app.kb import recommendations
from app.kb.db import transaction
from app.settings import Settings


@click.group(name="recommendations", cls=Group)
def group() -> None:
    """Stored recommendations: retention."""


async def _prune(settings: Settings, days: int | None, actor: str, dry_run: bool) -> recommendations.Pruned:
    async with transaction(settings) as session:
        return await recommendations.prune(
            session, days=days, now=dt.datetime.now(dt.UTC), actor=actor, dry_run=dry_run
        )


@group.command()
@click.option(
    "--days",
    type=click.IntRange(1, 36_500),
    help="Delete recommendations created more than this many days ago "
    "(default: RECOMMENDATION_RETENTION_DAYS; neither: keep them all).",
)
@click.option("--dry-run", is_flag=True, help="Count what would be deleted; delete nothing.")
@actor_option("prunes")
@pass_settings
def prune(settings: Settings, days: int | None, dry_run: bool, actor: str) -> int:
    """Delete stored recommendations older than the retention period, and expired Idempotency-Keys."""
    days = days if days is not None else settings.recommendation_retention_days
    done = asyncio.run(_prune(settings, days, actor, dry_run))
    verb = "would delete" if dry_run else "deleted"
    if done.cutoff:
        click.echo(f"{verb} {done.recommendations} recommendations created before {done.cutoff:%Y-%m-%d %H:%M:%S} UTC")
    else:
        click.echo(f"{verb} 0 recommendations: no retention period (--days or RECOMMENDATION_RETENTION_DAYS)")
    click.echo(f"{verb} {done.idempotency_keys} Idempotency-Key claims (older than 24 h, or of those recommendations)")
    return 0
