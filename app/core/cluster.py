"""The bill of materials of an owned cluster: a pricing block of the SDK (docs/plugins.md).

A bill is compiled once per offer (``Bill``): each component's price rows in the kernel's currency —
every volume tier — and the sources each line will cite, in the order the methodology reads the
knowledge base (``Reads``). Priced for one profile (``Bill.lines``), it gives the capital and running
lines that ``app.core.owning.own`` turns into cash, present value and the accounting view; answered
(``Bill.labels``), the words and sources of each line. An option that owns hardware (the built-in own
cluster, a hybrid's owned base, a third party's colocation offer) composes its bill from these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.ageing import Keeping, on_market
from app.core.capital import Bridge, CapitalLine, RunningLine, residual_curves
from app.core.columns import Columns
from app.core.kernel import Kernel
from app.core.knowledge import Price, SourceRef
from app.core.ranges import Range
from app.core.text import Msg, msg
from app.core.types import HOURS_PER_YEAR

MONTHS_PER_YEAR = 12
DAYS_PER_YEAR = 365


class Reads:
    """The order in which a bill reads the knowledge base, as its lines cite it: an assumption or a
    component's exchange rate joins the pending sources; a line takes them (``Inputs.take_refs``)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.pending: list[SourceRef] = []

    def __call__(self, key: str) -> Range:
        self.pending.append(self.kernel.ref(key))
        return self.kernel.value(key)

    def take(self) -> tuple[SourceRef, ...]:
        taken, self.pending = tuple(dict.fromkeys(self.pending)), []
        return taken

    def component(self, row: Price, item: str, *units: str) -> Component | None:
        """The component ``item`` that goes with the offer ``row``, priced in ``units``: the nearest
        region's rows (``Knowledge.component``), every volume tier, converted; the pending sources
        taken with it. None where the knowledge base has none."""
        k = self.kernel
        rows = [
            r
            for r in k.knowledge.component(
                k.option,
                item,
                as_of=k.as_of,
                provider=row.provider,
                region=row.region,
                subject=row.subject,
                gpu_model=row.gpu_model,
                units=units,
            )
        ]
        if not rows:
            return None
        if any(r.min_kw is not None for r in rows):
            ordered = sorted(rows, key=lambda r: r.min_kw or 0.0)
            tiered: str | None = "kw"
        elif any(r.min_gpus for r in rows):
            ordered, tiered = sorted(rows, key=lambda r: r.min_gpus or 0), "gpus"
        else:
            ordered, tiered = rows[:1], None
        values = []
        for r in ordered:
            if r.unit == "fraction":  # a share of another line's price: no currency to convert
                values.append(r.value)
                continue
            conversion = k.knowledge.conversion(r.currency, k.currency, k.as_of)
            self.pending.extend(conversion.refs)
            values.append(r.value * conversion.factor)
        return Component(tuple(ordered), tuple(values), tiered, self.take())


def curves_of(
    kernel: Kernel,
    decline: Range,
    resale: tuple[tuple[float, tuple[float, float, float]], ...],
    market: tuple[Range, Range] | None = None,
) -> tuple[Any, Any, Any]:
    """``capital.residual_curves`` of ``decline`` and ``resale``, made once per kernel (assets with the
    same curves share the flows computed for them); ``market``: the resale haircut and the days to sell,
    where the seller receives the curve less the haircut, that many days older (``ageing.on_market``;
    the low cost end takes the smaller haircut and the quicker sale)."""
    key = ("curves", id(decline), resale, None if market is None else (id(market[0]), id(market[1])))
    found = kernel.compiled.get(key)
    if found is None:
        made: tuple[Any, ...] = residual_curves(decline, resale)
        if market is not None:
            haircut, days = market
            made = tuple(on_market(curve, haircut[e], days[e] / DAYS_PER_YEAR) for e, curve in enumerate(made))
        found = kernel.compiled[key] = (made, decline, market)
    curves: tuple[Any, Any, Any] = found[0]
    return curves


