"""``prices stale``: what to refresh in the price books — the offers whose newest row is older than N
days (the rule of ``GET /v1/offers?stale_days=``, ``app.core.offers.stale``) and the currencies whose
newest exchange rate is older than 90 days (three months). It fails (exit status 1) when any is, so
a scheduled run or a CI job fails loudly; docs/price-books.md, "Stale offers and exchange rates".
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence

import click

from app.cli.common import pass_settings
from app.core.knowledge import Knowledge
from app.core.offers import last_read, offer_identity, stale
from app.core.records import Price
from app.core.vocab import OFFER_ITEMS, PIVOT
from app.kb import snapshot
from app.kb.db import transaction
from app.settings import Settings

DATE = click.DateTime(["%Y-%m-%d"])
#: an exchange rate older than this many days is stale (``--rate-days``): three months
RATE_DAYS = 90


def today() -> dt.date:
    """Today in UTC, the day ages are counted from unless a command is given another."""
    return dt.datetime.now(dt.UTC).date()


async def _knowledge(settings: Settings) -> Knowledge | None:
    async with transaction(settings) as session:
        return await snapshot.load_knowledge(session)


@click.command(name="stale")
@click.option("--days", type=click.IntRange(1, 36_500), required=True, help="Offers older than this many days.")
@click.option(
    "--rate-days",
    type=click.IntRange(1, 36_500),
    default=RATE_DAYS,
    show_default=True,
    help="Exchange rates older than this many days.",
)
@click.option("--as-of", type=DATE, help="Count ages from this day (default: today, UTC).")
@pass_settings
def stale_command(settings: Settings, days: int, rate_days: int, as_of: dt.datetime | None) -> int:
    """List the offers whose newest row is older than --days and the currencies whose newest exchange
    rate is older than --rate-days; exit status 1 when any is (or no knowledge is loaded), 0 otherwise.

    An offer's age counts from its newest row's retrieved_on (else its valid_from); the rule is the one
    of GET /v1/offers?stale_days=. A rate's age counts from its valid_on.
    """
    day = as_of.date() if as_of else today()
    kb = asyncio.run(_knowledge(settings))
    if kb is None:
        click.echo("no knowledge version: run `compute-advisor seeds load`")
        return 1
    offers = [p for p in kb.prices if p.item in OFFER_ITEMS]
    found = sorted(stale(offers, days, day), key=lambda p: (last_read(p), offer_identity(p)))
    total = len({offer_identity(p) for p in offers})
    old_rates = stale_rates(kb, rate_days, day)
    if not found:
        click.echo(f"no offer is older than {days} days on {day} ({total} offers, knowledge version {kb.version})")
    else:
        _table(found, day)
        click.echo(f"{len(found)} of {total} offers older than {days} days on {day} (knowledge version {kb.version})")
    for sentence in old_rates:
        click.echo(sentence, err=True)
    if not found and not old_rates:
        return 0
    click.echo(
        f"stale on {day}: {len(found)} offers older than {days} days and {len(old_rates)} exchange rates older "
        f"than {rate_days} days; refresh them (docs/price-books.md, 'Stale offers and exchange rates')",
        err=True,
    )
    return 1


def _table(found: Sequence[Price], today: dt.date) -> None:
    header = ("age_days", "read_on", "valid_from", "provider", "region", "plan", "gpu_model", "item", "subject")
    rows = [
        (
            str((today - last_read(p)).days),
            str(last_read(p)),
            str(p.valid_from),
            p.provider,
            p.region,
            p.plan,
            p.gpu_model,
            p.item,
            p.subject,
        )
        for p in found
    ]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    for r in (header, *rows):
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def stale_rates(kb: Knowledge, days: int, today: dt.date) -> list[str]:
    """A sentence for each currency whose newest exchange rate on or before ``today`` is more than
    ``days`` old, or that a price row valid on ``today`` is quoted in and has no rate at all. The
    currencies are those of the rates and of the valid price rows, but the pivot (CNY)."""
    priced = {p.currency for p in kb.prices if p.valid_on(today)}
    found = []
    for currency in sorted(({r.base for r in kb.rates} | priced) - {PIVOT}):
        known = [r for r in kb.rates if r.base == currency and r.valid_on <= today]
        if not known:
            if currency in priced:
                found.append(
                    f"{currency}: no exchange rate to {PIVOT} on or before {today}, and prices are quoted in it"
                )
            continue
        newest = max(known, key=lambda r: r.valid_on)
        age = (today - newest.valid_on).days
        if age > days:
            due = today - dt.timedelta(days=days)
            found.append(
                f"{currency}: the newest exchange rate ({newest.rate} {PIVOT} on {newest.valid_on}) is {age} days "
                f"old on {today}, older than {days} days; add a rate dated {due} or later"
            )
    return found
