"""A capacity plan (docs/methodology.md "Capacity plans"): the cost tables sampled from the options'
kernels, every single option's cheapest way to serve the demand and the cost-optimal mix, each
re-priced exactly by the kernels at the sizes chosen.

The mix is never dearer than the best single option: every single option's plan is a plan the mix
could take from the same tables, and should the solver (stopped at its time limit) or the
interpolation between sampled sizes leave the mix dearer once re-priced, the best single option's
plan is the mix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from app.core.errors import ISOLATED, failure
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.types import Profile
from app.engine.capacity import reasons as why
from app.engine.capacity import served
from app.engine.capacity import sizes as sz
from app.engine.capacity.demand import Owned, Phase
from app.engine.capacity.portfolio import HYBRID, SINGLE, Portfolio, Segment, infeasible, portfolio_of
from app.engine.capacity.solver import TIME_LIMIT_SECONDS, Group, solve
from app.engine.capacity.tables import (
    BRIDGE,
    BUY,
    COMMIT,
    NO_DEADLINE,
    OWNED,
    USE,
    Item,
    Priced,
    Pricer,
    Request,
    bridge_request,
    deadline_for,
    deadline_of,
    owned_price,
    tranche_request,
    use_request,
)
from app.engine.insights.common import Model, Variant

#: each single option's plan is solved within this share of the mix's time limit
SINGLE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class CapacityPlan:
    demand: tuple[Phase, ...]
    portfolios: tuple[Portfolio, ...]
    recommended: str | None
    #: the recommended portfolio's saving against the best single option: (its key, NPV saved, share)
    saving: tuple[str, Range, float] | None
    optimal: bool
    errors: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    kernel_calls: int = 0


@dataclass
class Tables:
    items: list[Item] = field(default_factory=list)
    job_ok: dict[tuple[Group, int], bool] = field(default_factory=dict)
    errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the owning option's cluster priced for each phase it can buy for, at each level: (price, request)
    clusters: dict[int, dict[int, tuple[Priced, Request]]] = field(default_factory=dict)
    #: a first-phase cluster's bridge until installed, at each level: (variant, price, request)
    bridges: dict[int, tuple[Variant, Priced, Request]] = field(default_factory=dict)
    #: each entry of GPUs already owned: (GPU model, count, of the demand's model)
    owned: list[tuple[str, int, bool]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Singles:
    """Each option's cheapest plan alone (with the GPUs already owned), in the order of ``options``, and
    what the mix is chosen from: the tables and the pricer."""

    portfolios: tuple[Portfolio, ...]
    tables: Tables
    pricer: Pricer


def singles(
    model: Model,
    knowledge: Knowledge,
    base: Profile,
    demand: Sequence[Phase],
    owned: Sequence[Owned] = (),
    *,
    options: Sequence[str],
    variants: Sequence[Variant],
    owner: str | None,
    unit: int,
    time_limit: float = TIME_LIMIT_SECONDS,
) -> Singles:
    """Every single option's portfolio for ``demand`` (``single:<option>``: the option alone and the GPUs
    owned), each solved within ``time_limit × SINGLE_SHARE`` (a plan not proved optimal by then says
    so) and re-priced by its kernel, with the reasons of its base size; what recommendations and price
    comparisons price an option with when the demand changes over the horizon."""
    demand = tuple(demand)
    pricer = Pricer(model, knowledge, base)
    t = build_tables(pricer, demand, owned, options, variants, owner, unit)
    found: list[Portfolio] = []
    for option in options:
        key = f"{SINGLE}:{option}"
        if option in t.errors:
            found.append(infeasible(key, SINGLE, demand, (why.not_assessed(*t.errors[option]),)))
            continue
        solved = solve(
            demand,
            t.items,
            t.job_ok,
            capex_budget=base.capex_budget,
            allowed=lambda i, o=option: i.variant.option == o or i.acquired == OWNED,  # type: ignore[misc]
            time_limit=time_limit * SINGLE_SHARE,
        )
        if solved is None:
            mine = [i for i in t.items if i.variant.option == option and i.price.feasible]
            if mine and all(i.price.waits for i in mine):  # it could serve, but only after waiting for delivery
                found.append(infeasible(key, SINGLE, demand, (served.waits(),)))
                continue
            found.append(infeasible(key, SINGLE, demand, why.cannot_serve(model, knowledge, base, option, demand)))
            continue
        p = portfolio_of(key, SINGLE, solved, pricer, demand, t.clusters, t.bridges, t.owned)
        unproved = () if solved.optimal else (why.not_optimal(time_limit * SINGLE_SHARE),)
        found.append(replace(p, reasons=(*p.reasons, *why.base_sizes(pricer, t.items, p, demand, unit), *unproved)))
    return Singles(tuple(found), t, pricer)


def plan(
    model: Model,
    knowledge: Knowledge,
    base: Profile,
    demand: Sequence[Phase],
    owned: Sequence[Owned] = (),
    *,
    options: Sequence[str],
    variants: Sequence[Variant],
    owner: str | None,
    unit: int,
    time_limit: float = TIME_LIMIT_SECONDS,
) -> CapacityPlan:
    """Every single option's portfolio and the cost-optimal mix for ``demand`` (``base`` gives the
    rest of the profile: hardware, currency, date, team, deadline, capex budget)."""
    demand = tuple(demand)
    one = singles(
        model,
        knowledge,
        base,
        demand,
        owned,
        options=options,
        variants=variants,
        owner=owner,
        unit=unit,
        time_limit=time_limit,
    )
    t, pricer = one.tables, one.pricer
    found = solve(demand, t.items, t.job_ok, capex_budget=base.capex_budget, time_limit=time_limit)
    feasible_singles = sorted((s for s in one.portfolios if s.feasible), key=lambda s: s.objective)
    best = feasible_singles[0] if feasible_singles else None
    optimal = found is not None and found.optimal
    if found is None and best is not None:  # the time limit passed before the solver found a plan
        hybrid = replace(
            best, key=HYBRID, kind=HYBRID, reasons=(why.no_better_mix(best.key), why.not_optimal(time_limit))
        )
    elif found is None:
        hybrid = infeasible(HYBRID, HYBRID, demand, (why.no_portfolio(),))
    else:
        hybrid = portfolio_of(HYBRID, HYBRID, found, pricer, demand, t.clusters, t.bridges, t.owned)
        if best is not None and hybrid.objective > best.objective:
            hybrid = replace(best, key=HYBRID, kind=HYBRID, reasons=(why.no_better_mix(best.key),))
        elif len(alone := {s.option for s in hybrid.segments if s.acquired != BRIDGE}) == 1:  # one option's plan
            hybrid = replace(hybrid, reasons=(why.no_better_mix(f"single:{alone.pop()}"), *hybrid.reasons))
        hybrid = replace(hybrid, reasons=(*hybrid.reasons, *why.base_sizes(pricer, t.items, hybrid, demand, unit)))
        if not found.optimal:
            hybrid = replace(hybrid, reasons=(*hybrid.reasons, why.not_optimal(time_limit)))
    ranked = sorted([hybrid, *one.portfolios], key=lambda p: (not p.feasible, p.objective, p.kind != HYBRID, p.key))
    recommended = next((p.key for p in ranked if p.feasible), None)
    saving = None
    if recommended is not None and best is not None:
        chosen = next(p for p in ranked if p.key == recommended)
        saved = [float(b) - float(c) for b, c in zip(best.price.npv, chosen.price.npv, strict=True)]
        share = 1 - chosen.objective / best.objective if best.objective > 0 else 0.0
        saving = (best.key, Range(min(saved), saved[1], max(saved)), max(0.0, share))
    return CapacityPlan(demand, tuple(ranked), recommended, saving, optimal, dict(t.errors), pricer.calls)


def build_tables(
    pricer: Pricer,
    demand: Sequence[Phase],
    owned: Sequence[Owned],
    options: Sequence[str],
    variants: Sequence[Variant],
    owner: str | None,
    unit: int,
) -> Tables:
    """Every item of every option, priced; the options that cannot be priced, with their error."""
    base, t = pricer.base, Tables(owned=[(o.gpu_model, o.count, o.same_model) for o in owned])
    horizon, last, deadline = base.horizon_years, len(demand) - 1, deadline_of(base)
    sizes = sz.tranche_sizes(demand, unit)
    peak = max(p.gpus for p in demand)
    for option in options:
        v = Variant(option)
        try:
            if option == owner:
                others = [o for o in options if o != owner]
                _cluster(pricer, t, v, demand, sz.tranche_levels(demand, owned, unit), peak, others)
                _job_probe(pricer, t, v, [(option, None, BUY)], demand, horizon)
                continue
            uses = {
                (p, n): use_request(demand[p], n, deadline_for(demand[p], deadline))
                for p, phase in enumerate(demand)
                for n in sz.use_samples(phase, sizes, owned, unit)
            }
            priced = pricer.price(v, list(uses.values()))
            t.items += [Item(v, USE, p, p, n, pr, r) for ((p, n), r), pr in zip(uses.items(), priced, strict=True)]
            _job_probe(pricer, t, v, [(option, None, USE)], demand, None)
            # a profile that names its plan rents on it alone, as it is compared: no other plan's commitments
            plans = [] if base.rental_plan is not None else [x.plan for x in variants if x.option == option]
            for plan_ in [p for p in plans if p is not None]:
                _commitments(pricer, t, Variant(option, plan_), demand, sizes, deadline, horizon)
        except ISOLATED as exc:
            t.errors[option] = failure(exc)
            t.items = [i for i in t.items if i.variant.option != option]
    if owner is not None and owner not in t.errors:
        for e, asset in enumerate(owned):
            price = owned_price(pricer, Variant(owner), asset, demand, horizon)
            model = None if asset.same_model else asset.gpu_model
            t.items.append(
                Item(
                    Variant(owner),
                    OWNED,
                    0,
                    last,
                    asset.count,
                    price,
                    None,
                    e,
                    capacity=asset.equivalent_gpus,
                    model=model,
                )
            )
            if model is not None:  # its own GPUs hold a job as large as they are worth, alone
                for p in range(len(demand)):
                    t.job_ok[((owner, model, OWNED), p)] = True
    return t


def _cluster(
    pricer: Pricer,
    t: Tables,
    v: Variant,
    demand: Sequence[Phase],
    levels: Sequence[int],
    peak: int,
    others: Sequence[str],
) -> None:
    """The owned cluster, grown in steps: its size is a level that never falls, raised at the phases
    it can be bought for (the first, and those that start its lead time or more from now: ordered at
    ``start − lead``). Growing it at phase ``b`` from level ``a`` to ``c`` costs the kernel's price of a
    cluster of ``c`` bought for ``b`` and kept to the end, less that of ``a`` (shared costs, an ops team,
    are paid once). Summed, a cluster held at level ``L_b`` from buying phase ``b`` to the next costs
    ``Q_b(L_b) − Q_b+1(L_b)``: per block, separable, so each step of a level is one binary choice. A
    first-phase cluster whose kernel would wait for delivery is bridged until installed (``_bridge``):
    ``Q_0(L)`` includes its bridge."""
    base, last = pricer.base, len(demand) - 1
    horizon, deadline = base.horizon_years, deadline_of(base)
    lead = pricer.one(v, tranche_request(demand[0], demand, last, peak, 0, deadline, horizon)).lead_days
    starts = [i for i, p in enumerate(demand) if i == 0 or p.start_years * 365 >= lead]
    reqs = {
        (i, g): tranche_request(demand[i], demand, last, g, lead, deadline, horizon) for i in starts for g in levels
    }
    priced = dict(zip(reqs, pricer.price(v, list(reqs.values())), strict=True))
    for i in starts:
        t.clusters[i] = {g: (priced[(i, g)], reqs[(i, g)]) for g in levels}
    waited = {g: reqs[(0, g)] for g in levels if priced[(0, g)].waits}
    bridged = _bridge(pricer, waited, priced, others)
    for g in waited:
        if g in bridged:
            t.bridges[g] = bridged[g]
            priced[(0, g)] = priced[(0, g)].plus(bridged[g][1])
        else:  # nothing else may serve it: the team waits for delivery, as its deadline allows (said so)
            priced[(0, g)] = replace(priced[(0, g)], waits=False)
    for b, i in enumerate(starts):
        end = starts[b + 1] - 1 if b + 1 < len(starts) else last
        feasible, before, below = True, None, 0
        for k, g in enumerate(levels):
            held = priced[(i, g)] if b + 1 == len(starts) else priced[(i, g)].less(priced[(starts[b + 1], g)])
            step = held if before is None else held.less(before)
            feasible = feasible and priced[(i, g)].feasible and not priced[(i, g)].waits
            step = replace(step, feasible=feasible)
            t.items.append(Item(v, BUY, i, end, g - below, step, reqs[(i, g)], level=k, level_gpus=g))
            before, below = held, g


def _bridge(
    pricer: Pricer, waited: dict[int, Request], priced: dict[tuple[int, int], Priced], others: Sequence[str]
) -> dict[int, tuple[Variant, Priced, Request]]:
    """For each first-phase level whose kernel waits for delivery: the cheapest quote of another option
    (its kernel's own plan) that serves the level's GPUs and largest job from the start until the
    cluster is installed, without waiting itself. Levels no option can bridge are left out (they wait,
    so they are not offered)."""
    found: dict[int, tuple[Variant, Priced, Request]] = {}
    asks = {g: bridge_request(r, priced[(0, g)]) for g, r in waited.items()}
    for option in others:
        b = Variant(option)
        try:
            quotes = pricer.price(b, list(asks.values()))
        except ISOLATED:
            continue
        for (g, r), q in zip(asks.items(), quotes, strict=True):
            if q.feasible and not q.waits and (g not in found or q.objective < found[g][1].objective):
                found[g] = (b, q, r)
    return found


def _commitments(
    pricer: Pricer, t: Tables, v: Variant, demand: Sequence[Phase], sizes: Sequence[int], deadline: int, horizon: float
) -> None:
    """A committed plan's tranches: from each phase, for one phase, for each whole number of years, or
    to the horizon's end; a span is left out where a longer one from the same phase costs no more."""
    probe = pricer.one(v, use_request(demand[0], max(p.gpus for p in demand), NO_DEADLINE))
    if not probe.committed:
        return  # billed as used: the option's own choice per phase covers it
    last = len(demand) - 1
    keys = []
    for i in sz.commitment_starts(demand):
        phase = demand[i]
        whole_years = {
            j for j in range(i, last + 1) if (demand[j].start_month + demand[j].months - phase.start_month) % 12 == 0
        }
        keys += [(i, j, s) for j in sorted({i, last} | whole_years) for s in sizes]
    reqs = [tranche_request(demand[i], demand, j, s, probe.lead_days, deadline, horizon) for i, j, s in keys]
    priced = dict(zip(keys, zip(reqs, pricer.price(v, reqs), strict=True), strict=True))
    spans = sorted({(i, j) for i, j, _ in keys})
    for i, j in spans:
        longer = [b for a, b in spans if a == i and b > j]
        if any(all(priced[(i, b, g)][1].objective <= priced[(i, j, g)][1].objective for g in sizes) for b in longer):
            continue  # a longer span from the same phase costs no more at any size
        before, below, feasible = None, 0, True
        for k, g in enumerate(sizes):
            r, pr = priced[(i, j, g)]
            feasible = feasible and pr.feasible
            step = replace(pr if before is None else pr.less(before), feasible=feasible)
            t.items.append(Item(v, COMMIT, i, j, g - below, step, r, level=k, level_gpus=g))
            before, below = pr, g
    _job_probe(pricer, t, v, [(v.option, v.plan, COMMIT)], demand, None)


def _job_probe(
    pricer: Pricer, t: Tables, v: Variant, groups: Sequence[Group], demand: Sequence[Phase], horizon: float | None
) -> None:
    """Whether the variant's kernel accepts each phase's largest job (its size alone, no deadline)."""
    reqs = [
        Request(p.largest_job_gpus, p.utilization, horizon or p.years, 0.0, NO_DEADLINE, p.largest_job_gpus)
        for p in demand
    ]
    for p, pr in enumerate(pricer.price(v, reqs)):
        for g in groups:
            t.job_ok[(g, p)] = pr.feasible


__all__ = ["HYBRID", "SINGLE", "CapacityPlan", "Portfolio", "Segment", "Singles", "plan", "singles"]
