"""Storage and egress of a rented or platform offer (a pricing block of the SDK, docs/methodology.md
"Storage and egress on every side").

An own cluster buys its shared storage (``app.core.bom``: GPUs × ``storage_tb_per_gpu`` × price per
TB); a rented or platform offer rents the same data volume from its provider, every month of the
horizon: ``GPUs × storage_tb_per_gpu × price per TB-month × 12`` a year. Where the provider bills
egress, the share of the data moved out once at the end of the horizon (``egress_share``) is paid at
its price per TB. A provider that publishes no storage price is priced at the lowest storage price
another provider of the same option publishes (a floor, said in the line's basis); one that
publishes no egress price gets no egress line. Both options compile one ``Storage`` per provider and
region and add its two lines with ``lines``. The source article's reference offers (no named GPU)
carry none, as its own-cluster server carries its quoted lump and no storage line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.core.columns import Columns
from app.core.kernel import Kernel
from app.core.knowledge import ANY
from app.core.model import ZERO
from app.core.offers import level
from app.core.pricing import Line, annuity
from app.core.ranges import Range
from app.core.records import Price, SourceRef
from app.core.text import msg
from app.core.types import LineItem

#: months a year, for prices per TB-month
MONTHS_PER_YEAR = 12
STORAGE, EGRESS = "storage", "egress"


@dataclass(frozen=True, slots=True)
class Storage:
    """A provider's storage price per TB-month and egress price per TB (None: not billed or not
    published), in the kernel's currency, with the rows and rates that gave them; ``floor``: the
    provider publishes none, so the lowest price of another provider is used."""

    per_tb_month: Range
    egress_per_tb: Range | None
    refs: tuple[SourceRef, ...]
    egress_refs: tuple[SourceRef, ...]
    floor: bool


@dataclass(frozen=True, slots=True)
class Stored:
    """What an offer's data costs at the ends of a quote: a year of storage, the egress at the end,
    both over the horizon, and their present value."""

    annual: Any
    total: Any
    egress: Any
    npv: Any


def storage_of(kernel: Kernel, option: str, row: Price) -> Storage | None:
    """The storage (and egress) of the provider of offer ``row`` for its region (the nearest region's
    row along the hierarchy), compiled once per provider and region; None when no provider of
    ``option`` publishes a storage price, and for the source article's reference offers (no named GPU:
    their quoted prices stand as the article gives them, as the own side's quoted lump does)."""
    if row.gpu_model == ANY:
        return None
    key = ("storage", row.provider, row.region)
    if key in kernel.compiled:
        found: Storage | None = kernel.compiled[key]
        return found
    kb, as_of = kernel.knowledge, kernel.as_of
    own = kb.component(option, STORAGE, as_of=as_of, provider=row.provider, region=row.region)
    floor = not own
    if floor:  # the lowest price any provider of the option publishes
        rows = [p for p in kb.rows(option, STORAGE, as_of) if p.unit == "per_tb_month"]
        own = sorted(rows, key=lambda p: level(_converted(kernel, p)[0].expected))[:1]
    found = None
    if own:
        per_tb_month, refs = _converted(kernel, own[0])
        out = kb.component(option, EGRESS, as_of=as_of, provider=row.provider, region=row.region)
        egress, egress_refs = _converted(kernel, out[0]) if out and not floor else (None, ())
        found = Storage(per_tb_month, egress, refs, egress_refs, floor)
    kernel.compiled[key] = found
    return found


def _converted(kernel: Kernel, row: Price) -> tuple[Range, tuple[SourceRef, ...]]:
    conversion = kernel.knowledge.conversion(row.currency, kernel.currency, kernel.as_of)
    return row.value * conversion.factor, (row.ref, *conversion.refs)


def stored(kernel: Kernel, at: Columns, storage: Storage, e: int, rate: float) -> Stored:
    """The data's cost at end ``e``: ``GPUs × storage_tb_per_gpu × price per TB-month × 12`` a year for
    the horizon (discounted at ``rate`` like every yearly cost), plus ``GPUs × storage_tb_per_gpu ×
    egress_share × egress price per TB`` once at the horizon's end."""
    volume = at.gpus * kernel.value("storage_tb_per_gpu")[e]
    annual = volume * storage.per_tb_month[e] * MONTHS_PER_YEAR
    egress: Any = 0.0
    if storage.egress_per_tb is not None:
        egress = volume * kernel.value("egress_share")[e] * storage.egress_per_tb[e]
    npv = annual * annuity(at.horizon, rate) + egress * (1 + rate) ** -at.horizon
    return Stored(annual, annual * at.horizon + egress, egress, npv)


def lines(at: Columns, rows: list[Stored], with_egress: bool) -> tuple[Line, ...]:
    """The storage line (a year, and the horizon) and, where egress is billed, the egress line (once)."""
    annual, total, egress = at.ranges([(s.annual, s.annual * at.horizon, s.egress) for s in rows])
    found: tuple[Line, ...] = ((STORAGE, annual, ZERO, total),)
    if with_egress:
        found += ((EGRESS, ZERO, ZERO, egress),)
    return found


def line_items(kernel: Kernel, option: str, row: Price, found: tuple[Line, ...]) -> tuple[LineItem, ...]:
    """The breakdown's storage and egress lines of offer ``row`` from its quote's ``found`` lines."""
    store = storage_of(kernel, option, row)
    if store is None:
        return ()
    items = []
    for key, annual, upfront, total in found:
        if key == EGRESS:
            label = msg("line.data.egress", "Data moved out once (egress)")
            basis = msg(
                "basis.data.egress", "GPUs × TB of storage per GPU × share moved out once × egress price per TB"
            )
            sources = (*store.egress_refs, kernel.ref("storage_tb_per_gpu"), kernel.ref("egress_share"))
        else:
            label = msg("line.data.storage", "Storage for datasets and checkpoints")
            basis = (
                msg(
                    "basis.data.storage_floor",
                    "GPUs × TB of storage per GPU × price per TB-month × 12 (the provider publishes no storage "
                    "price: the lowest price another provider publishes)",
                )
                if store.floor
                else msg("basis.data.storage", "GPUs × TB of storage per GPU × price per TB-month × 12")
            )
            sources = (*store.refs, kernel.ref("storage_tb_per_gpu"))
        items.append(
            LineItem(key=key, label=label, annual=annual, upfront=upfront, basis=basis, sources=sources, total=total)
        )
    return tuple(items)
