"""Break-even points (docs/methodology.md "Break-even"): the utilization at which two option variants
cost the same per useful GPU-hour, the cluster size from which an owned cluster is cheapest, and
payback months. Which variants are compared is a parameter: the core names no option.

Everything re-runs the option plugins — the same model that prices and ranks — on varied profiles, and
applies the same job-shape and capacity rules: a variant whose offer cannot run the profile's job (its
largest job across nodes, its GPUs, its share of preemptible work) is refused here as a comparison refuses
it, with the same sentences, and a cluster size at which an offer cannot run it does not compete. The
buyer's own constraints (data security, deadline, budget) do not change where costs cross: the ranking
applies them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.core.errors import ISOLATED, failure
from app.core.kernel import Quote
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.types import Profile
from app.engine import decision
from app.engine.insights.common import ENDS, Costs, Model, Variant

UTILIZATION_GRID = tuple(i / 50 for i in range(1, 51))  # 0.02 … 1.00
BISECTION_STEPS = 20


@dataclass(frozen=True, slots=True)
class Crossing:
    """Where ``first`` and ``second`` cost the same per useful GPU-hour, per range end."""

    first: str
    second: str
    #: per end (low, expected, high): the break-even utilization, or None when they never cross
    utilization: Mapping[str, float | None]
    #: per end: which one is cheaper just above the crossing, or throughout when they never cross
    cheaper_above: Mapping[str, str | None]


@dataclass(frozen=True, slots=True)
class Payback:
    alternative: str
    #: months until the owned cluster has paid for itself, per end; None: never
    months: Mapping[str, float | None]
    within_horizon: Mapping[str, bool]


@dataclass(frozen=True, slots=True)
class BreakEven:
    crossings: tuple[Crossing, ...]
    #: smallest cluster (GPUs) from which owning is cheapest at the profile's utilization, per end
    own_cheapest_from_gpus: Mapping[str, int | None]
    paybacks: tuple[Payback, ...]
    errors: Mapping[str, str]
    error_codes: Mapping[str, str] = field(default_factory=dict)


#: the hard constraints about whether an offer can run the job at all (``app.core.constraints``; the
#: rented option's ``spot_capacity``): the job's shape and size against the offer's nodes and capacity
JOB_CONSTRAINTS = frozenset({"multi_node", "capacity", "min_gpus", "preemptible", "spot_capacity"})


def violation_code(code: str) -> str:
    """A hard constraint's code as answers name it (kebab-case: ``multi_node`` → ``multi-node``)."""
    return code.replace("_", "-")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a variant's offer cannot serve the profile: the broken constraints' codes and sentences (the
    sentences a comparison gives as ``infeasible_reasons``)."""

    codes: tuple[str, ...]
    reasons: tuple[str, ...]


def refusal(model: Model, costs: Costs, v: Variant, quote: Quote) -> Refusal | None:
    """``quote`` (``v``'s chosen quote at the profile) cannot run the job (``JOB_CONSTRAINTS``): the codes
    of what it breaks, and every sentence of the option's assessment — what the comparison of the same
    profile says; None when it can."""
    broken = [code for code, where in quote.violations if code in JOB_CONSTRAINTS and bool(np.any(where))]
    if not broken:
        return None
    profile = costs.at(v, utilization=costs.profile.utilization)
    said = decision.broken(model.assess(v.option, profile, costs.knowledge))
    return Refusal(tuple(dict.fromkeys(violation_code(code) for code in broken)), tuple(said))


def job_refused(quote: Quote) -> Any:
    """Where the quote cannot run the job (``JOB_CONSTRAINTS``): a bool, or an array over cluster sizes."""
    found: Any = False
    for code, where in quote.violations:
        if code in JOB_CONSTRAINTS:
            found = np.logical_or(found, where)
    return found


def _usable(quote: Quote, size: int) -> np.ndarray:
    """Per cluster size, whether the quote can run the job there."""
    return ~np.broadcast_to(np.asarray(job_refused(quote), dtype=bool), (size,))


def _first_change(grid: Sequence[float], diffs: Sequence[float]) -> tuple[float, float, bool] | None:
    """The first interval of ``grid`` where the cost difference changes sign: ``(lo, hi, positive at
    lo)``, or None."""
    prev_u, prev_d = grid[0], diffs[0]
    for u, d in zip(grid[1:], diffs[1:], strict=True):
        if (prev_d > 0) != (d > 0) and abs(prev_d - d) > 1e-12:
            return prev_u, u, prev_d > 0
        prev_u, prev_d = u, d
    return None


def crossings(
    costs: Costs,
    pairs: Sequence[tuple[Variant, Variant]],
    ends: Sequence[str] = ENDS,
    grid: Sequence[float] = UTILIZATION_GRID,
    steps: int = BISECTION_STEPS,
) -> tuple[Crossing, ...]:
    """The crossing of each of ``pairs``, per range end: the first sign change of the cost difference
    on ``grid``, then ``steps`` of bisection. Each variant is quoted at every utilization of the grid in
    one call, and the bisections of every pair and end step together: each step quotes each variant
    once, at the midpoints it is asked for."""
    if len(pairs) == 1 and len(grid) == 2 and steps <= TREE_STEPS:
        return (_crossing_by_tree(costs, *pairs[0], ends, grid, steps),)
    variants = list(dict.fromkeys(v for pair in pairs for v in pair))
    on_grid = {v: costs.curve(v, grid) for v in variants}
    at_full = {v: costs.curve(v, (1.0,)) for v in variants} if grid[-1] != 1.0 else None
    # (pair, end) -> [lo, hi, positive at lo]
    brackets: dict[tuple[int, str], list[Any]] = {}
    cheaper: list[dict[str, str | None]] = [{} for _ in pairs]
    for i, (a, b) in enumerate(pairs):
        for end in ends:
            diffs = [x - y for x, y in zip(on_grid[a][end], on_grid[b][end], strict=True)]
            found = _first_change(grid, diffs)
            if found is not None:
                brackets[(i, end)] = list(found)
            last = diffs[-1] if at_full is None else at_full[a][end][0] - at_full[b][end][0]
            cheaper[i][end] = None if abs(last) < 1e-9 else (a.label if last < 0 else b.label)
    for _ in range(steps):
        mids = {key: (lo + hi) / 2 for key, (lo, hi, _) in brackets.items()}
        asked: dict[Variant, list[tuple[int, str]]] = {}
        for i, end in mids:
            a, b = pairs[i]
            asked.setdefault(a, []).append((i, end))
            asked.setdefault(b, []).append((i, end))
        values: dict[tuple[Variant, int, str], float] = {}
        for v, keys in asked.items():
            curve = costs.curve(v, [mids[k] for k in keys])
            for j, (i, end) in enumerate(keys):
                values[(v, i, end)] = curve[end][j]
        for (i, end), mid in mids.items():
            a, b = pairs[i]
            bracket = brackets[(i, end)]
            if (values[(a, i, end)] - values[(b, i, end)] > 0) == bracket[2]:
                bracket[0] = mid
            else:
                bracket[1] = mid
    return tuple(
        Crossing(
            a.label,
            b.label,
            {end: (None if (k := brackets.get((i, end))) is None else round((k[0] + k[1]) / 2, 4)) for end in ends},
            cheaper[i],
        )
        for i, (a, b) in enumerate(pairs)
    )


#: a bisection this short is answered from every midpoint it could visit, quoted at once
TREE_STEPS = 12


@functools.cache
def _tree(lo: float, hi: float, steps: int) -> tuple[float, ...]:
    """Every midpoint ``steps`` of bisection of ``[lo, hi]`` could visit, each computed as the bisection
    computes it, in pre-order: a node's left subtree follows it, then its right one (2^steps − 1 points,
    the same for every profile)."""
    mids: list[float] = []

    def visit(lo: float, hi: float, depth: int) -> None:
        mid = (lo + hi) / 2
        mids.append(mid)
        if depth + 1 < steps:
            visit(lo, mid, depth + 1)
            visit(mid, hi, depth + 1)

    visit(lo, hi, 0)
    return tuple(mids)


def _crossing_by_tree(
    costs: Costs, a: Variant, b: Variant, ends: Sequence[str], grid: Sequence[float], steps: int
) -> Crossing:
    """The crossing of one pair on a grid of two utilizations: each variant quoted once at both ends and
    at every midpoint ``steps`` of bisection could visit (``_tree``), then the bisection walked on those
    figures — the same answer as stepping, each step reading the midpoint it would have quoted."""
    mids = _tree(grid[0], grid[1], steps)
    points = [*grid, *mids]
    curves = {v: costs.curve(v, points) for v in (a, b)}
    full = None if grid[-1] == 1.0 else {v: costs.curve(v, (1.0,)) for v in (a, b)}
    utilization: dict[str, float | None] = {}
    cheaper: dict[str, str | None] = {}
    for end in ends:
        ca, cb = curves[a][end], curves[b][end]  # the difference is taken only where the walk reads it
        found = _first_change(grid, [ca[i] - cb[i] for i in range(len(grid))])
        if found is None:
            utilization[end] = None
        else:
            lo, hi, positive = found
            at = 0  # the midpoint's place in ``mids``: its left subtree follows it, then its right one
            for depth in range(steps):
                mid = mids[at]
                k = len(grid) + at
                if (ca[k] - cb[k] > 0) == positive:
                    lo = mid
                    at += 2 ** (steps - depth - 1)
                else:
                    hi = mid
                    at += 1
            utilization[end] = round((lo + hi) / 2, 4)
        last = ca[len(grid) - 1] - cb[len(grid) - 1] if full is None else full[a][end][0] - full[b][end][0]
        cheaper[end] = None if abs(last) < 1e-9 else (a.label if last < 0 else b.label)
    return Crossing(a.label, b.label, utilization, cheaper)


def _crossing(
    costs: Costs,
    a: Variant,
    b: Variant,
    ends: Sequence[str] = ENDS,
    grid: Sequence[float] = UTILIZATION_GRID,
    steps: int = BISECTION_STEPS,
) -> Crossing:
    """One pair's crossing (``crossings``)."""
    return crossings(costs, [(a, b)], ends, grid, steps)[0]


