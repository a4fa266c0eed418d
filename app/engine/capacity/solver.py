"""Sizing a capacity plan: a mixed-integer programme over the cost tables, solved by HiGHS through
``scipy.optimize.milp`` (docs/methodology.md "Capacity plans").

Minimise the expected NPV of the effective cost of the choices taken, where

- each tranche (``buy``, ``commit``, ``owned``) is taken at one of its sampled sizes or not at all
  (binary variables, at most one size per tranche);
- each option billed as used serves, per phase, any size up to the phase's demand, its cost
  interpolated between the sizes sampled (continuous weights summing to at most 1: the rest is the
  size 0, which costs nothing);

subject to: in every phase the GPUs of the tranches serving it plus those used cover the demand
(GPUs already owned of another model count as the GPUs of the demand's model they are worth by
sustained throughput); in every phase one option's capacity alone holds the phase's largest job, on an
option whose kernel accepts a job that large, and on GPUs of one model (binary variables per option and
phase); the tranches' upfront costs sum to at most the capex budget. Tranches and samples the kernels
mark infeasible (capacity of offers, data residency, lead time against the deadline) and those that
wait for delivery inside the demand (``Priced.waits``: a feasible plan serves all of its demand) are
not offered. The solver stops at ``time_limit``
seconds with the best plan found, said as ``optimal = False``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.engine.capacity.demand import Phase
from app.engine.capacity.tables import BUY, OWNED, USE, Item

#: HiGHS's time limit for one plan, seconds (docs/methodology.md)
TIME_LIMIT_SECONDS = 2.0
#: the solver stops when its plan is proved within this share of the optimum
MIP_GAP = 1e-3
#: a group of items that runs one job: an option under one plan and way of acquiring
Group = tuple[str, str | None, str]


def _stack(i: Item) -> tuple[str, str | None, str, int, int]:
    """The staircase a step belongs to: a cluster's block, or a commitment's tranche."""
    return (i.variant.option, i.variant.plan, i.acquired, i.first, i.last)


def group_of(item: Item) -> Group:
    """GPUs already owned of the demand's model join the owned cluster that is bought (one cluster runs
    a job); those of another model are a group of their own (one synchronous job never spans two GPU
    models)."""
    if item.acquired == OWNED and item.model is not None:
        return (item.variant.option, item.model, OWNED)
    return (item.variant.option, item.variant.plan, BUY if item.acquired == OWNED else item.acquired)


@dataclass(frozen=True, slots=True)
class Solution:
    """What the solver took: each item with its amount (1 for a tranche, the weight of a sample used),
    its objective, and whether it was proved optimal within the time limit."""

    taken: tuple[tuple[Item, float], ...]
    objective: float
    optimal: bool


def solve(
    demand: Sequence[Phase],
    items: Sequence[Item],
    job_ok: Mapping[tuple[Group, int], bool],
    *,
    capex_budget: float | None = None,
    allowed: Callable[[Item], bool] = lambda item: True,
    time_limit: float = TIME_LIMIT_SECONDS,
) -> Solution | None:
    """The cheapest plan from ``items`` (only those ``allowed``), or None when none serves the demand."""
    # scipy (~50 MB resident) loads with the first plan a worker solves, not with every worker
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    usable = [i for i in items if i.price.feasible and not i.price.waits and allowed(i)]
    groups = sorted({group_of(i) for i in usable}, key=str)
    jobs = [(g, p) for p in range(len(demand)) for g in groups if job_ok.get((g, p), False)]
    n_items, n = len(usable), len(usable) + len(jobs)
    if n_items == 0:
        return None
    scale = max((abs(i.price.objective) for i in usable), default=1.0) or 1.0
    cost = np.zeros(n)
    cost[:n_items] = [i.price.objective / scale for i in usable]
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lower: list[float] = []
    upper: list[float] = []

    def row(entries: Sequence[tuple[int, float]], lo: float, hi: float) -> None:
        r = len(lower)
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        lower.append(lo)
        upper.append(hi)

    # at most one size per tranche; the weights of one option's samples in one phase sum to at most 1
    sets: dict[tuple[object, ...], list[int]] = {}
    for k, item in enumerate(usable):
        sets.setdefault(item.tranche, []).append(k)
    for members in sets.values():
        row([(k, 1.0) for k in members], 0.0, 1.0)
    # a tranche's size is a staircase of steps taken in order
    steps: dict[tuple[tuple[str, str | None, str, int, int], int], int] = {
        (_stack(i), i.level): k for k, i in enumerate(usable) if i.level is not None
    }
    for (stack, level), k in steps.items():
        below = steps.get((stack, level - 1))
        if below is not None:
            row([(below, 1.0), (k, -1.0)], 0.0, np.inf)
        elif level > 0:
            row([(k, 1.0)], 0.0, 0.0)  # the step below is not offered
    # an owned cluster's level, once reached, is kept: each step taken at least as in the block before
    cluster = {(i.variant.option, i.first, i.level or 0): k for k, i in enumerate(usable) if i.acquired == BUY}
    starts = sorted({(o, f) for o, f, _ in cluster})
    for (o, f, level), k in cluster.items():
        earlier = [g for oo, g in starts if oo == o and g < f]
        before = cluster.get((o, earlier[-1], level)) if earlier else None
        if before is not None:
            row([(k, 1.0), (before, -1.0)], 0.0, np.inf)
    # demand covered in every phase
    for p, phase in enumerate(demand):
        covering = [(k, i.serves) for k, i in enumerate(usable) if i.first <= p <= i.last]
        row(covering, float(phase.gpus), np.inf)
    # the largest job on one option that holds it
    for p in range(len(demand)):
        chosen = [(n_items + j, 1.0) for j, (_, q) in enumerate(jobs) if q == p]
        row(chosen, 1.0, np.inf)
    for j, (g, p) in enumerate(jobs):
        capacity = [(k, i.serves) for k, i in enumerate(usable) if group_of(i) == g and i.first <= p <= i.last]
        row([*capacity, (n_items + j, -float(demand[p].largest_job_gpus))], 0.0, np.inf)
    if capex_budget is not None:
        spent = [(k, float(i.price.upfront.expected)) for k, i in enumerate(usable) if i.price.upfront.expected > 0]
        if spent:
            row(spent, -np.inf, float(capex_budget))
    matrix = coo_array((vals, (rows, cols)), shape=(len(lower), n)).tocsr()
    integrality = np.ones(n)
    integrality[:n_items] = [0.0 if i.acquired == USE else 1.0 for i in usable]
    result = milp(
        cost,
        constraints=LinearConstraint(matrix, np.array(lower), np.array(upper)),
        integrality=integrality,
        bounds=Bounds(np.zeros(n), np.ones(n)),
        options={"time_limit": time_limit, "disp": False, "mip_rel_gap": MIP_GAP},
    )
    if result.x is None:
        return None
    taken = tuple((usable[k], float(result.x[k])) for k in range(n_items) if result.x[k] > 1e-7)
    return Solution(taken, float(result.fun) * scale, result.status == 0)


__all__ = ["TIME_LIMIT_SECONDS", "Group", "Solution", "group_of", "solve"]
