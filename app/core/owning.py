"""Owning hardware over a horizon (docs/methodology.md "Capital"): each end of the cost's capital lines
priced by their flows (``app.core.capital``), running costs while the assets serve, the bridge while they
are delivered, and the accounting view, as one ``Ownership``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from app.core.ageing import priced
from app.core.capital import Bridge, CapitalLine, Ownership, RunningLine, annuity, flow_factors, flows, memo_key
from app.core.columns import ALL, Columns, holds
from app.core.ranges import Range


def own(
    at: Columns,
    *,
    lead_time_days: Range,
    capital: Sequence[CapitalLine],
    running: Sequence[RunningLine],
    rate: Any,
    depreciation_years: Range,
    bridge: Bridge | None = None,
) -> Ownership:
    """Capital and running costs of owning over the profile's horizon (docs/methodology.md "Capital"),
    at the ends ``at.ends``.

    The assets are bought now and delivered after the lead time; running costs are paid while they
    serve; while waiting the team either goes without (paying ``delay_cost_per_day`` when the profile
    gives one) or, with a ``bridge``, rents — whichever costs less per useful GPU-hour at the expected
    figures, per profile. ``annual`` is the accounting view: capital written off over
    ``depreciation_years`` plus running costs. Each end ``e`` of the cost takes its asset price at
    ``e``, the longer life (``2 − e``) and its residual curve; delivery is at the expected lead time.
    """
    start = [lead_time_days[e] / 365.0 for e in ALL]
    owning = _Owning(
        at=at, start=start, capital=capital, running=running, rate=rate, horizon_annuity=_horizon_annuity(at, rate)
    )
    # the expected end first: the bridge is decided on it
    per_end = {e: owning.cost_at_end(e) for e in (1, *(x for x in at.ends if x != 1))}
    bridged: Any = False
    if bridge is not None:
        bridged = owning.bridged(per_end[1].total, lead_time_days, bridge)
    hired = bridge if bridge is not None and holds(bridged) else None
    rows = [owning.accounting_row(e, per_end[e], depreciation_years, hired, bridged) for e in at.ends]
    return owning.ownership(rows, hired, bridged)


def _horizon_annuity(at: Columns, rate: Any) -> Any:
    """The present value of 1 a year over the horizon (``annuity``), computed once per cost of capital."""
    found = at.memo.get(("annuity", memo_key(rate)))
    if found is None:
        found = at.memo[("annuity", memo_key(rate))] = annuity(at.horizon, rate)
    return found


class _AtEnd(NamedTuple):
    """What owning costs at one end of the cost: total cash and present value, each capital line's cash,
    the years the assets serve, and each supported line's support paid."""

    total: Any
    npv: Any
    cash_lines: list[Any]
    serving: Any
    support_lines: list[Any]