def _cheapest_from(
    costs: Costs, owner: Variant, others: Sequence[Variant], gpus_per_server: int
) -> dict[str, int | None]:
    """Smallest cluster at the profile's utilization from which ``owner`` stays cheapest (per end).

    At a size where an alternative cannot be assessed or its offer cannot run the job (no offer of it
    holds that many GPUs on the profile's plan, or spans a job that large), it does not compete; where the
    owner's cannot, it is not cheapest.

    The answer is the smallest size of the unbroken run of sizes, ending at the largest, where the
    owner is cheapest. Every size is quoted in one call per variant (the kernels take an array of
    cluster sizes); where a variant cannot be quoted so, the sizes are walked from the largest down,
    one at a time, until owning stops winning for every end."""
    sizes = [*range(1, 129), *range(144, 4097, 16)]  # servers
    gpus = np.array([s * gpus_per_server for s in sizes], dtype=float)
    try:
        own = costs.model.choose(owner.option, costs.at(owner, gpus=gpus), costs.knowledge)[0]
        rest = [costs.model.choose(v.option, costs.at(v, gpus=gpus), costs.knowledge)[0] for v in others]
    except Exception:  # a variant that cannot take an array of sizes: one size at a time
        return _cheapest_from_walking(costs, owner, others, sizes, gpus_per_server)
    first: dict[str, int | None] = dict.fromkeys(ENDS)
    for end in ENDS:
        mine = np.broadcast_to(np.asarray(getattr(own.cost.per_useful_gpu_hour, end), dtype=float), gpus.shape)
        cheapest = _usable(own, gpus.size).copy()
        for q in rest:
            theirs = np.broadcast_to(np.asarray(getattr(q.cost.per_useful_gpu_hour, end), dtype=float), gpus.shape)
            cheapest &= (mine < theirs) | ~_usable(q, gpus.size)
        losing = np.flatnonzero(~cheapest)
        start = 0 if losing.size == 0 else int(losing[-1]) + 1  # the run of winning sizes ending at the largest
        first[end] = None if start >= len(sizes) else int(gpus[start])
    return first


