"""``keys create|list|revoke|rotate|dev``: API keys, managed from the server's shell rather than over the API.

Each command is one transaction (``app.kb.db.transaction``). A key is shown once, when it is created,
alone on the last line of the output so that scripts can take it with ``tail -n1``. An unknown scope
or key id raises ``KeyProblem``, which ``app.cli.main`` reports with exit status 2.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from app.cli.common import Group, actor_option, pass_settings
from app.kb import audit, keys
from app.kb import service_records as sr
from app.kb.db import transaction
from app.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


@click.group(name="keys", cls=Group)
def group() -> None:
    """API keys (sent in the X-API-Key header)."""


def _fmt_time(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


async def _create(
    settings: Settings,
    name: str,
    scopes: tuple[str, ...],
    actor: str,
    expires_in: dt.timedelta | None,
    org: str | None,
) -> keys.Created:
    async with transaction(settings) as session:
        return await keys.create(session, name=name, scopes=scopes, actor=actor, expires_in=expires_in, org=org)


def _duration(option: str) -> Any:
    def convert(_ctx: click.Context, _param: click.Parameter, value: str | None) -> dt.timedelta | None:
        if value is None:
            return None
        try:
            return keys.parse_duration(value, option)
        except keys.KeyProblem as exc:
            raise click.BadParameter(str(exc)) from exc

    return convert


def _duration_option(name: str, help: str, **more: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """An option taking a duration (90d, 12h, 30m, 2w), given to the command as a ``timedelta``."""
    return click.option(name, metavar="DURATION", callback=_duration(name), help=help, **more)


@group.command()
@click.option("--name", required=True, help="Who or what the key is for.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    required=True,
    type=click.Choice(list(keys.SCOPES)),
    help="A scope the key holds (repeat for several).",
)
@_duration_option(
    "--expires-in", "The key is refused this long after its creation: 90d, 12h, 30m, 2w (default: never)."
)
@click.option(
    "--org",
    metavar="ORG",
    help="The organisation the key belongs to (`orgs create` first): it shares that organisation's stored "
    "recommendations, watches and private price book.",
)
@actor_option("creates it")
@pass_settings
def create(
    settings: Settings,
    name: str,
    scopes: tuple[str, ...],
    expires_in: dt.timedelta | None,
    org: str | None,
    actor: str,
) -> int:
    """Create an API key; prints it once, alone on the last line."""
    created = asyncio.run(_create(settings, name, scopes, actor, expires_in, org))
    row = created.row
    expiry = f", expires {_fmt_time(row.expires_at)} UTC" if row.expires_at else ""
    of_org = f", organisation {row.org}" if row.org else ""
    click.echo(f"created API key {row.id} ({row.name}), scopes {' '.join(row.scopes)}{of_org}{expiry}")
    click.echo("the key is shown only now; store it safely (send it in the X-API-Key header):")
    click.echo(created.key)
    return 0


async def _list(settings: Settings) -> list[sr.ApiKey]:
    async with transaction(settings) as session:
        return await keys.list_all(session)


@group.command(name="list")
@pass_settings
def list_(settings: Settings) -> int:
    """List API keys: id, name, prefix, organisation, created, revoked, expires, last used (to the minute), scopes
    (never the keys themselves). Times in UTC."""
    rows = asyncio.run(_list(settings))
    click.echo(
        f"{'id':>4}  {'name':24} {'prefix':8}  {'org':16}  {'created':19}  {'revoked':19}  {'expires':19}  "
        f"{'last used':19}  scopes"
    )
    for r in rows:
        click.echo(
            f"{r.id:>4}  {r.name[:24]:24} {r.key_prefix:8}  {(r.org or '-')[:16]:16}  {_fmt_time(r.created_at):19}  "
            f"{_fmt_time(r.revoked_at):19}  {_fmt_time(r.expires_at):19}  {_fmt_time(r.last_used_at):19}  "
            f"{' '.join(r.scopes)}"
        )
    return 0


async def _revoke(settings: Settings, key_id: int, actor: str) -> tuple[str, bool]:
    """The key's name, and whether it was revoked already (revoking again is harmless, but said)."""
    async with transaction(settings) as session:
        row = await session.get(sr.ApiKey, key_id)
        was_revoked = row is not None and row.revoked_at is not None
        row = await keys.revoke(session, key_id, actor=actor)
        return row.name, was_revoked


@group.command()
@click.argument("key_id", metavar="ID", type=int)
@actor_option("revokes it")
@pass_settings
def revoke(settings: Settings, key_id: int, actor: str) -> int:
    """Revoke API key ID; every worker refuses it within API_KEY_CACHE_SECONDS."""
    name, was_revoked = asyncio.run(_revoke(settings, key_id, actor))
    if was_revoked:
        click.echo(f"API key {key_id} ({name}) was already revoked")
    else:
        click.echo(f"revoked API key {key_id} ({name}); every worker refuses it within API_KEY_CACHE_SECONDS")
    return 0


async def _rotate(
    settings: Settings, key_id: int, grace: dt.timedelta, actor: str, expires_in: dt.timedelta | None
) -> tuple[keys.Created, sr.ApiKey]:
    async with transaction(settings) as session:
        return await keys.rotate(session, key_id, grace=grace, actor=actor, expires_in=expires_in)


@group.command()
@click.argument("key_id", metavar="ID", type=int)
@_duration_option("--grace", "How long the old key keeps working: 7d, 12h, 30m, 2w.", default="7d", show_default=True)
@_duration_option("--expires-in", "The new key is refused this long after now (default: never).")
@actor_option("rotates it")
@pass_settings
def rotate(settings: Settings, key_id: int, grace: dt.timedelta, expires_in: dt.timedelta | None, actor: str) -> int:
    """Replace API key ID with a new key (same name and scopes); the old one works until the grace
    period ends, then is refused as expired. Prints the new key once, alone on the last line."""
    created, old = asyncio.run(_rotate(settings, key_id, grace, actor, expires_in))
    click.echo(
        f"API key {old.id} ({old.name}) replaced by API key {created.row.id}; the old key works until "
        f"{_fmt_time(old.expires_at)} UTC"
    )
    click.echo("the new key is shown only now; store it safely (send it in the X-API-Key header):")
    click.echo(created.key)
    return 0


async def _dev_key(settings: Settings, existing: str) -> tuple[str, bool]:
    """``existing`` while it still works with every scope, else a new key; and whether it is new."""
    async with transaction(settings) as session:
        if existing:
            row = await keys.find(session, existing)
            fine = row is not None and row.revoked_at is None and not keys.expired(row, dt.datetime.now(dt.UTC))
            if fine and row is not None and set(row.scopes) >= set(keys.SCOPES):
                return existing, False
        created = await keys.create(session, name="local development", scopes=keys.SCOPES, actor=audit.os_actor())
        return created.key, True


@group.command()
@click.option(
    "--file",
    "file",
    default=".dev-api-key",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where the key is kept (mode 0600).",
)
@pass_settings
def dev(settings: Settings, file: Path) -> int:
    """A local development key with every scope, kept in a file.

    Reuses the key in the file while it works, else creates one (also when the old one was
    revoked), so `make devkey` can run it every time.
    """
    existing = file.read_text(encoding="utf-8").strip() if file.is_file() else ""
    key, new = asyncio.run(_dev_key(settings, existing))
    if new:
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(key + "\n")
    os.chmod(file, 0o600)
    click.echo(f"{'new' if new else 'existing'} local development API key (every scope), kept in {file}:")
    click.echo(key)
    return 0
