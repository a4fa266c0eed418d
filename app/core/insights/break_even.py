"""Break-even points (docs/methodology.md "Break-even"): the utilization at which two option variants
cost the same per useful GPU-hour, the cluster size from which an owned cluster is cheapest, and
payback months. Which variants are compared is a parameter: the core names no option.

Everything re-runs the option plugins — the same model that prices and ranks — on varied profiles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.core.errors import ISOLATED, failure
from app.core.insights.common import ENDS, Costs, Model, Variant
from app.core.kernel import Quote
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.types import Profile

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


def _crossing(
    costs: Costs,
    a: Variant,
    b: Variant,
    ends: Sequence[str] = ENDS,
    grid: Sequence[float] = UTILIZATION_GRID,
    steps: int = BISECTION_STEPS,
) -> Crossing:
    """Scan ``grid`` for the first sign change of the cost difference, then bisect it."""
    utilization: dict[str, float | None] = {}
    cheaper: dict[str, str | None] = {}
    for end in ends:

        def diff(u: float, end: str = end) -> float:
            return costs.per_hour(a, u, end) - costs.per_hour(b, u, end)

        found: float | None = None
        prev_u, prev_d = grid[0], diff(grid[0])
        for u in grid[1:]:
            d = diff(u)
            if (prev_d > 0) != (d > 0) and abs(prev_d - d) > 1e-12:
                lo, hi = prev_u, u
                for _ in range(steps):
                    mid = (lo + hi) / 2
                    if (diff(mid) > 0) == (prev_d > 0):
                        lo = mid
                    else:
                        hi = mid
                found, prev_d = round((lo + hi) / 2, 4), d
                break
            prev_u, prev_d = u, d
        utilization[end] = found
        last = diff(1.0)
        cheaper[end] = None if abs(last) < 1e-9 else (a.label if last < 0 else b.label)
    return Crossing(a.label, b.label, utilization, cheaper)


def _cheapest_from(
    costs: Costs, owner: Variant, others: Sequence[Variant], gpus_per_server: int
) -> dict[str, int | None]:
    """Smallest cluster at the profile's utilization from which ``owner`` stays cheapest (per end).

    At a size where an alternative cannot be assessed (no offer of it holds that many GPUs on the
    profile's plan), it does not compete; where the owner cannot be, it is not cheapest.

    The sizes are walked from the largest down, each variant assessed once per size: the answer is
    the smallest size of the unbroken run of sizes, ending at the largest, where the owner is
    cheapest — so the walk stops at the first size where it is not, for every end (at once, when
    owning never wins)."""
    u = costs.profile.utilization
    sizes = [*range(1, 129), *range(144, 4097, 16)]  # servers
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
        return costs.quote(v, u, gpus)
    except ISOLATED:  # this variant cannot be assessed at that size (as ``break_even`` treats it)
        return None


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


def crossings(costs: Costs, pairs: Sequence[tuple[Variant, Variant]]) -> tuple[Crossing, ...]:
    """The crossing of each of ``pairs`` (grid scan then bisection, per range end), on ``costs``' memo."""
    return tuple(_crossing(costs, a, b) for a, b in pairs)


def crossing(model: Model, profile: Profile, knowledge: Knowledge, a: Variant, b: Variant) -> Crossing | None:
    """Where ``a`` and ``b`` cost the same at the expected figures, found by bisection over 1–100 %
    utilization (one crossing at most): about 30 assessments, not a grid scan. None when either
    cannot be assessed."""
    try:
        return _crossing(Costs(model, profile, knowledge), a, b, ("expected",), (0.01, 1.0), steps=10)
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

    A variant that cannot be assessed at the profile is left out, with its error."""
    costs = Costs(model, profile, knowledge)
    errors: dict[str, str] = {}
    codes: dict[str, str] = {}
    usable: list[Variant] = []
    for v in dict.fromkeys(v for pair in pairs for v in pair):
        try:
            costs.quote(v, profile.utilization)
            usable.append(v)
        except ISOLATED as exc:
            if v.option not in errors:
                codes[v.option], errors[v.option] = failure(exc)
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