def _cheapest_from_walking(
    costs: Costs, owner: Variant, others: Sequence[Variant], sizes: Sequence[int], gpus_per_server: int
) -> dict[str, int | None]:
    u = costs.profile.utilization
    first: dict[str, int | None] = dict.fromkeys(ENDS)
    running = set(ENDS)  # ends for which the owner has been cheapest at every size walked so far
    for servers in reversed(sizes):
        gpus = servers * gpus_per_server
        own = _quoted_or_none(costs, owner, u, gpus)
        rest = [a for v in others if (a := _quoted_or_none(costs, v, u, gpus)) is not None]
        for end in list(running):
            mine = None if own is None else float(getattr(own.cost.per_useful_gpu_hour, end))
            if mine is not None and all(mine < float(getattr(a.cost.per_useful_gpu_hour, end)) for a in rest):
                first[end] = gpus
            else:
                running.discard(end)
        if not running:
            break
    return first


def _quoted_or_none(costs: Costs, v: Variant, u: float, gpus: int) -> Quote | None:
    try:
        quote = costs.quote(v, u, gpus)
    except ISOLATED:  # this variant cannot be assessed at that size (as ``break_even`` treats it)
        return None
    return None if bool(np.any(job_refused(quote))) else quote  # nor run the job at that size


def _payback(own: Quote, alt: Quote, alt_label: str, horizon_years: float) -> Payback:
    """Months until the upfront outlay is recovered by paying less than the alternative each year.

    ``months = 12 × upfront ÷ (alternative's annual cost − own running cost)``; running costs
    are the breakdown lines without upfront (ops, power). Best case: own low, alternative high.
    """
    running = sum((annual for _, annual, upfront, _ in own.lines if upfront.high == 0), Range.point(0))
    up, alt_annual = own.cost.upfront, alt.cost.annual
    pairs = {
        "low": (up.low, alt_annual.high - running.low),
        "expected": (up.expected, alt_annual.expected - running.expected),
        "high": (up.high, alt_annual.low - running.high),
    }
    months = {e: (12 * u / saving if saving > 0 else None) for e, (u, saving) in pairs.items()}
    within = {e: m is not None and m <= horizon_years * 12 for e, m in months.items()}
    return Payback(alt_label, {e: None if m is None else round(m, 1) for e, m in months.items()}, within)


