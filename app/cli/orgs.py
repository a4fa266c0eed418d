"""``orgs create|list|delete``: organisations, whose API keys (``keys create --org``) share stored
recommendations, watches and a private price book. One transaction per command, audited."""

from __future__ import annotations

import asyncio

import click

from app.cli.common import Group, actor_option, pass_settings
from app.kb import orgs
from app.kb import service_records as sr
from app.kb.db import transaction
from app.settings import Settings


@click.group(name="orgs", cls=Group)
def group() -> None:
    """Organisations (keys of one share its recommendations, watches and private price book)."""


async def _create(settings: Settings, key: str, name: str | None, actor: str) -> sr.Organisation:
    async with transaction(settings) as session:
        return await orgs.create(session, key, name=name, actor=actor)


@group.command()
@click.argument("key", metavar="NAME")
@click.option("--display-name", "name", help="How people read it (default: NAME).")
@actor_option("creates it")
@pass_settings
def create(settings: Settings, key: str, name: str | None, actor: str) -> int:
    """Create organisation NAME (a slug: lower-case letters, digits, hyphens)."""
    row = asyncio.run(_create(settings, key, name, actor))
    click.echo(f"created organisation {row.key} ({row.name}); give it keys with `keys create … --org {row.key}`")
    return 0


async def _list(settings: Settings) -> list[tuple[sr.Organisation, int]]:
    async with transaction(settings) as session:
        return await orgs.list_all(session)


@group.command(name="list")
@pass_settings
def list_(settings: Settings) -> int:
    """List organisations: key, name, working keys, private price book version, created, deleted (UTC)."""
    click.echo(f"{'key':24} {'name':32} {'keys':>4}  {'book':>4}  {'created':19}  deleted")
    for row, working in asyncio.run(_list(settings)):
        deleted = row.deleted_at.strftime("%Y-%m-%d %H:%M:%S") if row.deleted_at else "-"
        click.echo(
            f"{row.key:24} {row.name[:32]:32} {working:>4}  {row.book_version:>4}  "
            f"{row.created_at:%Y-%m-%d %H:%M:%S}  {deleted}"
        )
    return 0


async def _delete(settings: Settings, key: str, actor: str, revoke_keys: bool) -> int:
    async with transaction(settings) as session:
        return await orgs.delete(session, key, actor=actor, revoke_keys=revoke_keys)


@group.command()
@click.argument("key", metavar="NAME")
@click.option("--revoke-keys", is_flag=True, help="Revoke the organisation's working keys with it.")
@actor_option("deletes it")
@pass_settings
def delete(settings: Settings, key: str, revoke_keys: bool, actor: str) -> int:
    """Mark organisation NAME deleted (its rows stay, for the audit trail); refused while it has working keys."""
    revoked = asyncio.run(_delete(settings, key, actor, revoke_keys))
    click.echo(f"deleted organisation {key}" + (f"; revoked {revoked} API key(s)" if revoked else ""))
    return 0
