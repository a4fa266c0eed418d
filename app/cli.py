"""``compute-advisor``: the admin's command line (migrate, load seeds, knowledge version, API keys)."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.kb import audit, keys, seeds, snapshot
from app.kb import models as m
from app.settings import PROJECT_ROOT, Settings

T = TypeVar("T")


def alembic_config(settings: Settings) -> Config:
    cfg = Config(str(PROJECT_ROOT / "alembic.ini"))
    cfg.set_main_option("sqlalchemy.url", settings.async_database_url.replace("%", "%%"))
    return cfg


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    command.upgrade(alembic_config(settings), args.revision)
    print(f"database at {args.revision}: {_safe_url(settings.database_url)}")
    return 0


async def _load(settings: Settings, path: Path, *, dry_run: bool, note: str, if_empty: bool, actor: str) -> int:
    seed_set = seeds.read_seeds(path)  # validates every file before the database is touched
    engine = create_async_engine(settings.async_database_url)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
            if if_empty and await snapshot.latest_version(session) is not None:
                print("knowledge base already loaded; nothing to do")
                return 0
            plan = await seeds.apply(session, seed_set, note=note, dry_run=dry_run, actor=actor)
            if dry_run:
                await session.rollback()
    finally:
        await engine.dispose()
    for line in seeds.describe(plan.changes):
        print(line)
    counts = plan.summary()
    tally = f"{counts['add']} added, {counts['change']} changed, {counts['retire']} retired"
    if dry_run:
        print(f"dry run: would apply {tally}; nothing written")
    elif plan.empty:
        print("no changes: the database already holds these seeds; no new knowledge version")
    else:
        print(f"{tally}; knowledge version {plan.version}")
    return 0


def cmd_seeds_load(settings: Settings, args: argparse.Namespace) -> int:
    path = Path(args.path) if args.path else settings.seeds_path
    return asyncio.run(
        _load(
            settings,
            path,
            dry_run=args.dry_run,
            note=args.note,
            if_empty=args.if_empty,
            actor=args.actor or audit.os_actor(),
        )
    )


def cmd_seeds_check(settings: Settings, args: argparse.Namespace) -> int:
    seed_set = seeds.read_seeds(Path(args.path) if args.path else settings.seeds_path)
    counts = ", ".join(f"{len(v)} {k}" for k, v in seed_set.records.items())
    print(f"valid: {counts}; content hash {seed_set.content_hash()[:12]}")
    return 0


async def _version(settings: Settings) -> int:
    engine = create_async_engine(settings.async_database_url)
    try:
        async with async_sessionmaker(engine)() as session:
            version = await snapshot.latest_version(session)
    finally:
        await engine.dispose()
    if version is None:
        print("no knowledge version: run `compute-advisor seeds load`")
        return 1
    print(f"{version.label}  {version.created_at:%Y-%m-%d %H:%M:%S}  {version.note}  {version.summary}")
    return 0


def cmd_knowledge_version(settings: Settings, args: argparse.Namespace) -> int:
    return asyncio.run(_version(settings))


def cmd_plugins(settings: Settings, args: argparse.Namespace) -> int:
    from app.plugin_manager import create_option_host

    for option in create_option_host().options.values():
        print(f"{option.spec.key:24} {option.plugin_name} {option.plugin_version}  {option.spec.name}")
    return 0


async def _in_transaction(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    engine = create_async_engine(settings.async_database_url)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
            return await work(session)
    finally:
        await engine.dispose()


def _fmt_time(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def cmd_keys_create(settings: Settings, args: argparse.Namespace) -> int:
    actor = args.actor or audit.os_actor()
    created = asyncio.run(
        _in_transaction(settings, lambda s: keys.create(s, name=args.name, scopes=args.scope, actor=actor))
    )
    row = created.row
    print(f"created API key {row.id} ({row.name}), scopes {' '.join(row.scopes)}")
    print("the key is shown only now; store it safely (send it in the X-API-Key header):")
    print(created.key)
    return 0


def cmd_keys_list(settings: Settings, args: argparse.Namespace) -> int:
    rows = asyncio.run(_in_transaction(settings, keys.list_all))
    print(f"{'id':>4}  {'name':24} {'prefix':8}  {'created':19}  {'revoked':19}  scopes")
    for r in rows:
        print(
            f"{r.id:>4}  {r.name[:24]:24} {r.key_prefix:8}  {_fmt_time(r.created_at):19}  "
            f"{_fmt_time(r.revoked_at):19}  {' '.join(r.scopes)}"
        )
    return 0


def cmd_keys_revoke(settings: Settings, args: argparse.Namespace) -> int:
    actor = args.actor or audit.os_actor()

    async def work(session: AsyncSession) -> tuple[str, bool]:
        row = await session.get(m.ApiKey, args.id)
        was_revoked = row is not None and row.revoked_at is not None
        row = await keys.revoke(session, args.id, actor=actor)
        return row.name, was_revoked

    name, was_revoked = asyncio.run(_in_transaction(settings, work))
    if was_revoked:
        print(f"API key {args.id} ({name}) was already revoked")
    else:
        print(f"revoked API key {args.id} ({name}); every worker refuses it within API_KEY_CACHE_SECONDS")
    return 0


def cmd_keys_dev(settings: Settings, args: argparse.Namespace) -> int:
    """Keep a local development key with every scope in ``--file``: reuse it while it works, else make one."""
    path = Path(args.file)
    existing = path.read_text(encoding="utf-8").strip() if path.is_file() else ""

    async def work(session: AsyncSession) -> tuple[str, bool]:
        if existing:
            row = await keys.find(session, existing)
            if row is not None and row.revoked_at is None and set(row.scopes) >= set(keys.SCOPES):
                return existing, False
        created = await keys.create(session, name="local development", scopes=keys.SCOPES, actor=audit.os_actor())
        return created.key, True

    key, new = asyncio.run(_in_transaction(settings, work))
    if new:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(key + "\n")
    os.chmod(path, 0o600)
    print(f"{'new' if new else 'existing'} local development API key (every scope), kept in {path}:")
    print(key)
    return 0


def _safe_url(url: str) -> str:
    head, sep, tail = url.rpartition("@")
    return f"{head.split('://')[0]}://…@{tail}" if sep else url


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compute-advisor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    migrate = sub.add_parser("migrate", help="apply Alembic migrations (DATABASE_URL)")
    migrate.add_argument("revision", nargs="?", default="head")
    migrate.set_defaults(func=cmd_migrate)

    seeds_cmd = sub.add_parser("seeds", help="knowledge-base seed files").add_subparsers(dest="action", required=True)
    load = seeds_cmd.add_parser("load", help="validate and apply seed files in one transaction")
    load.add_argument("path", nargs="?", help="a seed directory or file (default: ./seeds)")
    load.add_argument("--dry-run", action="store_true", help="print what would be added, changed and retired")
    load.add_argument("--note", default="seed load", help="a note for the new knowledge version")
    load.add_argument("--if-empty", action="store_true", help="load only when no knowledge version exists")
    load.add_argument("--actor", help="who loads, for the audit trail (default: the OS user)")
    load.set_defaults(func=cmd_seeds_load)
    check = seeds_cmd.add_parser("check", help="validate seed files without touching the database")
    check.add_argument("path", nargs="?")
    check.set_defaults(func=cmd_seeds_check)

    knowledge = sub.add_parser("knowledge", help="knowledge versions").add_subparsers(dest="action", required=True)
    knowledge.add_parser("version", help="show the newest knowledge version").set_defaults(func=cmd_knowledge_version)

    sub.add_parser("plugins", help="list the loaded option plugins").set_defaults(func=cmd_plugins)

    keys_cmd = sub.add_parser("keys", help="API keys").add_subparsers(dest="action", required=True)
    create = keys_cmd.add_parser("create", help="create an API key; prints it once, alone on the last line")
    create.add_argument("--name", required=True, help="who or what the key is for")
    create.add_argument(
        "--scope",
        action="append",
        required=True,
        choices=list(keys.SCOPES),
        help="a scope the key holds (repeat for several)",
    )
    create.add_argument("--actor", help="who creates it, for the audit trail (default: the OS user)")
    create.set_defaults(func=cmd_keys_create)
    keys_cmd.add_parser("list", help="list API keys (never the keys themselves)").set_defaults(func=cmd_keys_list)
    revoke = keys_cmd.add_parser("revoke", help="revoke an API key; every worker refuses it within seconds")
    revoke.add_argument("id", type=int)
    revoke.add_argument("--actor", help="who revokes it, for the audit trail (default: the OS user)")
    revoke.set_defaults(func=cmd_keys_revoke)
    dev = keys_cmd.add_parser("dev", help="a local development key with every scope, kept in a file")
    dev.add_argument("--file", default=".dev-api-key", help="where the key is kept (mode 0600)")
    dev.set_defaults(func=cmd_keys_dev)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(Settings.from_env(), args))
    except (seeds.SeedError, keys.KeyProblem) as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