@dataclass(frozen=True, slots=True)
class Component:
    """A component's price rows (volume tiers by ``min_gpus``, lowest first), in the kernel's currency,
    and the sources its line cites after the tier's own row."""

    rows: tuple[Price, ...]
    values: tuple[Range, ...]
    #: how the rows are tiers: by the cluster's GPUs (``min_gpus``), its IT kW (``min_kw``), or not at all
    tiered: str | None
    #: the pending sources taken with it (the rates that converted it, and what was read before)
    after: tuple[SourceRef, ...]
    #: each tier's smallest amount (IT kW or GPUs), lowest first
    bounds: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        by_kw = self.tiered == "kw"
        bounds = tuple((r.min_kw or 0.0) if by_kw else (r.min_gpus or 0) for r in self.rows)
        object.__setattr__(self, "bounds", bounds)

    def pick(self, size: Size) -> tuple[Range, Price]:
        """The price for a cluster of ``size`` (the tier its GPUs or IT kW fall in; per profile over a
        batch) and its row."""
        if self.tiered is None:
            return self.values[0], self.rows[0]
        amount = size.it_kw if self.tiered == "kw" else size.gpus
        bounds = self.bounds
        if isinstance(amount, np.ndarray):  # each profile of a batch in its own tier
            conditions = [amount >= b for b in reversed(bounds)]
            # below the lowest tier's minimum: the lowest tier, as for one profile (never a price of 0)
            ends = (
                np.select(conditions, [v[i] for v in reversed(self.values)], default=self.values[0][i])
                for i in range(3)
            )
            return Range.elementwise(*ends), self.rows[0]
        # below the lowest tier's minimum: the lowest tier (the knowledge base prices no smaller one)
        index = max((i for i, b in enumerate(bounds) if b <= amount), default=0)
        return self.values[index], self.rows[index]

    def sources(self, size: Size) -> tuple[SourceRef, ...]:
        return (self.pick(size)[1].ref, *self.after)


@dataclass(frozen=True, slots=True)
class Size:
    """What a bill is multiplied by for one profile (numbers, or arrays over a batch)."""

    servers: Any
    gpus: Any
    it_kw: Any
    teams: Range

    def of(self, base: str, e: int) -> Any:
        """The cluster's ``base`` amount (``Quantity.base``) at end ``e``."""
        if base == SERVERS:
            return self.servers
        if base == GPUS:
            return self.gpus
        if base == TEAMS:
            return self.teams[e]
        if base == IT_KW:
            return self.it_kw
        if base == KW_MONTHS:  # colocation is rented per kW-month
            return self.it_kw * MONTHS_PER_YEAR
        if base == KWH_PER_YEAR:
            return self.it_kw * HOURS_PER_YEAR
        raise KeyError(base)


#: what a bill's quantities are counted in: servers, GPUs, IT kW, kW-months a year, kWh a year, ops teams
SERVERS, GPUS, IT_KW, KW_MONTHS, KWH_PER_YEAR, TEAMS = "servers", "gpus", "it_kw", "kw_months", "kwh_per_year", "teams"


@dataclass(frozen=True, slots=True)
class Quantity:
    """How much of a component a cluster buys: ``factor × base`` — ``base`` one of the cluster's amounts
    (``SERVERS``, ``GPUS``, ``IT_KW``, ``KW_MONTHS``, ``KWH_PER_YEAR``, ``TEAMS``), ``factor`` a range
    read from the knowledge base (storage TB per GPU, PUE × draw share, the hardware's price…), or none."""

    base: str
    factor: Range | None = None

    def at(self, size: Size, e: int) -> Any:
        """The quantity at end ``e`` of its factor and of the size."""
        amount = size.of(self.base, e)
        return amount if self.factor is None else self.factor[e] * amount


servers, gpus, it_kw, kw_months, teams = (Quantity(b) for b in (SERVERS, GPUS, IT_KW, KW_MONTHS, TEAMS))


