"""New price rows against the rows of the seeds they follow: which rows a refresh must close
(``superseded``) and what a new row takes from the row it replaces (``carry_forward``).

A catalog knows prices, not everything a row says: SkyPilot's has no interconnect, residency,
capacity, lead time or billing. A new row takes each field its file does not state from the row it
replaces — the same offer (``PERIOD_KEY``) — and, for what the instance type itself decides
(``INSTANCE_FACTS``), from the other rows of the instance type when the offer has no row of its own
yet. What cannot be taken and is needed for the row to mean what it says is listed, never guessed:
an instance of 8 GPUs or more without an interconnect is refused every job across nodes.
Pure: rows in, rows out; ``compute-advisor prices import`` reports and refuses. docs/price-books.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.offers import MIN_NODE_GPUS
from app.kb.price_yaml import OFFER_TERMS
from app.kb.seeds import PriceSeed

#: what an offer is over time: the natural key of a price row but for its date
PERIOD_KEY = ("option", "provider", "item", "subject", "gpu_model", "plan", "region", "currency")
#: what an instance type is, whatever its plan and region
INSTANCE_KEY = ("option", "provider", "item", "subject", "gpu_model")
#: what a row says beyond its price and its source: a file that does not state one of these leaves it
#: to the row the new row replaces
CARRIED = ("gpus_per_unit", *OFFER_TERMS)
#: of those, what the instance type decides (not its plan or region): also taken from the instance
#: type's other rows when they agree
INSTANCE_FACTS = ("gpus_per_unit", "residency", "interconnect")
#: the item of a row that prices an instance jobs run on (an own cluster's rows are components)
INSTANCE_ITEM = "instance_hour"


@dataclass(frozen=True)
class Carried:
    """What one new row took, and from which row of the seeds."""

    row: PriceSeed
    line: int
    source: PriceSeed
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Incomplete:
    """A new row that cannot be written as it is: ``field`` must be stated, for ``why``."""

    row: PriceSeed
    line: int
    field: str
    why: str


@dataclass
class Refresh:
    """The new rows with what they carry forward, and the rows to complete before anything is written."""

    prices: list[PriceSeed]
    carried: list[Carried] = field(default_factory=list)
    #: (row, line, field, value) for each value stated at import (``--interconnect``)
    declared: list[tuple[PriceSeed, int, str, Any]] = field(default_factory=list)
    incomplete: list[Incomplete] = field(default_factory=list)


def superseded(new: Iterable[PriceSeed], existing: Iterable[PriceSeed]) -> list[tuple[PriceSeed, PriceSeed]]:
    """(existing row, new row) for every row of the seeds still open on the day a new row of the same
    offer starts: it must be closed with ``valid_to`` = the new row's ``valid_from`` before they load."""
    by_offer: dict[tuple[Any, ...], list[PriceSeed]] = {}
    for row in existing:
        by_offer.setdefault(_key(row, PERIOD_KEY), []).append(row)
    found = []
    for row in new:
        for old in by_offer.get(_key(row, PERIOD_KEY), []):
            if old.valid_from < row.valid_from and (old.valid_to is None or old.valid_to > row.valid_from):
                found.append((old, row))
    return found


def needs_interconnect(row: PriceSeed) -> bool:
    """Whether a job may span several of the row's instances, so that their interconnect decides it:
    an instance of ``MIN_NODE_GPUS`` GPUs or more, whichever option rents it."""
    return row.item == INSTANCE_ITEM and (row.gpus_per_unit or 1) >= MIN_NODE_GPUS


