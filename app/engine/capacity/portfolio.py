"""From a solution to portfolios: the segments the solver took, each re-priced on its own by its
option's kernel at the size chosen (a cluster's steps as the tranches bought, the sizes used per phase
rounded up to whole GPUs), summed into a portfolio's figures."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from app.engine.capacity.demand import Phase, useful_gpu_hours
from app.engine.capacity.solver import Solution
from app.engine.capacity.tables import (
    BUY,
    COMMIT,
    OWNED,
    USE,
    Item,
    Priced,
    Pricer,
    Request,
    deadline_for,
    deadline_of,
    use_request,
)
from app.engine.insights.common import Variant
from app.sdk.ranges import Range, holds_anywhere
from app.sdk.text import Msg
from app.sdk.types import Assessment, Cost, Violation

SINGLE, HYBRID = "single", "hybrid"


@dataclass(frozen=True, slots=True)
class Segment:
    """Part of a portfolio: GPUs of one option (offer, plan) per phase, and how they are acquired."""

    option: str
    plan: str | None
    acquired: str
    gpus_by_phase: tuple[int, ...]
    start_month: int
    price: Priced
    objective: float
    offer: Priced | None = None
    #: a tranche: what it prices (its whole size), to price one GPU more
    request: Request | None = None


@dataclass(frozen=True, slots=True)
class Portfolio:
    key: str
    kind: str
    segments: tuple[Segment, ...]
    price: Priced
    #: useful GPU-hours served (the demand's, less any waited for delivery)
    served_gpu_hours: float
    objective: float
    feasible: bool
    reasons: tuple[Msg, ...] = ()

    @property
    def per_useful_gpu_hour(self) -> Range:
        return self.price.total * (1 / self.served_gpu_hours)

    @property
    def per_effective_gpu_hour(self) -> Range:
        return self.price.effective * (1 / self.served_gpu_hours)


def portfolio_of(
    key: str,
    kind: str,
    solution: Solution,
    pricer: Pricer,
    demand: Sequence[Phase],
    clusters: Mapping[int, Mapping[int, tuple[Priced, Request]]],
) -> Portfolio:
    """The solution's segments, each re-priced on its own by its kernel at the size chosen."""
    base, n = pricer.base, len(demand)
    segments: list[Segment] = []
    used: dict[tuple[str, str | None], dict[int, float]] = {}
    levels: dict[int, int] = {}
    commitments: dict[tuple[Variant, int, int], Item] = {}
    for item, amount in solution.taken:
        if item.acquired == BUY:
            levels[item.first] = max(levels.get(item.first, 0), item.level_gpus)
            continue
        if item.acquired == COMMIT:
            span = (item.variant, item.first, item.last)
            if span not in commitments or commitments[span].level_gpus < item.level_gpus:
                commitments[span] = item
            continue
        if item.acquired == USE:
            by_phase = used.setdefault((item.variant.option, item.variant.plan), {})
            by_phase[item.first] = by_phase.get(item.first, 0.0) + amount * item.gpus
            continue
        gpus = tuple(item.gpus if item.first <= p <= item.last else 0 for p in range(n))
        offer = None if item.request is None else pricer.one(item.variant, item.request)
        v = item.variant
        segments.append(
            Segment(
                v.option,
                v.plan,
                item.acquired,
                gpus,
                demand[item.first].start_month,
                item.price,
                item.price.objective,
                offer,
                item.request,
            )
        )
    for (v, first, last), item in commitments.items():
        assert item.request is not None
        whole = pricer.one(v, item.request)
        gpus = tuple(item.level_gpus if first <= p <= last else 0 for p in range(n))
        segments.append(
            Segment(
                v.option, v.plan, COMMIT, gpus, demand[first].start_month, whole, whole.objective, whole, item.request
            )
        )
    below = 0
    owner = next((i.variant for i, _ in solution.taken if i.level is not None), None)
    for first in sorted(levels):
        level = max(levels[first], below)
        if owner is None or level <= below:
            continue
        price, request = clusters[first][level]
        step = price if below == 0 else price.less(clusters[first][below][0])
        gpus = tuple(level - below if p >= first else 0 for p in range(n))
        offer = pricer.one(owner, request)
        segments.append(
            Segment(owner.option, None, BUY, gpus, demand[first].start_month, step, step.objective, offer, request)
        )
        below = level
    for (option, plan_), by_phase in used.items():
        v = Variant(option, plan_)
        sizes = {p: math.ceil(g - 1e-6) for p, g in sorted(by_phase.items()) if g > 1e-6}
        exact = {
            p: pricer.one(v, use_request(demand[p], g, deadline_for(demand[p], deadline_of(base))))
            for p, g in sizes.items()
        }
        groups: dict[tuple[str | None, bool], list[int]] = {}
        for p, pr in exact.items():
            groups.setdefault((None if pr.offer is None else pr.offer.plan, pr.committed), []).append(p)
        for (chosen, committed), phases in groups.items():
            parts = [exact[p] for p in phases]
            gpus = tuple(sizes[p] if p in phases else 0 for p in range(n))
            segments.append(
                Segment(
                    option,
                    chosen,
                    COMMIT if committed else USE,
                    gpus,
                    demand[phases[0]].start_month,
                    _sum(parts),
                    sum(x.objective for x in parts),
                    parts[0],
                )
            )
    segments.sort(key=lambda s: (_ORDER.index(s.acquired), s.start_month, s.option))
    return assemble(key, kind, tuple(segments), demand, True)


