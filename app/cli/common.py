"""What every command module shares: the group class, the settings hand-off, the ``--actor`` option and
how a seed load's counts read.

Kept apart from ``app/cli/__init__.py`` so that a command module never imports the package that
registers it (no import cycle), and so that each new command module reuses the same conventions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import click

from app.core.knowledge import ANY
from app.kb import audit
from app.kb.seeds import AssumptionSeed, PriceSeed, SeedError, SeedProblem, SeedSet, natural_key
from app.settings import Settings
from app.web.logs import configure_logging

if TYPE_CHECKING:
    from app.host.options import LoadedOption

    Options = Mapping[str, LoadedOption]

P = ParamSpec("P")
R = TypeVar("R")


class Group(click.Group):
    """A click group that lists its commands in the order they were added and refuses a missing command.

    Insertion order keeps ``--help`` in workflow order (migrate, seeds, …) rather than alphabetical.
    A group called without a command is a usage error (exit status 2) on every click 8.x — click
    before 8.2 would print the help and exit 0, which scripts could mistake for success.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not self.invoke_without_command and not ctx.resilient_parsing:
            raise click.UsageError(f"missing command: one of {', '.join(self.list_commands(ctx))}", ctx)
        return super().parse_args(ctx, args)


def pass_settings(f: Callable[Concatenate[Settings, P], R]) -> Callable[P, R]:
    """Hand the command the ``Settings`` it runs with, read from the environment when it starts.

    Read only once a command actually runs — never for ``--help`` or a usage error — and only once
    per invocation; logging is configured then too, as the service configures it. A caller may inject
    settings instead with ``cli.main(args, obj=settings)``.
    """

    @functools.wraps(f)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        root = click.get_current_context().find_root()
        if not isinstance(root.obj, Settings):
            root.obj = Settings.from_env()
            # the service's logging configuration (LOG_FORMAT, LOG_LEVEL); warnings and errors only by default
            configure_logging(root.obj, default_level="WARNING")
        return f(root.obj, *args, **kwargs)

    return wrapper


def _actor_or_os_user(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
    return value or audit.os_actor()


def actor_option(who: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--actor NAME`` for a command that writes to the audit trail; the command gets a name, never None.

    ``who`` completes the help text ("Who ``who``, for the audit trail"), e.g. ``"revokes it"``.
    """
    return click.option(
        "--actor",
        metavar="NAME",
        callback=_actor_or_os_user,
        help=f"Who {who}, for the audit trail (default: the OS user).",
    )


def tally_of(counts: Mapping[str, Any]) -> str:
    """A seed load's counts (a plan's or a knowledge version's ``summary``) as one phrase."""
    return f"{counts.get('add', 0)} added, {counts.get('change', 0)} changed, {counts.get('retire', 0)} retired"


def check_plans(prices: Iterable[tuple[Mapping[str, Any], PriceSeed]], options: Options | None = None) -> None:
    """Refuse price rows whose option does not sell their plan (``OptionSpec.price_plans`` of the loaded
    plugins) or does not bill as they say (``OptionSpec.billings``): a ``SeedError`` naming each row
    (``(where, row)`` pairs: where is the row's ``file`` and ``line``, as ``SeedSet.locate`` gives them, or
    empty) and what its option sells. A row of an option no plugin provides, or a plan of a plugin that
    declares no plans, passes: ``seeds check`` is about the files, and the service ignores such rows.
    ``options``: the loaded options (default: loaded here)."""
    specs = {key: loaded.spec for key, loaded in (options or loaded_options()).items()}
    problems = []
    for where, row in prices:
        spec = specs.get(row.option)
        if spec is None:
            continue
        record = {"section": "prices", "record": f"{row.option}/{row.provider}/{row.item}", **where}
        sold = spec.price_plans
        if sold is not None and row.plan != "*" and row.plan not in sold:
            listed = ", ".join(sold) if sold else "none (its rows carry no plan: *)"
            text = f"'{row.plan}' is not a plan option {row.option} sells ({listed})"
            problems.append(SeedProblem(text, field=("plan",), **record))
        if row.billing is not None and row.billing not in spec.billings:
            problems.append(
                SeedProblem(billing_refused(row.option, row.billing, spec.billings), field=("billing",), **record)
            )
    if problems:
        raise SeedError(*problems)


def billing_refused(option: str, billing: str, billings: Sequence[str]) -> str:
    """Why a row of ``option`` may not say it bills as ``billing`` (the option's plugin declares ``billings``)."""
    if not billings:
        return f"option {option} does not say how its rows bill: leave billing out"
    return f"'{billing}' is not how option {option} bills ({', '.join(billings)})"


def check_seed_plans(seed_set: SeedSet) -> None:
    """``check_plans`` over a read seed set's price rows, each named by its file and line; then
    ``check_required_assumptions``."""
    options = loaded_options()
    check_plans(
        (
            (seed_set.locate("prices", natural_key("prices", row.model_dump())), row)
            for row in seed_set.records["prices"]
            if isinstance(row, PriceSeed)
        ),
        options,
    )
    check_required_assumptions(seed_set, options)


def loaded_options() -> Options:
    """The options of the installed plugins (loading them is the slow part: only the commands that check
    against them do)."""
    from app.host.manager import create_option_host

    return create_option_host().options


def check_required_assumptions(seed_set: SeedSet, options: Options) -> None:
    """Refuse seeds that lack an assumption a loaded option's kernel requires (``Kernel.requires``):
    neither the option's own row nor a general one (option ``*``). A ``SeedError`` names each option and
    assumption; an option whose plugin declares no kernel class requires nothing here."""
    have = {(a.option, a.key) for a in seed_set.records["assumptions"] if isinstance(a, AssumptionSeed)}
    problems = [
        SeedProblem(
            f"the plugin of option {option} requires the assumption {key}: the seed files have neither "
            f"{option}'s own nor a general one (option {ANY})",
            section="assumptions",
            record=f"{option}/{key}",
            field=("key",),
        )
        for option, loaded in options.items()
        for key in loaded.requires
        if (option, key) not in have and (ANY, key) not in have
    ]
    if problems:
        raise SeedError(*problems)
