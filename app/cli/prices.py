"""``prices import`` and ``prices stale``: refreshing the price books.

``import`` turns a SkyPilot catalog or a hand-kept CSV price sheet into a seed file to review and
commit (``app.kb.price_import`` does the conversion); it never touches the database — ``seeds load``
does, once the file is in the seed directory. ``stale`` lists the offers whose newest row is older
than N days, by the rule ``GET /v1/offers?stale_days=`` uses (``app.core.offers.stale``), and the
currencies whose newest exchange rate is older than 90 days, and fails (exit status 1) when any is.
docs/price-books.md describes both.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from app.cli.common import Group, check_plans, loaded_options, pass_settings
from app.cli.seed_files import SeedDir, write_whole
from app.cli.stale import stale_command
from app.cli.stale import today as _today
from app.core.vocab import INTERCONNECTS, RESIDENCIES, SOURCE_QUALITIES
from app.kb import price_import, price_refresh
from app.kb.price_import import PriceImportError
from app.kb.seeds import PriceSeed, SeedError, SeedSet, natural_key
from app.settings import Settings

DATE = click.DateTime(["%Y-%m-%d"])
#: at most this many line numbers are listed per unknown accelerator or skip reason
SHOWN = 8
#: what ``--interconnect`` says of an instance type whose source does not say its interconnect (null)
UNKNOWN = "unknown"
FABRICS = (*INTERCONNECTS, UNKNOWN)
F = TypeVar("F", bound=Callable[..., Any])


def _fabrics(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> dict[str, str | None]:
    """``--interconnect TYPE=FABRIC`` values as instance type → interconnect (None: not known)."""
    found: dict[str, str | None] = {}
    for value in values:
        instance, _, fabric = value.partition("=")
        if not instance or fabric not in FABRICS:
            raise click.BadParameter(
                f"'{value}' is not TYPE=FABRIC with FABRIC one of {', '.join(FABRICS)}, e.g. p5.48xlarge=efa"
            )
        found[instance] = None if fabric == UNKNOWN else fabric
    return found


def _incomplete(sheet: Path, rows: Sequence[price_refresh.Incomplete]) -> str:
    """The refusal of a file whose rows the seeds cannot complete: each row, and how to complete it."""
    text = [f"{sheet}: {len(rows)} row{'s' * (len(rows) > 1)} to complete before anything is written:"]
    for r in rows:
        text.append(f"  line {r.line}: {r.row.subject} {r.row.region} {r.row.plan}: field '{r.field}': {r.why}")
    fabricless = sorted({r.row.subject for r in rows if r.field == "interconnect"})
    if fabricless:
        example = " ".join(f"--interconnect {t}=efa" for t in fabricless[:3])
        text.append(
            f"state each instance type's interconnect ({', '.join(FABRICS)}: {UNKNOWN} where its source does not "
            f"say, and a job across nodes is refused), e.g. {example}"
        )
    return "\n".join(text)


def _report_carried(refresh: price_refresh.Refresh) -> None:
    """What the new rows took from the rows they replace, and what was stated at import."""
    said: dict[str, dict[str, int]] = {}
    for carried in refresh.carried:
        for name in carried.fields:
            value = getattr(carried.source, name)
            if value is not None:
                said.setdefault(name, {}).setdefault(str(value), 0)
                said[name][str(value)] += 1
    if said:
        tally = "; ".join(
            f"{name} " + ", ".join(f"{value} on {n} row{'s' * (n > 1)}" for value, n in values.items())
            for name, values in said.items()
        )
        click.echo(f"carried forward from the rows they replace (the file does not say): {tally}")
    for row, line, name, value in refresh.declared:
        click.echo(f"stated at import: line {line}: {row.subject} {row.region} {row.plan}: {name} {value or UNKNOWN}")
    new = {(c.row.subject, c.row.region, c.row.plan) for c in refresh.carried}
    fresh = [f"{p.subject} {p.region} {p.plan}" for p in refresh.prices if (p.subject, p.region, p.plan) not in new]
    if fresh:
        shown = ", ".join(fresh[:SHOWN]) + (f", … ({len(fresh)} rows)" if len(fresh) > SHOWN else "")
        click.echo(f"no earlier row to carry from (check residency and capacity): {shown}")


@click.group(name="prices", cls=Group)
def group() -> None:
    """Price books: import a catalog or price sheet as a seed file; list stale offers and exchange rates."""


def _lines(lines: Sequence[int]) -> str:
    shown = ", ".join(map(str, lines[:SHOWN])) + (f", … ({len(lines)} lines)" if len(lines) > SHOWN else "")
    return f"line{'s' * (len(lines) > 1)} {shown}"


@dataclass(frozen=True, slots=True)
class _Stated:
    """What the command line states of FILE where FILE does not say it (a SkyPilot catalog says less than a
    CSV price sheet): the options ``_stated_options`` adds."""

    provider: str | None
    valid_from: dt.datetime | None
    option: str | None
    retrieved_on: dt.datetime | None
    source: str | None
    source_quality: str
    residency: str | None
    fabrics: dict[str, str | None]

    def check(self, fmt: str) -> None:
        """A usage error where the options do not suit FILE's format."""
        if fmt == "skypilot" and (self.provider is None or self.valid_from is None):
            raise click.UsageError("--format skypilot needs --provider and --valid-from")
        if fmt == "csv" and (self.source_quality != "verified" or self.residency is not None or self.option):
            raise click.UsageError("--option, --source-quality and --residency are columns of a csv sheet")

    def sheet(self, sheet: Path, fmt: str, joined: SeedSet, seeds: Path) -> price_import.Sheet:
        """What the conversion is told of FILE, with the provider and GPU model keys of the seeds it joins;
        an unknown ``--provider`` refused."""
        providers = frozenset(p.key for p in joined.records["providers"])  # type: ignore[attr-defined]
        if self.provider is not None and self.provider not in providers:
            raise PriceImportError(
                f"--provider: unknown provider '{self.provider}' (the seeds in {seeds} have "
                f"{', '.join(sorted(providers))})"
            )
        return price_import.Sheet(
            source=self.source
            or (f"SkyPilot catalog, file {sheet.name}" if fmt == "skypilot" else f"price sheet {sheet.name}"),
            retrieved_on=self.retrieved_on.date() if self.retrieved_on else _today(),
            provider=self.provider,
            valid_from=self.valid_from.date() if self.valid_from else None,
            option=self.option_of(fmt) if fmt == price_import.SKYPILOT_FORMAT else None,
            source_quality=self.source_quality,
            residency=self.residency,
            providers=providers,
            gpu_models=frozenset(g.key for g in joined.records["gpu_models"]),  # type: ignore[attr-defined]
        )

    def option_of(self, fmt: str) -> str:
        """The option every row of a ``fmt`` sheet is an offer of: ``--option``, else the one loaded option
        whose plugin declares the format (``OptionSpec.price_formats``)."""
        options = loaded_options()
        if self.option is not None:
            if self.option not in options:
                raise PriceImportError(
                    f"--option: no loaded option '{self.option}' (the options are {', '.join(options)})"
                )
            return self.option
        declaring = [key for key, loaded in options.items() if fmt in loaded.spec.price_formats]
        if len(declaring) != 1:
            which = f"options {', '.join(declaring)} all declare" if declaring else "no loaded option declares"
            raise PriceImportError(f"{which} the {fmt} format: name the option its rows are offers of with --option")
        return declaring[0]

    def flags(self, context: price_import.Sheet) -> list[str]:
        """The options as the seed file's header repeats them (``--retrieved-on``: the day it was read)."""
        given = {
            "--provider": self.provider,
            "--valid-from": self.valid_from and self.valid_from.date(),
            "--option": self.option,
            "--retrieved-on": context.retrieved_on,
            "--source-quality": None if self.source_quality == "verified" else self.source_quality,
            "--residency": self.residency,
        }
        flags = [str(x) for flag, value in given.items() if value is not None for x in (flag, value)]
        return flags + [x for t, f in self.fabrics.items() for x in ("--interconnect", f"{t}={f or UNKNOWN}")]


