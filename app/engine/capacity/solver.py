"""Sizing a capacity plan: one mixed-integer programme over the cost tables, solved by HiGHS through
``scipy.optimize.milp`` (docs/methodology.md "Capacity plans").

Minimise the expected NPV of the effective cost of the choices taken, where

- each tranche (``buy``, ``commit``, ``owned``) is taken at one of its sampled sizes or not at all:
  a cluster's or a commitment's sizes are a staircase of binary steps taken in order (the incremental
  form of its cost between the sizes sampled), a cluster's level, once reached, is kept;
- each option billed as used serves, per phase, any size up to the phase's demand, its cost
  interpolated between the sizes sampled (continuous weights summing to at most 1: the rest is the
  size 0, which costs nothing);

subject to: in every phase the GPUs of the tranches serving it plus those used cover the demand
(GPUs already owned of another model count as the GPUs of the demand's model they are worth by
sustained throughput); in every phase one option's capacity alone holds the phase's largest job, on an
option whose kernel accepts a job that large, and on GPUs of one model (a binary "holder" per option
and phase); the tranches' upfront costs sum to at most the capex budget. Tranches and samples the
kernels mark infeasible (capacity of offers, data residency, lead time against the deadline) and those
that wait for delivery inside the demand (``Priced.waits``: a feasible plan serves all of its demand)
are not offered.

What makes it solve at once (the same optimum as the plain statement above, a tighter relaxation):

- **an option used per phase holds a whole job or nothing**: where a phase's largest job is its whole
  demand, capacity used beside the holder serves nothing, so the option used is one binary per phase
  at the cheapest mix of its samples that holds the job;
- **a staircase holds a job from one step**: where one staircase (and GPUs already owned) is all an
  option has in a phase, it holds the job exactly when the step at the job's size is taken;
- **several staircases hold a job from their upper steps**: where commitments kept to their ``m``-th
  step hold less than the job, their steps above it hold the rest (cheap first steps of many
  commitments cannot hold a share of a job that needs dearer ones);
- **commitments hold jobs together over time** (the mixing inequalities of lot sizing): over a run of
  phases, the commitments that serve any of them hold at least the jobs they hold, sorted by size, each
  counted by what it adds to the smaller ones — so a commitment cannot hold part of a job in one phase
  and leave the rest to an option used, as the relaxation otherwise would. Runs of whole jobs get
  them as rows; the others, and the upper steps' bounds, join a pool added where the relaxation
  breaks them (``highs.Programme.pool``).

HiGHS solves it (``app.engine.capacity.highs``): the relaxation first — integral, it is the plan,
proved optimal —, then a few branches on it, then HiGHS's own branch and bound, stopping at
``time_limit`` seconds with the best plan found, said as ``optimal = False``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from app.engine.capacity.demand import Phase
from app.engine.capacity.highs import Programme, optimise
from app.engine.capacity.tables import BUY, OWNED, USE, Item

#: HiGHS's time limit for one plan, seconds (docs/methodology.md)
TIME_LIMIT_SECONDS = 2.0
#: runs of at most this many phases get the mixing inequalities (a year of monthly phases)
RUN_PHASES = 12
#: a group of items that runs one job: an option under one plan and way of acquiring
Group = tuple[str, str | None, str]
#: a staircase: the option, plan, way of acquiring and phases of a cluster's block or a commitment
Stack = tuple[str, str | None, str, int, int]


def _stack(i: Item) -> Stack:
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
    usable = [i for i in items if i.price.feasible and not i.price.waits and allowed(i)]
    if not usable:
        return None
    program = _Program(demand, usable, job_ok)
    if not program.build(capex_budget):
        return None
    return program.solve(time_limit)


@dataclass(frozen=True, slots=True)
class _Holding:
    """An option used that holds a phase's whole job: the samples' cheapest mix (item, weight) and its cost."""

    mix: tuple[tuple[Item, float], ...]
    cost: float


def held_whole(samples: Sequence[Item], job_gpus: int) -> _Holding | None:
    """The cheapest mix of an option's samples in one phase (weights summing to at most 1) serving
    ``job_gpus``: one sample scaled down, or two neighbours on either side (a convex cost's minimum over
    weights lies on one of them). None when no sample is that large."""
    best: _Holding | None = None
    for a in samples:
        if a.gpus >= job_gpus:
            best = _cheaper(best, ((a, job_gpus / a.gpus),))
        for b in samples:
            if a.gpus < job_gpus < b.gpus:
                w = (job_gpus - a.gpus) / (b.gpus - a.gpus)
                best = _cheaper(best, ((a, 1 - w), (b, w)))
    return best


def _cheaper(best: _Holding | None, mix: tuple[tuple[Item, float], ...]) -> _Holding:
    cost = sum(i.price.objective * w for i, w in mix)
    return best if best is not None and best.cost <= cost else _Holding(mix, cost)


@dataclass(frozen=True, slots=True)
class _Ladder:
    """A staircase in the programme: its capacity's column, its phases, and its steps offered (the
    level reached, in GPUs, and the step's column) in order."""

    gpus: int
    first: int
    last: int
    steps: tuple[tuple[int, int], ...]