_ORDER = (OWNED, BUY, COMMIT, USE)


def assemble(key: str, kind: str, segments: tuple[Segment, ...], demand: Sequence[Phase], feasible: bool) -> Portfolio:
    price = _sum([s.price for s in segments])
    served = useful_gpu_hours(demand) - price.lost_gpu_hours
    return Portfolio(key, kind, segments, price, served, sum(s.objective for s in segments), feasible)


def infeasible(key: str, kind: str, demand: Sequence[Phase], reasons: tuple[Msg, ...]) -> Portfolio:
    p = assemble(key, kind, (), demand, False)
    return replace(p, objective=math.inf, reasons=reasons)


def _sum(prices: Sequence[Priced]) -> Priced:
    zero = Range.point(0)
    return Priced(
        objective=sum(p.objective for p in prices),
        total=sum((p.total for p in prices), zero),
        npv=sum((p.npv for p in prices), zero),
        upfront=sum((p.upfront for p in prices), zero),
        effective=sum((p.effective for p in prices), zero),
        lost_gpu_hours=sum(p.lost_gpu_hours for p in prices),
        lead_days=max((p.lead_days for p in prices), default=0.0),
        committed=any(p.committed for p in prices),
        feasible=all(p.feasible for p in prices),
    )


def assessment_on(a: Assessment, p: Portfolio, horizon_years: float) -> Assessment:
    """An option's assessment at the demand's peak, priced as its single portfolio on the whole demand
    (docs/methodology.md "Demand over time on recommendations and comparisons"): the portfolio's total,
    NPV and upfront cost and its costs per useful and per effective GPU-hour become the option's cost
    figures (``annual`` the total's yearly average); efficiency, stability and usability stay the
    peak's. The peak's offer, alternatives, breakdown and notes (sentences of its figures) describe the
    peak alone and are dropped (the portfolio's segments say what is bought). A portfolio that cannot
    serve the demand keeps the peak's figures and breaks a hard constraint: its reasons."""
    if not p.feasible or p.served_gpu_hours <= 0:
        extra = (
            ()
            if any(holds_anywhere(v.violated) for v in a.violations)
            else tuple(Violation(r, True) for r in p.reasons)
        )
        return replace(a, violations=(*a.violations, *extra))
    c, price = a.cost, p.price
    cost = Cost(
        annual=price.total * (1 / horizon_years),
        total=price.total,
        upfront=price.upfront,
        per_useful_gpu_hour=p.per_useful_gpu_hour,
        useful_gpu_hours=p.served_gpu_hours / horizon_years,
        # not priced per portfolio: the peak's, which no answer on a demand shows
        paid_gpu_hours=c.paid_gpu_hours,
        committed=price.committed,
        breakdown=(),
        npv=price.npv,
        equivalent_annual=None,
        useful_gpu_hours_total=p.served_gpu_hours,
        per_effective_gpu_hour=p.per_effective_gpu_hour,
    )
    return replace(a, cost=cost, offer=None, alternatives=(), notes=())


__all__ = [
    "HYBRID",
    "SINGLE",
    "Portfolio",
    "Segment",
    "assemble",
    "assessment_on",
    "infeasible",
    "portfolio_of",
]