@dataclass(frozen=True, slots=True)
class _Owning:
    """``own``'s steps: the costs at each end, whether to bridge, the accounting view and the answer.
    ``start``: when the assets are delivered (years) at each end of the lead time."""

    at: Columns
    start: list[Any]
    capital: Sequence[CapitalLine]
    running: Sequence[RunningLine]
    rate: Any
    horizon_annuity: Any

    def cost_at_end(self, e: int) -> _AtEnd:
        """Cash and present value at the end ``e``: the capital lines' flows, and the running costs paid
        while the assets serve (from delivery at the end ``2 − e`` of the lead time to the horizon)."""
        at, rate, memo = self.at, self.rate, self.at.memo
        cash_total, npv_total, cash_lines, support_lines = self.capital_at_end(e)
        yearly = 0.0
        for r in self.running:
            yearly = yearly + r.annual[e]
        in_service = self.start[2 - e]
        serving = at.maximum(at.horizon - in_service, 0.0)
        waiting_key = ("annuity", memo_key(rate), memo_key(in_service))
        waiting_pv = memo.get(waiting_key)
        if waiting_pv is None:
            waiting_pv = memo[waiting_key] = (annuity(in_service, rate), in_service)
        serving_pv = self.horizon_annuity - waiting_pv[0]
        return _AtEnd(
            cash_total + yearly * serving, npv_total + yearly * serving_pv, cash_lines, serving, support_lines
        )

    def capital_at_end(self, e: int) -> tuple[Any, Any, list[Any], list[Any]]:
        """The capital lines' cash and present value at the end ``e``, summed and line by line, with the
        support the supported lines pay; delivery at the expected lead time."""
        at, rate, memo, start_ex = self.at, self.rate, self.at.memo, self.start[1]
        delivered = memo_key(start_ex)
        cash_total: Any = 0.0
        npv_total: Any = 0.0
        cash_lines: list[Any] = []
        support_lines: list[Any] = []
        for c in self.capital:
            if c.keeping is not None:  # support by warranty, kept past its life where cheaper
                cash, npv, support, support_npv = priced(memo, c, e, start_ex, at.horizon, rate)
                if c.keeping.supported:
                    support_lines.append(support)
                cash_total, npv_total = cash_total + cash + support, npv_total + npv + support_npv
                cash_lines.append(cash)
                continue
            # assets of one kind share their factors (the same life and curves: ``cluster.curves_of``)
            key = (id(c.curves), id(c.life), e, delivered)
            factors = memo.get(key)
            if factors is None:
                factors = memo[key] = (flow_factors(c.life[2 - e], c.curves[e], start_ex, at.horizon, rate, memo), c)
            cash, npv, _ = flows(c.upfront[e], factors[0])
            cash_total, npv_total = cash_total + cash, npv_total + npv
            cash_lines.append(cash)
        return cash_total, npv_total, cash_lines, support_lines

    def bridged(self, total_ex: Any, lead_time_days: Range, bridge: Bridge) -> Any:
        """Whether renting until installation costs less per useful GPU-hour than waiting (paying the
        profile's ``delay_cost_per_day`` where it gives one), at the expected figures: a bool, or an array
        over a batch."""
        at, start_ex = self.at, self.start[1]
        operating = at.maximum(at.horizon - start_ex, 1e-9)
        per_day = at.delay_per_day
        delay = 0.0 if per_day is None else per_day * lead_time_days.expected
        wait_per_year = (total_ex + delay) / operating
        bridge_per_year = (total_ex + bridge.yearly.expected * start_ex) / at.horizon
        bridged = bridge_per_year < wait_per_year
        return bridged if isinstance(bridged, np.ndarray) else bool(bridged)

    def accounting_row(
        self, e: int, end: _AtEnd, depreciation_years: Range, hired: Bridge | None, bridged: Any
    ) -> tuple[Any, ...]:
        """The end ``e``'s ``(annual, upfront, total, npv, equivalent annual, *lines)``: capital written off
        over ``depreciation_years``, running costs, support, and the bridge where ``hired``; each line as
        ``(annual, upfront, total)``."""
        at, start = self.at, self.start
        total, npv, cash_lines, serving, support_lines = end
        line_values: list[Any] = []
        annual = upfront = 0.0
        for c, cash in zip(self.capital, cash_lines, strict=True):
            price = c.upfront[e]
            written_off = price / depreciation_years[2 - e]
            annual, upfront = annual + written_off, upfront + price
            line_values += (written_off, price, cash)
        for r in self.running:
            cost = r.annual[e]
            annual = annual + cost
            line_values += (cost, 0.0, cost * serving)
        kept_years = at.maximum(at.horizon - start[1], 1e-9)
        for support in support_lines:  # its accounting view: the support paid, a year of service on average
            annual = annual + support / kept_years
            line_values += (support / kept_years, 0.0, support)
        if hired is not None:
            yearly = hired.yearly[e]
            spent = at.where(bridged, yearly * start[e], 0.0)
            total = total + spent
            npv = npv + at.where(bridged, yearly * annuity(start[e], self.rate), 0.0)
            annual = annual + 0.0
            line_values += (0.0, 0.0, spent)
        return (annual, upfront, total, npv, npv / self.horizon_annuity, *line_values)

    def ownership(self, rows: list[tuple[Any, ...]], hired: Bridge | None, bridged: Any) -> Ownership:
        """The rows of every end as Ranges, each line under its key (capital, running, support, bridge)."""
        at = self.at
        annual_r, upfront_r, total_r, npv_r, equivalent_r, *values = at.ranges(rows)
        supported = [c.support_key for c in self.capital if c.keeping is not None and c.keeping.supported]
        keys = [c.key for c in self.capital] + [r.key for r in self.running] + supported
        keys += ["bridge"] if hired is not None else []
        lines = tuple((k, *values[3 * i : 3 * i + 3]) for i, k in enumerate(keys))
        return Ownership(
            lines=lines,  # type: ignore[arg-type]
            annual=annual_r,
            upfront=upfront_r,
            total=total_r,
            npv=npv_r,
            equivalent_annual=equivalent_r,
            bridged=bridged,
            operating_years=at.where(bridged, at.horizon, at.maximum(at.horizon - self.start[1], 1e-9)),
        )
