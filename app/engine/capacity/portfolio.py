"""From a solution to portfolios: the segments the solver took, each re-priced on its own by its
option's kernel at the size chosen (a cluster's steps as the tranches bought, the sizes used per phase
rounded up to whole GPUs), summed into a portfolio's figures."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from app.core.ranges import Range, holds_anywhere
from app.core.text import Msg
from app.core.types import Assessment, Cost, Violation
from app.engine.capacity import served as why
from app.engine.capacity.demand import Phase, useful_gpu_hours
from app.engine.capacity.solver import Solution
from app.engine.capacity.tables import (
    BRIDGE,
    BUY,
    COMMIT,
    DAYS_PER_YEAR,
    OWNED,
    SERVED_TOLERANCE,
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
    #: days after ``as_of`` it is ordered (its phase's start less its lead time; 0: at once) and its lead time
    order_day: float | None = None
    lead_time_days: float | None = None
    #: GPUs already owned: their model and how many (``gpus_by_phase`` counts them in the demand's model)
    gpu_model: str | None = None
    owned_gpus: int | None = None


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
    #: useful GPU-hours the demand asks for: a feasible portfolio serves them all (``SERVED_TOLERANCE``)
    demand_gpu_hours: float = 0.0

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
    bridges: Mapping[int, tuple[Variant, Priced, Request]] | None = None,
    owned: Sequence[tuple[str, int, bool]] = (),
) -> Portfolio:
    """The solution's segments, each re-priced on its own by its kernel at the size chosen (the
    segments of an option in one kernel call: ``Pricer.each``); a first cluster's bridge until
    installed (``bridges``, by level) as a segment of its own. ``owned``: each entry of GPUs already
    owned as (GPU model, count, of the demand's model)."""
    segments: list[Segment] = []
    used: dict[Variant, dict[int, float]] = {}
    levels: dict[int, int] = {}
    commitments: dict[tuple[Variant, int, int], Item] = {}
    for item, amount in solution.taken:
        if item.acquired == BUY:
            levels[item.first] = max(levels.get(item.first, 0), item.level_gpus)
        elif item.acquired == COMMIT:
            span = (item.variant, item.first, item.last)
            if span not in commitments or commitments[span].level_gpus < item.level_gpus:
                commitments[span] = item
        elif item.acquired == USE:
            by_phase = used.setdefault(item.variant, {})
            by_phase[item.first] = by_phase.get(item.first, 0.0) + amount * item.gpus
        else:
            segments.append(_owned(pricer, demand, item, owned))
    segments += _committed(pricer, demand, commitments)
    owner = next((i.variant for i, _ in solution.taken if i.level is not None), None)
    if owner is not None:
        segments += _grown(pricer, demand, owner, levels, clusters, bridges)
    for v, by_phase in used.items():
        segments += _used(pricer, demand, v, by_phase)
    segments.sort(key=lambda s: (_ORDER.index(s.acquired), s.start_month, s.option))
    return assemble(key, kind, tuple(segments), demand, True)


def _owned(pricer: Pricer, demand: Sequence[Phase], item: Item, owned: Sequence[tuple[str, int, bool]]) -> Segment:
    """GPUs already owned, through the horizon: as many GPUs of the demand's model as they are worth."""
    held = math.floor(item.serves + 1e-9)
    gpus = tuple(held if item.first <= p <= item.last else 0 for p in range(len(demand)))
    offer = None if item.request is None else pricer.one(item.variant, item.request)
    v = item.variant
    entry = owned[item.owned] if item.owned is not None and item.owned < len(owned) else None
    model, count = (None, None) if entry is None else entry[:2]
    return Segment(
        v.option,
        v.plan,
        item.acquired,
        gpus,
        demand[item.first].start_month,
        item.price,
        item.price.objective,
        offer,
        item.request,
        gpu_model=model,
        owned_gpus=count,
    )


def _committed(
    pricer: Pricer, demand: Sequence[Phase], commitments: Mapping[tuple[Variant, int, int], Item]
) -> list[Segment]:
    """Each commitment taken (its largest size per span), priced whole: a plan's spans in one call."""
    wholes: dict[tuple[Variant, int, int], Priced] = {}
    for v in dict.fromkeys(span[0] for span in commitments):
        spans = [span for span in commitments if span[0] == v]
        wholes.update(zip(spans, pricer.each(v, [_request(commitments[span]) for span in spans]), strict=True))
    return [
        _tranche(
            v.option,
            v.plan,
            COMMIT,
            tuple(item.level_gpus if first <= p <= last else 0 for p in range(len(demand))),
            demand[first].start_month,
            wholes[(v, first, last)],
            wholes[(v, first, last)],
            _request(item),
        )
        for (v, first, last), item in commitments.items()
    ]


def _tranche(
    option: str,
    plan: str | None,
    acquired: str,
    gpus: tuple[int, ...],
    start_month: int,
    price: Priced,
    offer: Priced,
    request: Request,
) -> Segment:
    """A tranche's segment: ``request`` ordered at ``start − lead`` (at once for the first phase), the
    lead time its offer's."""
    return Segment(
        option,
        plan,
        acquired,
        gpus,
        start_month,
        price,
        price.objective,
        offer,
        request,
        order_day=request.order_years * DAYS_PER_YEAR,
        lead_time_days=offer.lead_days,
    )


def _request(item: Item) -> Request:
    assert item.request is not None
    return item.request


def _grown(
    pricer: Pricer,
    demand: Sequence[Phase],
    owner: Variant,
    levels: Mapping[int, int],
    clusters: Mapping[int, Mapping[int, tuple[Priced, Request]]],
    bridges: Mapping[int, tuple[Variant, Priced, Request]] | None,
) -> list[Segment]:
    """The owned cluster's tranches: at each phase it is raised at, the level reached less the level
    before (a level never falls), with the offer of the whole tranche (all in one call); the first
    one's bridge until installed, where it has one."""
    steps: list[tuple[int, int, int]] = []  # (phase, level before, level reached)
    below = 0
    for first in sorted(levels):
        level = max(levels[first], below)
        if level > below:
            steps.append((first, below, level))
            below = level
    offers = pricer.each(owner, [clusters[first][level][1] for first, _, level in steps])
    found = []
    for (first, below, level), offer in zip(steps, offers, strict=True):
        price, request = clusters[first][level]
        step = price if below == 0 else price.less(clusters[first][below][0])
        bridged = first == 0 and bridges is not None and level in bridges
        if bridged:  # the wait for delivery is served by the bridge
            step = replace(step, lost_gpu_hours=0.0, waits=False)
        gpus = tuple(level - below if p >= first else 0 for p in range(len(demand)))
        found.append(_tranche(owner.option, None, BUY, gpus, demand[first].start_month, step, offer, request))
        if bridged:
            assert bridges is not None
            found.append(_bridged(pricer, demand, *bridges[level]))
    return found


def _used(pricer: Pricer, demand: Sequence[Phase], v: Variant, by_phase: Mapping[int, float]) -> list[Segment]:
    """An option billed as used: each phase's GPUs rounded up to whole ones and priced on their own
    (every phase in one call), one segment per plan its kernel chose (and whether it commits)."""
    sizes = {p: math.ceil(g - 1e-6) for p, g in sorted(by_phase.items()) if g > 1e-6}
    deadline = deadline_of(pricer.base)
    asked = [use_request(demand[p], g, deadline_for(demand[p], deadline)) for p, g in sizes.items()]
    exact = dict(zip(sizes, pricer.each(v, asked), strict=True))
    groups: dict[tuple[str | None, bool], list[int]] = {}
    for p, pr in exact.items():
        groups.setdefault((None if pr.offer is None else pr.offer.plan, pr.committed), []).append(p)
    found = []
    for (chosen, committed), phases in groups.items():
        parts = [exact[p] for p in phases]
        found.append(
            Segment(
                v.option,
                chosen,
                COMMIT if committed else USE,
                tuple(sizes[p] if p in phases else 0 for p in range(len(demand))),
                demand[phases[0]].start_month,
                _sum(parts),
                sum(x.objective for x in parts),
                parts[0],
            )
        )
    return found


_ORDER = (OWNED, BUY, BRIDGE, COMMIT, USE)


def _bridged(pricer: Pricer, demand: Sequence[Phase], v: Variant, _: Priced, request: Request) -> Segment:
    """A first cluster's bridge until installed, re-priced on its own: its GPUs in the phases the wait
    reaches into."""
    quote = pricer.one(v, request)
    gpus = tuple(request.gpus if p.start_years < request.horizon_years else 0 for p in demand)
    plan = None if quote.offer is None else quote.offer.plan
    return Segment(v.option, plan, BRIDGE, gpus, 0, quote, quote.objective, quote, request)


def assemble(key: str, kind: str, segments: tuple[Segment, ...], demand: Sequence[Phase], feasible: bool) -> Portfolio:
    """A portfolio of ``segments``; one that leaves more than ``SERVED_TOLERANCE`` of the demand's
    useful GPU-hours unserved is not feasible, and says so — but for a first cluster's wait for delivery
    that nothing else may bridge (no other option may serve the demand), which is said."""
    price = _sum([s.price for s in segments])
    asked = useful_gpu_hours(demand)
    served = asked - price.lost_gpu_hours
    found = Portfolio(key, kind, segments, price, served, sum(s.objective for s in segments), feasible, (), asked)
    waited = [s for s in segments if s.acquired == BUY and s.start_month == 0 and s.price.lost_gpu_hours > 0]
    share = served / asked if asked > 0 else 0.0
    if feasible and served + sum(s.price.lost_gpu_hours for s in waited) < asked * (1 - SERVED_TOLERANCE):
        return replace(found, feasible=False, reasons=(why.unserved(share),))
    if feasible and waited and served < asked * (1 - SERVED_TOLERANCE):
        return replace(found, reasons=(why.deferred(max(s.price.lead_days for s in waited), share),))
    return found


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
        waits=any(p.waits for p in prices),
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
    "BRIDGE",
    "HYBRID",
    "SINGLE",
    "Portfolio",
    "Segment",
    "assemble",
    "assessment_on",
    "infeasible",
    "portfolio_of",
]
