"""``backup`` and ``restore``: the whole database — knowledge base, API keys, audit trail, stored
recommendations — to a file and back.

The database is the one ``DATABASE_URL`` names, for both commands. An SQLite database is backed up
to an SQLite database file (the online backup API: consistent while the service serves and writes);
a PostgreSQL database to a ``pg_dump`` custom-format archive. A restore takes the file back into the
same kind of database and refuses the other kind. The work is done in ``app.kb.backup``; a refusal
raises ``BackupError``, which ``app.cli.main`` reports with exit status 2 ("nothing was written").
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import click
from sqlalchemy import exc as sa_exc

from app.cli.common import actor_option, pass_settings
from app.cli.db import safe_url
from app.kb.backup import COUNTED, BackupError, Contents, Outcome
from app.kb.backup import backup as do_backup
from app.kb.backup import restore as do_restore
from app.kb.db import migration_head
from app.settings import Settings

#: errors that mean the database did not answer; reported as a refusal, not a traceback
UNREACHABLE = (sa_exc.OperationalError, sa_exc.InterfaceError)


def _describe(found: Contents) -> list[str]:
    head = migration_head()
    mark = "at the head" if found.revision == head else f"NOT the head {head}"
    rows = ", ".join(f"{found.counts.get(t, 0)} {t.replace('_', ' ')}" for t in COUNTED)
    return [
        f"  migration: {found.revision or 'none'} ({mark})",
        f"  knowledge version: {found.knowledge_version or 'none'}",
        f"  rows: {rows}",
    ]


def _run(work: Coroutine[Any, Any, Outcome]) -> Outcome:
    try:
        return asyncio.run(work)
    except UNREACHABLE as exc:
        raise BackupError(f"the database does not answer: {type(exc).__name__}: {exc}") from exc
    except (sqlite3.Error, OSError) as exc:  # a locked or damaged file, a full disk: the copy was not kept
        raise BackupError(f"{type(exc).__name__}: {exc}") from exc


@click.command()
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The backup file to write (mode 0600).",
)
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@pass_settings
def backup(settings: Settings, out: Path, force: bool) -> int:
    """Back up DATABASE_URL's database into a file, consistently, while the service runs.

    SQLite: an SQLite database file. PostgreSQL: a pg_dump custom-format archive (pg_dump must be
    installed). The file is written whole, then renamed into place.
    """
    done = _run(do_backup(settings, out, overwrite=force))
    click.echo(f"backed up {safe_url(settings.database_url)}")
    click.echo(f"  into {done.path} ({done.kind} backup, {done.size_bytes:,} bytes, {done.seconds:.2f} s)")
    for line in _describe(done.contents):
        click.echo(line)
    return 0


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Restore even though the database is in use.")
@actor_option("restores it")
@pass_settings
def restore(settings: Settings, file: Path, force: bool, actor: str) -> int:
    """Restore a backup FILE into DATABASE_URL's database, replacing all it holds.

    An SQLite backup goes into an SQLite DATABASE_URL, a pg_dump archive into PostgreSQL. Refused while
    another connection has the database open (a running service), unless --force. The backup is
    verified in a staged copy first (the schema its migrations create, nothing more; API keys and
    audit events as the service writes them): a refusal leaves the database untouched. Prints the
    migration and knowledge version restored; exit status 1 when the database is not at the
    migration head afterwards (run `compute-advisor migrate`).
    """
    done = _run(do_restore(settings, file, force=force, actor=actor))
    click.echo(f"restored {done.path} into {safe_url(settings.database_url)} ({done.seconds:.2f} s)")
    for aside in done.moved_aside:
        click.echo(f"  moved aside {aside}: it belonged to a database no longer at that path")
    if done.closed_connections:
        click.echo(f"  closed {done.closed_connections} other connection(s) to the database (--force)")
    for line in _describe(done.contents):
        click.echo(line)
    click.echo(f"  knowledge version before the restore: {done.previous_version or 'none'}")
    if done.audited:
        click.echo("  recorded in the audit trail (database.restore)")
    elif done.contents.revision == migration_head():  # written and read back in the staged copy, yet not here
        click.echo("the restore's audit event (database.restore) cannot be read back from the database: check it")
        return 1
    if done.contents.revision != migration_head():
        click.echo("the service is not ready on this database until `compute-advisor migrate` brings it to the head")
        return 1
    if done.contents.knowledge_version is None:
        click.echo("no knowledge version: the service is not ready until `compute-advisor seeds load`")
        return 1
    return 0