def _stated_options(command: F) -> F:
    """The options that state what FILE does not say (``_Stated``), listed by ``--help`` in this order."""
    options = [
        click.option(
            "--provider", metavar="NAME", help="A provider key of the seeds (skypilot: required; csv: fills blanks)."
        ),
        click.option(
            "--valid-from", type=DATE, help="First day the prices apply (skypilot: required; csv: fills blanks)."
        ),
        click.option(
            "--option",
            metavar="KEY",
            help="skypilot only: the option its rows are offers of (default: the loaded option whose plugin "
            "declares the format).",
        ),
        click.option("--retrieved-on", type=DATE, help="When the prices were read (default: today, UTC)."),
        click.option(
            "--source",
            help="Where FILE comes from, e.g. 'skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv@<commit>'.",
        ),
        click.option(
            "--source-quality",
            type=click.Choice(SOURCE_QUALITIES),
            default="verified",
            show_default=True,
            help="skypilot only.",
        ),
        click.option(
            "--residency",
            type=click.Choice(RESIDENCIES),
            help="skypilot only: every row's (default: the row it replaces says, else public_multi_tenant).",
        ),
        click.option(
            "--interconnect",
            "fabrics",
            metavar="TYPE=FABRIC",
            multiple=True,
            callback=_fabrics,
            help=f"An instance type's interconnect where no row of the seeds says it ({', '.join(FABRICS)}).",
        ),
    ]
    for option in reversed(options):  # as decorators written in this order apply them
        command = option(command)
    return command


