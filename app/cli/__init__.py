"""``compute-advisor``: the admin's command line (migrate, seeds, price imports and stale offers, knowledge
version, plugins, organisations, API keys, stored recommendations' retention, backup and restore).

One module per command group (``db``, ``seeds``, ``prices``, ``knowledge``, ``plugins``, ``orgs``, ``keys``,
``recommendations``, ``backup``); ``COMMANDS`` below is the one place they are registered. To add a group: write
``app/cli/<group>.py`` with a click command or group (use ``common.Group``, ``common.pass_settings``
and ``app.kb.db.transaction``), add it to ``COMMANDS``, and if it refuses input with an exception of
its own, add that to ``REFUSALS``.

``main`` runs click outside its standalone mode and turns every outcome into an exit status, so the
console script and the tests get a number back, never ``SystemExit``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from app.cli import backup, db, keys, knowledge, orgs, plugins, prices, recommendations, seeds
from app.cli.common import Group
from app.kb.backup import BackupError
from app.kb.db import DatabaseMissing, alembic_config
from app.kb.keys import KeyProblem
from app.kb.price_import import PriceImportError
from app.kb.seeds import SeedError

__all__ = ["COMMANDS", "REFUSALS", "alembic_config", "cli", "main"]

#: exit status of a usage error and of refused input: nothing was written
REFUSED = 2
#: exceptions that mean the input was refused before anything was written
REFUSALS: tuple[type[Exception], ...] = (SeedError, KeyProblem, DatabaseMissing, BackupError, PriceImportError)


@click.group(name="compute-advisor", cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """The admin's command line for compute-advisor; the database is the one DATABASE_URL names."""


#: every command and command group, in the order ``--help`` lists them
COMMANDS: tuple[click.Command, ...] = (
    db.migrate,
    seeds.group,
    prices.group,
    knowledge.group,
    plugins.plugins,
    orgs.group,
    keys.group,
    recommendations.group,
    backup.backup,
    backup.restore,
)
for _command in COMMANDS:
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv[1:]``) and return its exit status.

    0 success; 1 nothing to show (``knowledge version``, ``prices stale`` before any seed load) or
    interrupted; 2 a usage error, or input refused (``error: …`` then ``nothing was written`` on stderr).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args, prog_name="compute-advisor", standalone_mode=False)
    except click.ClickException as exc:  # usage errors and bad option values: message on stderr
        exc.show()
        return exc.exit_code
    except click.Abort:  # Ctrl-C, or end of input at a prompt
        click.echo("Aborted!", err=True)
        return 1
    except REFUSALS as exc:
        click.echo(f"error: {exc}", err=True)
        click.echo("nothing was written", err=True)
        return REFUSED
    except SystemExit as exc:  # click's shell-completion hook exits by itself
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return result if isinstance(result, int) else 0
