"""``compute-advisor``: the admin's command line (migrate, load seeds, show the knowledge version)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.kb import seeds, snapshot
from app.settings import PROJECT_ROOT, Settings


def alembic_config(settings: Settings) -> Config:
    cfg = Config(str(PROJECT_ROOT / "alembic.ini"))
    cfg.set_main_option("sqlalchemy.url", settings.async_database_url.replace("%", "%%"))
    return cfg


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    command.upgrade(alembic_config(settings), args.revision)
    print(f"database at {args.revision}: {_safe_url(settings.database_url)}")
    return 0


async def _load(settings: Settings, path: Path, *, dry_run: bool, note: str, if_empty: bool) -> int:
    seed_set = seeds.read_seeds(path)  # validates every file before the database is touched
    engine = create_async_engine(settings.async_database_url)
    try:
        async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
            if if_empty and await snapshot.latest_version(session) is not None:
                print("knowledge base already loaded; nothing to do")
                return 0
            plan = await seeds.apply(session, seed_set, note=note, dry_run=dry_run)
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
    return asyncio.run(_load(settings, path, dry_run=args.dry_run, note=args.note, if_empty=args.if_empty))


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
    load.set_defaults(func=cmd_seeds_load)
    check = seeds_cmd.add_parser("check", help="validate seed files without touching the database")
    check.add_argument("path", nargs="?")
    check.set_defaults(func=cmd_seeds_check)

    knowledge = sub.add_parser("knowledge", help="knowledge versions").add_subparsers(dest="action", required=True)
    knowledge.add_parser("version", help="show the newest knowledge version").set_defaults(func=cmd_knowledge_version)

    sub.add_parser("plugins", help="list the loaded option plugins").set_defaults(func=cmd_plugins)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(Settings.from_env(), args))
    except seeds.SeedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
