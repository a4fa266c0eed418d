"""``seeds check`` and ``seeds load``: the knowledge base's seed files.

Every file is validated before the database is touched, and a load is one transaction (through
``app.kb.db.transaction``), so a bad file or a failure half-way leaves the database as it was.
A refused file raises ``SeedError``; both commands print each of its problems (file, record, field and
line) on a line of its own and exit with status 2.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from app.cli.common import Group, actor_option, check_seed_plans, pass_settings, tally_of
from app.kb import seeds, snapshot
from app.kb.db import transaction
from app.settings import Settings

#: exit status of seeds that are not valid (``app.cli.REFUSED``)
REFUSED = 2
#: what ``seeds check`` checks, as it says it
CHECKED = (
    "every field of every record; the providers, regions, GPU models and servers records name; "
    "no overlapping periods of one price or availability rule; price plans against the loaded options"
)


@click.group(name="seeds", cls=Group)
def group() -> None:
    """Knowledge-base seed files: validate them, load them."""


def _seed_path(settings: Settings, path: str | None) -> Path:
    return Path(path) if path else settings.seeds_path


async def _load(
    settings: Settings, seed_set: seeds.SeedSet, *, dry_run: bool, note: str, if_empty: bool, actor: str
) -> seeds.Plan | None:
    """The plan applied (or, for a dry run, rolled back); None when ``if_empty`` found a knowledge version."""
    async with transaction(settings) as session:
        if if_empty and await snapshot.latest_version(session) is not None:
            return None
        plan = await seeds.apply(session, seed_set, note=note, dry_run=dry_run, actor=actor)
        if dry_run:
            await session.rollback()
    return plan


@group.command()
@click.argument("path", required=False)
@click.option("--dry-run", is_flag=True, help="Print what would be added, changed and retired; write nothing.")
@click.option("--note", default="seed load", show_default=True, help="A note for the new knowledge version.")
@click.option("--if-empty", is_flag=True, help="Load only when no knowledge version exists.")
@click.option("--verbose", "-v", is_flag=True, help="Print every change, not only the counts.")
@actor_option("loads")
@pass_settings
def load(
    settings: Settings, path: str | None, dry_run: bool, note: str, if_empty: bool, verbose: bool, actor: str
) -> int:
    """Validate and apply seed files in one transaction.

    PATH is a seed directory or file (default: SEEDS_PATH, else ./seeds). Loading the same files
    again changes nothing and makes no new knowledge version. A load prints one line of counts;
    with --dry-run or --verbose, every change first, as + added, ~ changed, - retired.
    """
    try:
        seed_set = seeds.read_seeds(_seed_path(settings, path))  # every file validated before the database
        check_seed_plans(seed_set)  # and every price row's plan against the plans its option's plugin sells
        plan = asyncio.run(_load(settings, seed_set, dry_run=dry_run, note=note, if_empty=if_empty, actor=actor))
    except seeds.SeedError as exc:
        _problems(exc)
        click.echo("nothing was written", err=True)
        return REFUSED
    if plan is None:
        click.echo("knowledge base already loaded; nothing to do")
        return 0
    if dry_run or verbose:
        for line in seeds.describe(plan.changes):
            click.echo(line)
    tally = tally_of(plan.summary())
    if dry_run:
        click.echo(f"dry run: would apply {tally}; nothing written")
    elif plan.empty:
        click.echo("no changes: the database already holds these seeds; no new knowledge version")
    else:
        click.echo(f"{tally}; knowledge version {plan.version}")
    return 0


@group.command()
@click.argument("path", required=False)
@pass_settings
def check(settings: Settings, path: str | None) -> int:
    """Validate seed files without touching the database.

    PATH is a seed directory or file (default: SEEDS_PATH, else ./seeds). Every record's fields, the
    references between records, the periods of prices and availability rules, and price rows' plans
    against the plans their options' plugins sell (docs/plugins.md, "Plans"). Prints what was checked;
    each problem on a line of its own (file, record, field, line), exit status 2.
    """
    where = _seed_path(settings, path)
    files = len(seeds.seed_files(where)) if where.exists() else 0
    read = f"checked {where}: {files} file{'s' * (files != 1)}"
    try:
        seed_set = seeds.read_seeds(where)
        check_seed_plans(seed_set)
    except seeds.SeedError as exc:
        found = len(exc.problems)
        _problems(exc)
        click.echo(f"{read}: not valid, {found} problem{'s' * (found != 1)}; the database was not read", err=True)
        return REFUSED
    counts = {section: len(records) for section, records in seed_set.records.items()}
    click.echo(f"{read}, {sum(counts.values())} records ({', '.join(f'{n} {s}' for s, n in counts.items())})")
    click.echo(f"checked: {CHECKED}")
    click.echo(f"valid; content hash {seed_set.content_hash()[:12]}; the database was not read")
    return 0


def _problems(exc: seeds.SeedError) -> None:
    """Every problem of a refusal on a line of its own, on stderr."""
    for problem in exc.problems:
        click.echo(f"error: {problem}", err=True)