def _key(row: PriceSeed, names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(getattr(row, k) for k in names)


def _replaced(row: PriceSeed, rows: Sequence[PriceSeed]) -> PriceSeed | None:
    """Of one offer's rows, the one ``row`` follows: the latest that starts before it, else the first."""
    before = [r for r in rows if r.valid_from < row.valid_from]
    if before:
        return max(before, key=lambda r: r.valid_from)
    return min(rows, key=lambda r: r.valid_from) if rows else None


def carry_forward(
    prices: Sequence[PriceSeed],
    lines: Sequence[int],
    existing: Iterable[PriceSeed],
    *,
    unstated: Iterable[str],
    checked: Iterable[str] = (),
    declared: Mapping[str, str | None] | None = None,
) -> Refresh:
    """``prices`` (read on ``lines`` of their file) with every ``unstated`` field taken from the row of
    ``existing`` each replaces (the same offer), else — for ``INSTANCE_FACTS`` — from the instance type's
    other rows where they agree; ``declared`` (instance type → interconnect, None for "not known") is
    stated at import and wins. A field of ``checked`` the file states must equal the replaced row's. An
    interconnect neither carried nor declared on a row that ``needs_interconnect`` makes it incomplete."""
    offers: dict[tuple[Any, ...], list[PriceSeed]] = {}
    for old in existing:
        offers.setdefault(_key(old, PERIOD_KEY), []).append(old)
    instances: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for key in offers:
        instances.setdefault(key[: len(INSTANCE_KEY)], []).append(key)
    taken, checks, stated = frozenset(unstated) & set(CARRIED), tuple(checked), declared or {}
    result = Refresh(prices=[])
    for row, line in zip(prices, lines, strict=True):
        own = _replaced(row, offers.get(_key(row, PERIOD_KEY), []))
        kin = [r for k in instances.get(_key(row, INSTANCE_KEY), []) if (r := _replaced(row, offers[k])) is not None]
        updates: dict[str, Any] = {}
        sources: dict[str, PriceSeed] = {}
        for name in CARRIED:
            if name not in taken:
                continue
            if name == "interconnect" and row.subject in stated:
                updates[name] = stated[row.subject]
                result.declared.append((row, line, name, stated[row.subject]))
                continue
            source = own if own is not None else _agreed(kin, name) if name in INSTANCE_FACTS else None
            if source is not None:
                updates[name], sources[name] = getattr(source, name), source
            elif name == "interconnect" and needs_interconnect(row):
                why = "nodes of 8 GPUs or more without an interconnect are refused every job across nodes"
                disagree = " (the instance type's rows disagree)" if kin else " (no row of the seeds to take it from)"
                result.incomplete.append(Incomplete(row, line, name, why + disagree))
        for name in checks:
            source = own if own is not None else _agreed(kin, name)
            if source is not None and getattr(source, name) is not None and getattr(source, name) != getattr(row, name):
                result.incomplete.append(
                    Incomplete(
                        row,
                        line,
                        name,
                        f"the file says {getattr(row, name)}, {_label(source)} says "
                        f"{getattr(source, name)}; an instance type's GPUs do not change: correct the file",
                    )
                )
        new = _with(row, updates, sources, declared=[n for n in updates if n not in sources])
        result.prices.append(new)
        for source in dict.fromkeys(sources.values()):
            names = tuple(n for n, s in sources.items() if s is source)
            result.carried.append(Carried(new, line, source, names))
    return result


def _agreed(rows: Sequence[PriceSeed], name: str) -> PriceSeed | None:
    """The first of ``rows`` when all of them say the same ``name``, else None."""
    return rows[0] if rows and len({getattr(r, name) for r in rows}) == 1 else None


def _label(row: PriceSeed) -> str:
    return f"the {row.subject} {row.plan} {row.region} row of {row.valid_from}"


def _with(row: PriceSeed, updates: dict[str, Any], sources: dict[str, PriceSeed], declared: list[str]) -> PriceSeed:
    """``row`` with ``updates``, its notes saying where each value that says something came from."""
    if not updates:
        return row
    said = []
    for source in dict.fromkeys(sources.values()):
        values = [f"{n} {getattr(source, n)}" for n, s in sources.items() if s is source and getattr(source, n)]
        if values:
            said.append(f"{', '.join(values)} carried forward from {_label(source)} (the file does not say).")
    for name in declared:
        value = updates[name]
        said.append(f"{name} {value or 'not known'} as stated at import.")
    notes = " ".join(filter(None, [row.notes, *said])) or None
    return PriceSeed.model_validate({**row.model_dump(), **updates, "notes": notes})