@group.command(name="import")
@click.argument("sheet", metavar="FILE", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["skypilot", "csv"]), required=True, help="What FILE is.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The seed file to write.")
@_stated_options
@click.option(
    "--seeds",
    "seeds_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The seed directory the file joins (default: SEEDS_PATH, else ./seeds).",
)
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@pass_settings
def import_(
    settings: Settings,
    sheet: Path,
    fmt: str,
    out: Path,
    provider: str | None,
    valid_from: dt.datetime | None,
    option: str | None,
    retrieved_on: dt.datetime | None,
    source: str | None,
    source_quality: str,
    residency: str | None,
    fabrics: dict[str, str | None],
    seeds_dir: Path | None,
    force: bool,
) -> int:
    """Turn a SkyPilot catalog (vms.csv) or a CSV price sheet into a seed file to review and commit.

    Nothing reaches the database until `compute-advisor seeds load` loads the seed directory holding
    the file. A malformed FILE is refused with its line and nothing is written (exit status 2).
    """
    stated = _Stated(
        provider=provider,
        valid_from=valid_from,
        option=option,
        retrieved_on=retrieved_on,
        source=source,
        source_quality=source_quality,
        residency=residency,
        fabrics=fabrics,
    )
    stated.check(fmt)
    _check_out(out, force)
    seeds = seeds_dir or settings.seeds_path
    seed_dir = SeedDir(seeds, out)
    try:
        joined = seed_dir.read()
        context = stated.sheet(sheet, fmt, joined, seeds)
        imported = _convert(sheet, fmt, context)
        refresh = _carry_forward(sheet, imported, joined, fabrics)
        command = shlex.join(
            ["compute-advisor", "prices", "import", "--format", fmt, *stated.flags(context), sheet.name]
        )
        write_whole(out, price_import.to_yaml(imported.prices, _header(command, context, imported)))
        _report(imported, refresh, out, joined, seed_dir.check_with(out), seeds)
    finally:
        seed_dir.close()
    return 0


def _check_out(out: Path, force: bool) -> None:
    """``--out`` names a ``*.yaml`` file, new (or ``--force``), in a directory."""
    if out.suffix not in (".yaml", ".yml"):
        raise PriceImportError(f"--out: {out} does not end in .yaml, and `seeds load` reads only *.yaml files")
    if out.exists() and not force:
        raise PriceImportError(f"{out} exists (--force replaces it)")
    if not out.parent.is_dir():
        raise PriceImportError(f"{out.parent} is not a directory")