@dataclass(frozen=True, slots=True)
class CapitalItem:
    """An asset class the cluster buys: its price (a component, or the offer's own price), the quantity,
    its life and residual decline (assumptions), market resale points, and the sources it cites."""

    key: str
    #: None: written when answered (the servers line names how many servers)
    label: Msg | None
    basis: Msg
    price: Component | Range
    quantity: Quantity
    life: Range
    decline: Range
    #: the sources the line takes after its price's (its life and decline assumptions)
    life_refs: tuple[SourceRef, ...]
    resale: tuple[tuple[float, tuple[float, float, float]], ...] = ()
    #: the offer's sources, where the price is the offer's own
    offer_refs: tuple[SourceRef, ...] = ()
    #: its residual curves per end (``capital.residual_curves``), made once (shared by the items of a
    #: kernel with the same decline and resale points: ``curves_of``)
    curves: Any = None
    #: support by warranty and keeping past its life (``app.core.ageing``); None: replaced at its life
    keeping: Keeping | None = None
    #: the sources of its support line (where ``keeping`` prices support)
    support_refs: tuple[SourceRef, ...] = ()

    def __post_init__(self) -> None:
        if self.curves is None:
            object.__setattr__(self, "curves", residual_curves(self.decline, self.resale))


@dataclass(frozen=True, slots=True)
class RunningItem:
    """A cost paid every year the cluster serves: a component times a quantity."""

    key: str
    label: Msg
    basis: Msg
    price: Component
    quantity: Quantity
    #: sources taken after the component's own (an assumption the quantity reads: PUE, licensed share)
    more: tuple[SourceRef, ...] = ()


@dataclass(frozen=True, slots=True)
class Bill:
    """An owned-cluster offer compiled: its power per server and every line of its bill."""

    power_kw: float | None
    capital: tuple[CapitalItem, ...]
    running: tuple[RunningItem, ...]
    #: sources read by the bill that no line took: they join the efficiency's (as the model reads them)
    pending: tuple[SourceRef, ...]
    #: how the cluster's servers are joined (the network fabric's interconnect), None where unknown
    interconnect: str | None = None

    def lines(self, size: Size, at: Columns) -> tuple[list[CapitalLine], list[RunningLine]]:
        """The bill priced for one profile at the ends ``at.ends``: ``app.core.owning.own``'s capital and
        running lines, each ``price × quantity`` (their words are written when answered)."""
        ends = at.ends
        capital = []
        for item in self.capital:
            price, quantity = item.price, item.quantity
            if not isinstance(price, Range):
                price = price.pick(size)[0]
            values = [price[e] * quantity.at(size, e) for e in ends]
            capital.append(CapitalLine(item.key, at.range(values), item.life, item.curves, item.keeping))
        running = []
        for run in self.running:
            price, quantity = run.price.pick(size)[0], run.quantity
            running.append(RunningLine(run.key, at.range([price[e] * quantity.at(size, e) for e in ends])))
        return capital, running

    def labels(
        self, size: Size, server_name: str, bridge: Bridge | None, *, hired: bool = False
    ) -> dict[str, tuple[Msg, Msg, tuple[SourceRef, ...]]]:
        """Each line's label, basis and sources as ``app.core.owning.own`` writes its lines; ``hired``:
        the ops teams are hired for the cluster (the team has none), and their line says so."""
        found: dict[str, tuple[Msg, Msg, tuple[SourceRef, ...]]] = {}
        for item in self.capital:
            label = item.label or msg(
                "line.server_hardware",
                f"{size.servers} × {server_name}",
                servers=str(size.servers),
                server=server_name,
            )
            before = item.offer_refs if isinstance(item.price, Range) else item.price.sources(size)
            basis = msg(
                "basis.capital",
                f"{item.basis}; written off over the depreciation period; cash: purchases and replacements less resale",
                basis=item.basis,
            )
            found[item.key] = (label, basis, (*before, *item.life_refs))
            if item.keeping is not None and item.keeping.supported:
                found["hardware_support"] = (
                    msg("line.hardware_support", "Hardware support contract"),
                    msg(
                        "basis.support.warranty",
                        "servers × price per server × (the in-warranty share a year while the OEM warranty runs, "
                        "the post-warranty share after it, raised for years kept past the servers' life)",
                    ),
                    item.support_refs,
                )
        for run in self.running:
            label = run.label
            if hired and run.key == "ops_team":
                label = msg("line.ops.hired", "Operations team, hired to run the cluster (your team has none)")
            found[run.key] = (label, run.basis, (*run.price.sources(size), *run.more))
        if bridge is not None:
            found["bridge"] = (
                msg("line.bridge", "Rented until installed"),
                msg(
                    "basis.bridge",
                    "useful GPU-hours ÷ utilization of rented instances × cheapest on-demand price × lead time",
                ),
                bridge.sources,
            )
        return found
