"""Cost tables of a capacity plan: every choice the optimiser may take, priced by the options' own
kernels (docs/methodology.md "Capacity plans"). Plugin pricing is not linear — whole servers, whole
terms, volume tiers — so each option is *sampled*: quoted at candidate sizes per phase, many sizes in
one kernel call (the profile's numbers as arrays, as batch evaluations do).

A choice (``Item``) is one of:

- ``buy``: the option that owns hardware buys a tranche of GPUs for a phase and keeps it to the
  horizon's end (the kernel's capital flows: bought, replaced at the end of its life, resold at the
  end). A tranche for a later phase is ordered its lead time ahead, so that it serves from the
  phase's start; one for the first phase is ordered at once and, as a single option's answer does,
  bridges the lead time on rented capacity or waits for delivery, whichever the kernel finds cheaper;
- ``commit``: a committed plan of an option (a reservation) for a run of phases, billed as its kernel
  bills whole terms;
- ``use``: an option billed as used for one phase (the plan its kernel chooses for that phase);
- ``owned``: GPUs the team already holds, kept to the horizon's end: what keeping them costs is the
  owning kernel's own price of a cluster that old, less what it cost to get it that old; they serve as
  the GPUs of the demand's model they are worth by sustained throughput (``throughput``).

A plan never waits: a quote that waits for delivery inside the demand's phases (``Priced.waits``)
is not offered, and a cluster for the first phase, which cannot be ordered its lead time ahead, is
bridged by the cheapest capacity that can serve its GPUs and largest job until it is installed
(``BRIDGE``, priced with the tranche).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.capital import discount_factor
from app.core.errors import OptionFailed
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.types import HOURS_PER_YEAR, OfferInfo, Profile
from app.engine.capacity.demand import Owned, Phase
from app.engine.insights.common import Model, Variant

BUY, COMMIT, USE, OWNED, BRIDGE = "buy", "commit", "use", "owned", "bridge"
#: a quote serves its demand when it leaves at most this share of its useful GPU-hours unserved
SERVED_TOLERANCE = 1e-3
DAYS_PER_YEAR = 365
#: ``start_within_days`` of a tranche ordered ahead of its phase (its lead time is no constraint then)
NO_DEADLINE = 3650
#: whether the core's profile knows a job's size (``largest_job_gpus``): passed on only where it does
HAS_JOB_SIZE = "largest_job_gpus" in {f.name for f in dataclasses.fields(Profile)}


@dataclass(frozen=True, slots=True)
class Request:
    """One quote a table needs: a size of a variant for a span of the horizon."""

    gpus: int
    utilization: float
    #: years priced (the kernel's horizon) and when the span starts being paid for (years from now)
    horizon_years: float
    order_years: float
    start_within_days: float
    job_gpus: int
    #: years the span is ordered before its phase starts (the wait for delivery falls there, not in the
    #: demand); and whether a day of waiting costs the profile's ``delay_cost_per_day`` (a plan never
    #: waits inside its demand: it orders ahead or bridges)
    ahead_years: float = 0.0
    delay: bool = True

    @property
    def useful_gpu_hours(self) -> float:
        """The useful GPU-hours the span serves (after any wait before its phase)."""
        return self.gpus * self.utilization * max(0.0, self.horizon_years - self.ahead_years) * HOURS_PER_YEAR


@dataclass(frozen=True, slots=True)
class Priced:
    """A quote's numbers, discounted to today: cash ``total``, ``npv``, ``upfront``, the effective
    money ``(total + extras) ÷ (execution efficiency × goodput)``, the useful hours lost waiting."""

    total: Range
    npv: Range
    upfront: Range
    effective: Range
    lost_gpu_hours: float
    lead_days: float
    committed: bool
    feasible: bool
    #: what the optimiser minimises: the expected NPV of the effective cost (the NPV scaled by the
    #: kernel's effective money ÷ cash)
    objective: float
    offer: OfferInfo | None = None
    #: whether it waits for delivery inside the demand, leaving more than ``SERVED_TOLERANCE`` unserved
    waits: bool = False

    def plus(self, other: Priced) -> Priced:
        """This price and ``other`` (a cluster and its bridge until installed), end by end; the useful
        hours the bridge serves are no longer lost."""

        def s(a: Range, b: Range) -> Range:
            return Range(*(float(x) + float(y) for x, y in zip(a, b, strict=True)))

        return Priced(
            total=s(self.total, other.total),
            npv=s(self.npv, other.npv),
            upfront=s(self.upfront, other.upfront),
            effective=s(self.effective, other.effective),
            lost_gpu_hours=other.lost_gpu_hours,
            lead_days=self.lead_days,
            committed=self.committed,
            feasible=self.feasible and other.feasible,
            objective=self.objective + other.objective,
            offer=self.offer,
            waits=other.waits,
        )

    def less(self, other: Priced) -> Priced:
        """This price less ``other`` (a cluster's growth: the larger cluster's price less the smaller's),
        end by end (low less low: both the best case)."""

        def d(a: Range, b: Range) -> Range:
            return Range(*(float(x) - float(y) for x, y in zip(a, b, strict=True)))

        return Priced(
            total=d(self.total, other.total),
            npv=d(self.npv, other.npv),
            upfront=d(self.upfront, other.upfront),
            effective=d(self.effective, other.effective),
            lost_gpu_hours=self.lost_gpu_hours - other.lost_gpu_hours,
            lead_days=self.lead_days,
            committed=self.committed,
            feasible=self.feasible,
            objective=self.objective - other.objective,
            offer=self.offer,
            waits=self.waits,
        )


def _objective(npv: float, effective: float, total: float) -> float:
    return npv * (effective / total if total > 0 else 1.0)


@dataclass(frozen=True, slots=True)
class Item:
    """A choice the optimiser may take: ``gpus`` of ``variant`` serving phases ``first``–``last``."""

    variant: Variant
    acquired: str
    first: int
    last: int
    gpus: int
    price: Priced
    #: what was priced (to price it again on its own, with its offer)
    request: Request | None = None
    #: owned assets: which entry of ``owned``
    owned: int | None = None
    #: a step of a growing cluster (``buy``): the level's index among the sizes, and its own level
    level: int | None = None
    level_gpus: int = 0
    #: GPUs of the demand's model it serves (owned GPUs of another model: by sustained throughput)
    capacity: float | None = None
    #: owned GPUs of another model than the demand's: that model (a job never spans two GPU models)
    model: str | None = None

    @property
    def serves(self) -> float:
        """The GPUs of the demand's model it serves."""
        return float(self.gpus) if self.capacity is None else self.capacity

    @property
    def tranche(self) -> tuple[str, str | None, str, int, int, int | None, int | None]:
        """What the optimiser takes at most one size of (each step of a cluster on its own)."""
        v = self.variant
        return (v.option, v.plan, self.acquired, self.first, self.last, self.owned, self.level)


class Pricer:
    """Quotes variants of the base profile through ``model`` (the engine: failures isolated, logged),
    many requests per kernel call, each discounted at its option's ``discount_rate``."""

    def __init__(self, model: Model, knowledge: Knowledge, base: Profile) -> None:
        self.model, self.knowledge, self.base = model, knowledge, base
        self.calls = 0
        #: quotes priced on their own, kept: a single option's segment and the mix's are often the same
        self._one: dict[tuple[Variant, Request, str | None], Priced] = {}

    def rate(self, option: str) -> float:
        return float(self.knowledge.assumption_value(option, "discount_rate")[0].expected)

    def profile(self, v: Variant, requests: Sequence[Request], gpu_model: str | None = None) -> Profile:
        def column(name: str) -> np.ndarray:
            return np.array([float(getattr(r, name)) for r in requests])

        changes: dict[str, Any] = {
            "gpus": column("gpus"),
            "utilization": column("utilization"),
            "horizon_years": column("horizon_years"),
            "start_within_days": column("start_within_days"),
            "team_size": np.full(len(requests), float(self.base.team_size)),
            "capex_budget": None,  # a portfolio constraint (the sum of tranches' upfront), not a tranche's
            "delay_cost_per_day": None
            if self.base.delay_cost_per_day is None
            else np.array([float(self.base.delay_cost_per_day) if r.delay else 0.0 for r in requests]),
            # a variant's plan, else the one the profile rents on (as a price comparison of it does)
            "rental_plan": v.plan if v.plan is not None else self.base.rental_plan,
        }
        if gpu_model is not None:
            changes["gpu_model"] = gpu_model
        if HAS_JOB_SIZE:
            changes["largest_job_gpus"] = np.minimum(column("job_gpus"), column("gpus"))
        return dataclasses.replace(self.base, **changes)

    def price(self, v: Variant, requests: Sequence[Request], gpu_model: str | None = None) -> list[Priced]:
        """Each request's figures (raises what ``model.choose`` raises when the variant cannot be priced)."""
        if not requests:
            return []
        profile = self.profile(v, requests, gpu_model)
        self.calls += 1
        try:
            quote = self.model.choose(v.option, profile, self.knowledge)[0]
        except OptionFailed:
            if len(requests) == 1:
                raise
            # an option that refuses arrays (SDK v2) is asked once per request, as batches do
            return [p for r in requests for p in self.price(v, [r], gpu_model)]
        return self._unpack(v, quote, requests)

    def one(self, v: Variant, request: Request, gpu_model: str | None = None) -> Priced:
        """One request priced on its own, with the offer the kernel chose."""
        return self.each(v, [request], gpu_model)[0]

    def each(self, v: Variant, requests: Sequence[Request], gpu_model: str | None = None) -> list[Priced]:
        """Each request priced as on its own (``one``: kept), with the offer the kernel chose for it;
        those not priced yet in one kernel call, which chooses element by element (``select_each``)."""
        keys = [(v, r, gpu_model) for r in requests]
        missing = [k for k in dict.fromkeys(keys) if k not in self._one]
        if missing:
            self._one.update(zip(missing, self.price(v, [r for _, r, _ in missing], gpu_model), strict=True))
        return [self._one[k] for k in keys]

    def _unpack(self, v: Variant, quote: Any, requests: Sequence[Request]) -> list[Priced]:
        n = len(requests)

        def col(x: Any) -> np.ndarray:
            return np.broadcast_to(np.asarray(x, dtype=float), (n,))

        def ranges(r: Range) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            return col(r.low), col(r.expected), col(r.high)

        c = quote.cost
        total, npv, upfront = ranges(c.total), ranges(c.npv if c.npv is not None else c.total), ranges(c.upfront)
        per_effective = c.per_effective_gpu_hour or c.per_useful_gpu_hour
        useful_total = col(c.useful_gpu_hours_total)
        effective = tuple(e * useful_total for e in ranges(per_effective))
        lost = col(c.useful_gpu_hours) * col([r.horizon_years for r in requests]) - useful_total
        # a wait before the phase (a span ordered ahead) leaves none of the demand unserved
        lost = lost - col(c.useful_gpu_hours) * col([r.ahead_years for r in requests])
        broken = col(quote.broken()) > 0
        lead = col(quote.efficiency.lead_time_days.expected)
        rate = self.rate(v.option)
        shift = np.array([discount_factor(r.order_years, rate) for r in requests])
        # the offer (and whether it commits) each request was priced on
        chosen = quote.chosen(n)
        offers = [None if q.candidate is None else q.candidate.info for q in chosen]
        # plain floats, column by column (a table prices hundreds of requests at once)
        totals, npvs = [e.tolist() for e in total], [(e * shift).tolist() for e in npv]
        upfronts, effectives = [e.tolist() for e in upfront], [e.tolist() for e in effective]
        losts, leads, breaks = lost.tolist(), lead.tolist(), broken.tolist()
        return [
            Priced(
                total=Range(totals[0][i], totals[1][i], totals[2][i]),
                npv=Range(npvs[0][i], npvs[1][i], npvs[2][i]),
                upfront=Range(upfronts[0][i], upfronts[1][i], upfronts[2][i]),
                effective=Range(effectives[0][i], effectives[1][i], effectives[2][i]),
                lost_gpu_hours=max(0.0, losts[i]),
                lead_days=leads[i],
                committed=bool(chosen[i].committed),
                feasible=not breaks[i],
                objective=_objective(npvs[1][i], effectives[1][i], totals[1][i]),
                offer=offers[i],
                waits=losts[i] > SERVED_TOLERANCE * max(requests[i].useful_gpu_hours, 1.0),
            )
            for i in range(n)
        ]


def deadline_of(profile: Profile) -> int:
    """The profile's ``start_within_days`` as a number of days (``NO_DEADLINE`` where it sets none)."""
    days = profile.start_within_days
    return NO_DEADLINE if days is None else int(days)


def deadline_for(phase: Phase, deadline: int) -> int:
    """The request's deadline holds for what serves from the start; later phases are ordered ahead."""
    return deadline if phase.start_month == 0 else NO_DEADLINE


def tranche_request(
    phase: Phase, demand: Sequence[Phase], last: int, gpus: int, lead_days: float, deadline: int, horizon: float
) -> Request:
    """A tranche serving ``phase`` to phase ``last``: ordered at once for the first phase (bridged until
    installed where its kernel would wait: ``bridge_request``), else its lead time ahead of the phase,
    at ``start − lead`` (no deadline then; its wait for delivery falls before the phase)."""
    served = demand[phase_index(demand, phase) : last + 1]
    weight = sum(p.years for p in served)
    utilization = sum(p.utilization * p.years for p in served) / weight
    job = max(p.largest_job_gpus for p in served)
    end = horizon if last == len(demand) - 1 else demand[last].end_years
    if phase.start_month == 0:
        return Request(gpus, utilization, end, 0.0, deadline, job, delay=False)
    order = max(phase.start_years - lead_days / DAYS_PER_YEAR, 0.0)
    return Request(gpus, utilization, end - order, order, NO_DEADLINE, job, phase.start_years - order, delay=False)


def bridge_request(tranche: Request, waited: Priced) -> Request:
    """Renting a first-phase tranche's GPUs (and its largest job) from the start until it is installed:
    the span its kernel's quote ``waited`` (its useful GPU-hours lost ÷ the tranche's useful rate)."""
    rate = tranche.gpus * tranche.utilization * HOURS_PER_YEAR
    years = min(waited.lost_gpu_hours / rate, tranche.horizon_years) if rate > 0 else 0.0
    return Request(
        tranche.gpus, tranche.utilization, years, 0.0, tranche.start_within_days, min(tranche.job_gpus, tranche.gpus)
    )


def phase_index(demand: Sequence[Phase], phase: Phase) -> int:
    return next(i for i, p in enumerate(demand) if p.start_month == phase.start_month)


def use_request(phase: Phase, gpus: int, deadline: int) -> Request:
    """``gpus`` billed as used through one phase, paid from the phase's start."""
    return Request(gpus, phase.utilization, phase.years, phase.start_years, deadline, phase.largest_job_gpus)


def owned_price(pricer: Pricer, owner: Variant, asset: Owned, demand: Sequence[Phase], horizon: float) -> Priced:
    """What keeping ``asset`` to the horizon's end costs, from the owning kernel: a cluster of its GPUs
    bought ``age`` years (plus the lead time) ago and kept to the horizon, less the same cluster kept
    only until today (their difference is the resale value forgone now less the resale at the end,
    and the running costs from now on). Its NPV is brought to today."""
    utilization = sum(p.utilization * p.years for p in demand) / horizon
    job = max(p.largest_job_gpus for p in demand)
    probe = pricer.one(owner, Request(asset.count, utilization, horizon, 0.0, NO_DEADLINE, job), asset.gpu_model)
    before = asset.age_years + probe.lead_days / DAYS_PER_YEAR
    short, long = pricer.price(
        owner,
        [
            Request(asset.count, utilization, before, 0.0, NO_DEADLINE, job),
            Request(asset.count, utilization, before + horizon, 0.0, NO_DEADLINE, job),
        ],
        asset.gpu_model,
    )
    back = 1 / discount_factor(before, pricer.rate(owner.option))
    npv, total, effective = (
        _less(long.npv, short.npv) * back,
        _less(long.total, short.total),
        _less(long.effective, short.effective),
    )
    return Priced(
        total=total,
        npv=npv,
        upfront=Range.point(0),
        effective=effective,
        lost_gpu_hours=0.0,
        lead_days=0.0,
        committed=True,
        feasible=probe.feasible,
        objective=_objective(float(npv.expected), float(effective.expected), float(total.expected)),
        offer=probe.offer,
    )


def _less(a: Range, b: Range) -> Range:
    """``a − b`` of two costs priced at the same ends (low with low: both the best case), never below 0."""
    lo, ex, hi = (max(0.0, float(x) - float(y)) for x, y in zip(a, b, strict=True))
    return Range(min(lo, ex), ex, max(hi, ex))


__all__ = [
    "BRIDGE",
    "BUY",
    "COMMIT",
    "HAS_JOB_SIZE",
    "OWNED",
    "SERVED_TOLERANCE",
    "USE",
    "Item",
    "Priced",
    "Pricer",
    "Request",
    "bridge_request",
    "deadline_for",
    "owned_price",
    "tranche_request",
    "use_request",
]