def _convert(sheet: Path, fmt: str, context: price_import.Sheet) -> price_import.Imported:
    """FILE as price seeds (refused with its line where it is malformed, or when no row is a price); its
    unknown accelerators listed on stderr."""
    try:
        text = sheet.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PriceImportError(f"{sheet}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    convert = price_import.from_skypilot if fmt == "skypilot" else price_import.from_csv
    try:
        imported = convert(text, context)
    except PriceImportError as exc:
        raise PriceImportError(f"{sheet}: {exc}") from None
    for name, lines in imported.unknown.items():
        click.echo(f"unknown accelerator {name} on {_lines(lines)}: skipped, not guessed", err=True)
    if not imported.prices:
        raise PriceImportError(f"{sheet}: no price rows in {imported.rows_read} rows read")
    return imported


def _carry_forward(
    sheet: Path, imported: price_import.Imported, joined: SeedSet, fabrics: dict[str, str | None]
) -> price_refresh.Refresh:
    """The new rows completed from the rows of the seeds they replace (``price_refresh.carry_forward``),
    in ``imported`` in place, their plans checked; refused, with what to complete, where the seeds cannot."""
    existing = [p for p in joined.records["prices"] if isinstance(p, PriceSeed)]
    refresh = price_refresh.carry_forward(
        imported.prices,
        imported.lines,
        existing,
        unstated=imported.unstated,
        checked=imported.checked,
        declared=fabrics,
    )
    if refresh.incomplete:
        raise PriceImportError(_incomplete(sheet, refresh.incomplete))
    imported.prices = refresh.prices
    check_plans(({"file": str(sheet)}, p) for p in imported.prices)
    return refresh


def _header(command: str, context: price_import.Sheet, imported: price_import.Imported) -> list[str]:
    """The seed file's opening comment: the command that wrote it and when, what from, and what to do next."""
    return [
        f"Written by `{command}` on {_today()}: {len(imported.prices)} prices from {imported.rows_read} rows.",
        f"Source: {context.source}. Review before committing: nothing reaches the database until",
        "`compute-advisor seeds load`. Format: docs/price-books.md.",
    ]


def _report(
    imported: price_import.Imported,
    refresh: price_refresh.Refresh,
    out: Path,
    joined: SeedSet,
    problem: SeedError | None,
    seeds: Path,
) -> None:
    """What was written and skipped, what the new rows carried forward, the rows of the seeds to close,
    and whether the seed directory with the new file passes ``seeds check``."""
    plans: dict[str, int] = {}
    for p in imported.prices:
        plans[p.plan] = plans.get(p.plan, 0) + 1
    tally = ", ".join(f"{n} {'without a plan' if plan == '*' else plan}" for plan, n in plans.items())
    click.echo(f"wrote {out}: {len(imported.prices)} prices ({tally}) from {imported.rows_read} rows")
    for reason, lines in imported.skipped.items():
        click.echo(f"skipped ({reason}): {_lines(lines)}")
    unknown = sum(len(lines) for lines in imported.unknown.values())
    if unknown:
        click.echo(f"skipped (unknown accelerator, listed on stderr): {unknown} rows")
    _report_carried(refresh)
    prices = [p for p in joined.records["prices"] if isinstance(p, PriceSeed)]
    to_close = price_refresh.superseded(imported.prices, prices)
    if to_close:
        click.echo(f"before `seeds load`, close these {len(to_close)} rows of {seeds} (valid_to: the new valid_from):")
        for old, new in to_close:
            at = joined.locate("prices", natural_key("prices", old.model_dump()))
            where = f"{at['file']}: line {at['line']}: " if at["file"] else ""
            offer = "/".join(str(getattr(old, k)) for k in price_refresh.PERIOD_KEY)
            click.echo(f"  {where}{offer} from {old.valid_from}: valid_to: {new.valid_from}")
    if problem is None:
        click.echo(f"seeds check of {seeds} with {out.name}: valid")
    else:
        more = len(problem.problems) - 1
        rest = f" (and {more} more: `compute-advisor seeds check` lists them)" if more else ""
        click.echo(f"seeds check of {seeds} with {out.name}: not valid yet: {problem.problems[0]}{rest}")


group.add_command(stale_command)