def crossing(model: Model, profile: Profile, knowledge: Knowledge, a: Variant, b: Variant) -> Crossing | None:
    """Where ``a`` and ``b`` cost the same at the expected figures, found by bisection over 1–100 %
    utilization (one crossing at most): about 30 assessments, not a grid scan. None when either
    cannot be assessed or its offer cannot run the profile's job (``JOB_CONSTRAINTS``, as a comparison
    refuses it)."""
    try:
        costs = Costs(model, profile, knowledge, ("expected",))
        if any(bool(np.any(job_refused(costs.quote(v, profile.utilization)))) for v in (a, b)):
            return None
        return _crossing(costs, a, b, ("expected",), (0.01, 1.0), steps=10)
    except ISOLATED:
        return None


def break_even(
    model: Model,
    profile: Profile,
    knowledge: Knowledge,
    *,
    pairs: Sequence[tuple[Variant, Variant]],
    owner: Variant | None,
    gpus_per_server: int,
) -> BreakEven:
    """Crossings for each of ``pairs``; for ``owner`` (the option that buys its hardware, if any), the
    cluster size from which it is cheapest and its payback against every other variant of ``pairs``.

    A variant that cannot be assessed at the profile is left out, with its error (by option); one whose
    offer cannot run the profile's job is left out with the comparison's sentences and the constraints'
    codes (by variant, ``option:plan``: one plan of an option may run the job where another cannot)."""
    costs = Costs(model, profile, knowledge)
    errors: dict[str, str] = {}
    codes: dict[str, str] = {}
    usable: list[Variant] = []
    for v in dict.fromkeys(v for pair in pairs for v in pair):
        try:
            refused = refusal(model, costs, v, costs.quote(v, profile.utilization))
        except ISOLATED as exc:
            if v.option not in errors:
                codes[v.option], errors[v.option] = failure(exc)
            continue
        if refused is None:
            usable.append(v)
        else:
            codes[v.label], errors[v.label] = refused.codes[0], "; ".join(refused.reasons)
    found = crossings(costs, [(a, b) for a, b in pairs if a in usable and b in usable])
    cheapest_from: dict[str, int | None] = dict.fromkeys(ENDS)
    paybacks: list[Payback] = []
    if owner is not None and owner in usable:
        alternatives = [v for v in usable if v.option != owner.option]
        per_option = list({v.option: Variant(v.option) for v in alternatives}.values())
        if per_option:
            cheapest_from = _cheapest_from(costs, owner, per_option, gpus_per_server)
        own = costs.quote(owner, profile.utilization)
        for v in alternatives:
            paybacks.append(_payback(own, costs.quote(v, profile.utilization), v.label, profile.horizon_years))
    return BreakEven(found, cheapest_from, tuple(paybacks), errors, codes)
