"""Solving a mixed-integer programme with HiGHS (``scipy.optimize.milp``), cheapest proof first: the
linear relaxation, whose integral optimum is the programme's — with the valid inequalities of a pool
added where the relaxation breaks them (a few rounds) —; else a few branches on the relaxation (each
branch one relaxation HiGHS solves); else HiGHS's own branch and bound, within the time left.

A capacity plan's programme is formulated so that its relaxation is (nearly) integral
(``app.engine.capacity.solver``): one relaxation usually proves the plan optimal, a handful of
branches close a last step's rounding, and HiGHS's branch and bound — whose set-up (probing, cuts) costs
more than the few relaxations do on a programme this size — is left for the rest.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the optimum is proved within this share of its value (branches whose bound is this close are not explored)
MIP_GAP = 1e-6
#: a value of an integer variable this close to an integer is that integer
INTEGRAL = 1e-6
#: relaxations solved while branching before HiGHS branches on its own
BRANCHES = 12
#: a first plan further than this share above the relaxation's bound is left to HiGHS's branch and bound
CLOSABLE = 0.01
#: rounds of adding the pool's inequalities the relaxation breaks, and by how much (of the row's size)
ROUNDS = 4
BROKEN = 1e-6


@dataclass(frozen=True, slots=True)
class Programme:
    """Minimise ``cost · x`` subject to ``lower_rows ≤ matrix · x ≤ upper_rows`` and ``0 ≤ x ≤ upper``,
    ``x`` integral where ``integral``."""

    cost: np.ndarray
    matrix: Any
    lower_rows: np.ndarray
    upper_rows: np.ndarray
    upper: np.ndarray
    integral: np.ndarray
    #: valid inequalities ``pool · x ≥ pool_lower`` the optimum meets anyway: added only where the
    #: relaxation breaks them (many, each rarely binding: all of them would slow every relaxation)
    pool: Any = None
    pool_lower: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class Optimum:
    """The values found (integer variables rounded), and whether they are proved optimal."""

    x: np.ndarray
    proved: bool


def optimise(programme: Programme, time_limit: float) -> Optimum | None:
    """The programme's optimum, or the best values found within ``time_limit`` seconds; None when the
    programme is infeasible (or nothing was found in time)."""
    started = time.monotonic()
    solver = _Solver(programme)
    root = solver.tightened()
    if root is None:
        return None
    if solver.integral(root[1]):
        return Optimum(solver.rounded(root[1]), True)
    found = solver.branch(root)
    if found is not None:
        return found
    found = solver.branch_and_bound(max(time_limit - (time.monotonic() - started), 0.01))
    return solver.better(found)


#: a branch solved: its relaxation's value, its bounds (lower, upper) and the relaxation's values
_Node = tuple[float, np.ndarray, np.ndarray, np.ndarray]


class _Solver:
    def __init__(self, programme: Programme) -> None:
        # scipy (~50 MB resident) loads with the first plan a worker solves, not with every worker
        from scipy.optimize import LinearConstraint

        self.programme = programme
        self.scale = float(np.abs(programme.cost).max()) or 1.0
        self.cost = programme.cost / self.scale
        self.constraints = LinearConstraint(programme.matrix, programme.lower_rows, programme.upper_rows)
        #: the first plan branching found (value, values), kept should HiGHS find no better in time
        self.incumbent: tuple[float, np.ndarray] | None = None

    def tightened(self) -> tuple[float, np.ndarray] | None:
        """The relaxation, re-solved with the pool's inequalities it breaks (``ROUNDS`` at most)."""
        from scipy.optimize import LinearConstraint
        from scipy.sparse import vstack

        p = self.programme
        found = self.relaxation(np.zeros(len(p.cost)), p.upper)
        pool, lower = p.pool, p.pool_lower
        for _ in range(ROUNDS):
            if found is None or pool is None or lower is None or not pool.shape[0]:
                break
            size = np.maximum(abs(pool).sum(axis=1), 1.0)
            broken = pool @ found[1] < lower - BROKEN * size
            if not broken.any():
                break
            c = self.constraints
            self.constraints = LinearConstraint(
                vstack([c.A, pool[broken]]).tocsr(),
                np.concatenate([c.lb, lower[broken]]),
                np.concatenate([c.ub, np.full(int(broken.sum()), np.inf)]),
            )
            pool, lower = pool[~broken], lower[~broken]
            found = self.relaxation(np.zeros(len(p.cost)), p.upper)
        return found

    def relaxation(self, lower: np.ndarray, upper: np.ndarray) -> tuple[float, np.ndarray] | None:
        """The relaxation's optimum within the bounds (value, values), or None when infeasible."""
        from scipy.optimize import Bounds, milp

        found = milp(self.cost, constraints=self.constraints, bounds=Bounds(lower, upper))
        return None if found.x is None else (float(found.fun), found.x)

    def integral(self, x: np.ndarray) -> bool:
        return not self.fractional(x).size

    def fractional(self, x: np.ndarray) -> np.ndarray:
        mask = self.programme.integral & (np.abs(x - np.round(x)) > INTEGRAL)
        return np.flatnonzero(mask)

    def rounded(self, x: np.ndarray) -> np.ndarray:
        return np.where(self.programme.integral, np.round(x), x)

    def branch(self, root: tuple[float, np.ndarray]) -> Optimum | None:
        """Branching on the relaxation within ``BRANCHES`` relaxations: diving first (the variable
        nearest an integer fixed to it, until the values are integral: a plan), then best-first on the
        branches left until each is closed (its bound no better than the plan). The optimum when every
        branch is closed, else None."""
        if self.fractional(root[1]).size > BRANCHES:
            return None  # a dive fixes about one variable a relaxation: more than the branches allowed
        best: tuple[float, np.ndarray] | None = None
        queue: list[tuple[float, int, np.ndarray, np.ndarray]] = []
        node: _Node | None = (root[0], np.zeros(len(self.cost)), self.programme.upper, root[1])
        solved = 1
        while True:
            if node is None:
                if not queue or (best is not None and self.closed(queue[0][0], best[0])):
                    break
                if solved == BRANCHES:
                    return None
                _, _, lower, upper = heapq.heappop(queue)
                node, solved = self.solved(lower, upper), solved + 1
                continue
            value, lower, upper, x = node
            node = None
            if best is not None and self.closed(value, best[0]):
                continue
            fractional = self.fractional(x)
            if not fractional.size:
                self.incumbent = (value, x) if self.incumbent is None or value < self.incumbent[0] else self.incumbent
                if best is None and value - root[0] > CLOSABLE * abs(value):
                    return None  # a gap too wide for a few branches: HiGHS's cuts close it
                best = (value, x)
                continue
            off = np.abs(x[fractional] - np.round(x[fractional]))
            j = int(fractional[np.argmin(off)] if best is None else fractional[np.argmax(off)])
            near = float(np.round(x[j])) if best is None else 1.0
            for fixed in (1.0 - near, near) if best is not None else (1.0 - near,):
                heapq.heappush(queue, (value, solved * len(x) + len(queue), *self.fixed(lower, upper, j, fixed)))
            if best is None:  # dive: the branch nearest the values found, at once
                if solved == BRANCHES:
                    return None
                node, solved = self.solved(*self.fixed(lower, upper, j, near)), solved + 1
        return None if best is None else Optimum(self.rounded(best[1]), True)

    def better(self, found: Optimum | None) -> Optimum | None:
        """HiGHS's plan, or branching's first where HiGHS stopped at its limit with a dearer one (or none)."""
        if self.incumbent is None or (found is not None and found.proved):
            return found
        plan = Optimum(self.rounded(self.incumbent[1]), False)
        return plan if found is None or self.cost @ found.x > self.incumbent[0] else found

    @staticmethod
    def fixed(lower: np.ndarray, upper: np.ndarray, j: int, value: float) -> tuple[np.ndarray, np.ndarray]:
        low, high = lower.copy(), upper.copy()
        low[j] = high[j] = value
        return low, high

    def solved(self, lower: np.ndarray, upper: np.ndarray) -> _Node | None:
        found = self.relaxation(lower, upper)
        return None if found is None else (found[0], lower, upper, found[1])

    @staticmethod
    def closed(bound: float, best: float) -> bool:
        """Whether a branch whose relaxation is worth ``bound`` cannot improve on ``best``."""
        return bound >= best - MIP_GAP * abs(best)

    def branch_and_bound(self, time_limit: float) -> Optimum | None:
        from scipy.optimize import Bounds, milp

        found = milp(
            self.cost,
            constraints=self.constraints,
            integrality=self.programme.integral.astype(float),
            bounds=Bounds(np.zeros(len(self.cost)), self.programme.upper),
            options={"time_limit": time_limit, "mip_rel_gap": MIP_GAP},
        )
        return None if found.x is None else Optimum(self.rounded(found.x), found.status == 0)


__all__ = ["BRANCHES", "BROKEN", "CLOSABLE", "INTEGRAL", "MIP_GAP", "ROUNDS", "Optimum", "Programme", "optimise"]