@dataclass
class _Program:
    """The programme's columns and rows, built from the usable items (see the module's docstring)."""

    demand: Sequence[Phase]
    usable: list[Item]
    job_ok: Mapping[tuple[Group, int], bool]
    cost: list[float] = field(default_factory=list)
    integral: list[bool] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    cols: list[int] = field(default_factory=list)
    vals: list[float] = field(default_factory=list)
    lower_rows: list[float] = field(default_factory=list)
    upper_rows: list[float] = field(default_factory=list)
    #: the valid inequalities added only where the relaxation breaks them (``highs.Programme.pool``)
    pool: list[tuple[list[tuple[int, float]], float]] = field(default_factory=list)
    #: each item's column, the items of each column it stands for, the holders' columns
    item_col: dict[int, int] = field(default_factory=dict)
    col_items: dict[int, tuple[tuple[Item, float], ...]] = field(default_factory=dict)
    holders: dict[tuple[Group, int], int] = field(default_factory=dict)
    #: per group and phase: the capacity serving it, as (column, GPUs per unit)
    capacity: dict[tuple[Group, int], list[tuple[int, float]]] = field(default_factory=dict)
    #: per group: its staircases
    ladders: dict[Group, list[_Ladder]] = field(default_factory=dict)
    #: per group and phase: the GPUs already owned serving it
    owned: dict[tuple[Group, int], float] = field(default_factory=dict)

    def column(self, cost: float, integral: bool, upper: float = 1.0) -> int:
        self.cost.append(cost)
        self.integral.append(integral)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, entries: Iterable[tuple[int, float]], lo: float, hi: float = np.inf) -> None:
        pairs = list(entries)
        self.rows.extend([len(self.lower_rows)] * len(pairs))
        self.cols.extend(c for c, _ in pairs)
        self.vals.extend(v for _, v in pairs)
        self.lower_rows.append(lo)
        self.upper_rows.append(hi)

    def build(self, capex_budget: float | None) -> bool:
        """Every column and row; False when some phase has no option that may hold its job."""
        held = self._holdings()
        self._item_columns(held)
        if not self._holder_columns(held):
            return False
        self._staircases()
        self._cover()
        self._jobs()
        self._mixing()
        if capex_budget is not None:
            self._capex(capex_budget)
        return True

    # ---- columns ----------------------------------------------------------------------------------

    def _holdings(self) -> dict[tuple[Group, int], _Holding | None]:
        """Phases whose largest job is their whole demand: each option used there holds it whole
        (``held_whole``; None where it cannot), or serves nothing."""
        samples: dict[tuple[Group, int], list[Item]] = {}
        for i in self.usable:
            if i.acquired == USE:
                samples.setdefault((group_of(i), i.first), []).append(i)
        found: dict[tuple[Group, int], _Holding | None] = {}
        for (g, p), members in samples.items():
            phase = self.demand[p]
            if phase.largest_job_gpus < phase.gpus or any(i.price.objective < 0 for i in members):
                continue
            found[(g, p)] = held_whole(members, phase.largest_job_gpus) if self.job_ok.get((g, p), False) else None
        return found

    def _item_columns(self, held: Mapping[tuple[Group, int], _Holding | None]) -> None:
        for k, i in enumerate(self.usable):
            if i.acquired == USE and (group_of(i), i.first) in held:
                continue
            col = self.column(i.price.objective, i.acquired != USE)
            self.item_col[k] = col
            self.col_items[col] = ((i, 1.0),)

    def _holder_columns(self, held: Mapping[tuple[Group, int], _Holding | None]) -> bool:
        groups = {group_of(i) for i in self.usable}
        for p in range(len(self.demand)):
            for g in sorted(groups, key=str):
                if not self.job_ok.get((g, p), False):
                    continue
                if (g, p) not in held:
                    self.holders[(g, p)] = self.column(0.0, True)
                    continue
                holding = held[(g, p)]
                if holding is not None:
                    col = self.holders[(g, p)] = self.column(holding.cost, True)
                    self.col_items[col] = holding.mix
                    self.capacity.setdefault((g, p), []).append((col, float(self.demand[p].largest_job_gpus)))
            if not any((g, p) in self.holders for g in groups):
                return False
        return True

    # ---- rows -------------------------------------------------------------------------------------

    def _staircases(self) -> None:
        """At most one size per tranche; a staircase's steps in order, its capacity a column of its own;
        an owned cluster's level kept from block to block."""
        sets: dict[tuple[object, ...], list[int]] = {}
        steps: dict[Stack, dict[int, int]] = {}
        for k, i in enumerate(self.usable):
            if k not in self.item_col:
                continue
            sets.setdefault(i.tranche, []).append(self.item_col[k])
            if i.level is not None:
                steps.setdefault(_stack(i), {})[i.level] = k
                continue
            self._serves(group_of(i), i.first, i.last, self.item_col[k], i.serves)
            if i.acquired == OWNED:
                for p in range(i.first, i.last + 1):
                    self.owned[(group_of(i), p)] = self.owned.get((group_of(i), p), 0.0) + i.serves
        for members in sets.values():
            if len(members) > 1:
                self.row(((c, 1.0) for c in members), 0.0, 1.0)
        for stack, by_level in steps.items():
            self._staircase(stack, by_level)
        self._kept(steps)

    def _staircase(self, stack: Stack, by_level: Mapping[int, int]) -> None:
        """Steps taken in order (none above a step not offered); its GPUs a column of their own."""
        offered: list[tuple[int, int]] = []
        for level in sorted(by_level):
            k = by_level[level]
            col = self.item_col[k]
            if level != len(offered):  # a step below it is not offered
                self.upper[col] = 0.0
                continue
            if offered:
                self.row(((offered[-1][1], 1.0), (col, -1.0)), 0.0)
            offered.append((self.usable[k].level_gpus, col))
        first = self.usable[by_level[min(by_level)]]
        gpus = self.column(0.0, False, np.inf)
        self.row(((gpus, 1.0), *((self.item_col[k], -self.usable[k].serves) for k in by_level.values())), 0.0, 0.0)
        group = group_of(first)
        self.ladders.setdefault(group, []).append(_Ladder(gpus, first.first, first.last, tuple(offered)))
        self._serves(group, first.first, first.last, gpus, 1.0)

    def _kept(self, steps: Mapping[Stack, Mapping[int, int]]) -> None:
        """An owned cluster's level, once reached, is kept: each step taken at least as in the block before."""
        blocks: dict[str, list[Stack]] = {}
        for stack in steps:
            if stack[2] == BUY:
                blocks.setdefault(stack[0], []).append(stack)
        for chain in blocks.values():
            chain.sort(key=lambda s: s[3])
            for before, after in pairwise(chain):
                for level, k in steps[after].items():
                    below = steps[before].get(level)
                    if below is not None:
                        self.row(((self.item_col[k], 1.0), (self.item_col[below], -1.0)), 0.0)

    def _serves(self, group: Group, first: int, last: int, col: int, gpus: float) -> None:
        for p in range(first, last + 1):
            self.capacity.setdefault((group, p), []).append((col, gpus))

    def _cover(self) -> None:
        """Every phase's demand covered; one option holds its largest job."""
        by_phase: dict[int, list[tuple[int, float]]] = {}
        for (_, p), terms in self.capacity.items():
            by_phase.setdefault(p, []).extend(terms)
        for p, phase in enumerate(self.demand):
            self.row(by_phase.get(p, []), float(phase.gpus))
            self.row(((c, 1.0) for (_, q), c in self.holders.items() if q == p), 1.0)

    def _jobs(self) -> None:
        """The holder's capacity alone holds the job; where one staircase (and GPUs already owned) is
        all the holder has, the step at the job's size less the owned GPUs is taken."""
        for (g, p), z in self.holders.items():
            if z in self.col_items:
                continue  # an option used that holds the job whole
            job = float(self.demand[p].largest_job_gpus)
            terms = self.capacity.get((g, p), [])
            self.row((*terms, (z, -job)), 0.0)
            self._implied(g, p, z, job)
            self._above(g, p, z, job)

    def _implied(self, g: Group, p: int, z: int, job: float) -> None:
        alive = [s for s in self.ladders.get(g, []) if s.first <= p <= s.last]
        if len(alive) != 1:
            return
        need = job - self.owned.get((g, p), 0.0)
        if need <= 1e-9:
            return
        col = next((c for gpus, c in alive[0].steps if gpus >= need - 1e-9), None)
        if col is None:
            self.upper[z] = 0.0
        else:
            self.row(((col, 1.0), (z, -1.0)), 0.0)

    def _above(self, g: Group, p: int, z: int, job: float) -> None:
        """Where several staircases serve a phase, each kept to its ``m``-th step holds less than the job:
        the holder's steps above the ``m``-th hold the rest (the cheap first steps of many commitments
        cannot hold a share of a job that needs dearer ones)."""
        alive = [s for s in self.ladders.get(g, []) if s.first <= p <= s.last]
        if len(alive) < 2:
            return
        rest = job - self.owned.get((g, p), 0.0)
        for m in range(max(len(s.steps) for s in alive)):
            held = sum(s.steps[min(m, len(s.steps) - 1)][0] for s in alive)
            if held >= rest - 1e-9:
                return
            below = [(c, -self._step_gpus(s, k)) for s in alive for k, (_, c) in enumerate(s.steps[: m + 1])]
            self.pool.append(([*((s.gpus, 1.0) for s in alive), *below, (z, -(rest - held))], 0.0))

    @staticmethod
    def _step_gpus(s: _Ladder, k: int) -> float:
        return float(s.steps[k][0] - (s.steps[k - 1][0] if k else 0))

    def _mixing(self) -> None:
        """Over every run of at most ``RUN_PHASES`` phases, an option whose staircases overlap in time
        (commitments) holds at least, with the staircases serving any phase of the run, each job it
        holds there counted by what it adds to the smaller ones (valid for any plan: the largest job
        held is held by the staircases alive in its phase)."""
        n = len(self.demand)
        for g, ladders in self.ladders.items():
            if not any(sum(1 for s in ladders if s.first <= p <= s.last) > 1 for p in range(n)):
                continue
            for a in range(n):
                for b in range(a + 1, min(n, a + RUN_PHASES)):
                    self._mixed(g, ladders, a, b)

    def _mixed(self, g: Group, ladders: Sequence[_Ladder], a: int, b: int) -> None:
        run = sorted(
            (p for p in range(a, b + 1) if (g, p) in self.holders), key=lambda p: self.demand[p].largest_job_gpus
        )
        held: list[tuple[int, float]] = []
        below = 0.0
        for p in run:
            job = float(self.demand[p].largest_job_gpus)
            if job > below:
                held.append((self.holders[(g, p)], below - job))
                below = job
        if len(held) < 2:
            return
        serving = {s.gpus for s in ladders if s.first <= b and s.last >= a}
        others = {c: v for q in range(a, b + 1) for c, v in self.capacity.get((g, q), []) if c not in serving}
        entries = [*((c, 1.0) for c in sorted(serving)), *others.items(), *held]
        if all(self.demand[p].largest_job_gpus >= self.demand[p].gpus for p in run):
            self.row(entries, 0.0)  # whole jobs: an option used would otherwise top the commitments up
        else:
            self.pool.append((entries, 0.0))

    def _capex(self, budget: float) -> None:
        spent = [
            (self.item_col[k], float(i.price.upfront.expected))
            for k, i in enumerate(self.usable)
            if k in self.item_col and i.price.upfront.expected > 0
        ]
        if spent:
            self.row(spent, -np.inf, float(budget))

    # ---- the solve --------------------------------------------------------------------------------

    def solve(self, time_limit: float) -> Solution | None:
        from scipy.sparse import coo_array

        n = len(self.cost)
        matrix = coo_array((self.vals, (self.rows, self.cols)), shape=(len(self.lower_rows), n)).tocsr()
        pool_rows = [r for r, (entries, _) in enumerate(self.pool) for _ in entries]
        pool_cols = [c for entries, _ in self.pool for c, _ in entries]
        pool_vals = [v for entries, _ in self.pool for _, v in entries]
        programme = Programme(
            np.array(self.cost),
            matrix,
            np.array(self.lower_rows),
            np.array(self.upper_rows),
            np.array(self.upper),
            np.array(self.integral),
            coo_array((pool_vals, (pool_rows, pool_cols)), shape=(len(self.pool), n)).tocsr(),
            np.array([lo for _, lo in self.pool]),
        )
        found = optimise(programme, time_limit)
        return None if found is None else self._solution(found.x, found.proved)

    def _solution(self, x: np.ndarray, optimal: bool) -> Solution:
        used = [(mix, float(x[col])) for col, mix in self.col_items.items() if x[col] > 1e-7]
        taken = tuple((item, weight * amount) for mix, amount in used for item, weight in mix)
        return Solution(taken, sum(i.price.objective * amount for i, amount in taken), optimal)


__all__ = ["TIME_LIMIT_SECONDS", "Group", "Solution", "group_of", "held_whole", "solve"]
