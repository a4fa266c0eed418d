"""Cost per useful GPU-hour over utilization (docs/methodology.md "Cost curves"): the article's hinge
drawn as curves, one per option, with the utilizations at which two curves cross.

Every point is the option plugin's own assessment of the profile at that utilization — the figure a
price comparison at that utilization answers — and the crossings are
:func:`app.engine.insights.break_even.crossings` over the same memo of assessments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.core.errors import ISOLATED, failure
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.types import Profile
from app.engine.insights.break_even import Crossing, crossings
from app.engine.insights.common import Costs, Model, Variant

#: the curves start at 10 % utilization (or the profile's, when lower) and take this many equal steps to 100 %
CURVE_START = 0.1
CURVE_STEPS = 30


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """One option's cost per useful GPU-hour at one utilization."""

    utilization: float
    cost_per_useful_gpu_hour: Range


@dataclass(frozen=True, slots=True)
class CostCurves:
    """Each assessed option's cost per useful GPU-hour over utilization, and where two options' curves cross."""

    #: per option that could be assessed: its points, by increasing utilization
    series: Mapping[str, tuple[CurvePoint, ...]]
    #: each pair of assessed options (in the order of ``options``): where their curves cross
    crossings: tuple[Crossing, ...]
    #: per crossing: both options' expected cost per useful GPU-hour at its expected utilization (None: no crossing)
    crossing_costs: tuple[float | None, ...]
    #: per option that could not be assessed at the profile: why
    errors: Mapping[str, str]
    error_codes: Mapping[str, str] = field(default_factory=dict)


def utilization_grid(utilization: float, start: float = CURVE_START, steps: int = CURVE_STEPS) -> tuple[float, ...]:
    """``steps`` equal steps from ``min(start, utilization)`` to 1.0, with ``utilization`` itself included."""
    low = min(start, utilization)
    grid = {round(low + (1.0 - low) * i / steps, 6) for i in range(steps + 1)}
    grid.add(utilization)
    return tuple(sorted(grid))


def cost_curves(
    model: Model, profile: Profile, knowledge: Knowledge, options: Sequence[str], grid: Sequence[float] | None = None
) -> CostCurves:
    """Each option's cost per useful GPU-hour at every utilization of ``grid`` (the profile's otherwise
    unchanged; its ``rental_plan``, or the plan the option chooses, at each point), and the crossings
    of every pair of options. An option that cannot be assessed at the profile is left out, with its error."""
    costs = Costs(model, profile, knowledge)
    points = grid or utilization_grid(profile.utilization)
    series: dict[str, tuple[CurvePoint, ...]] = {}
    errors: dict[str, str] = {}
    codes: dict[str, str] = {}
    for option in options:
        v = Variant(option)
        try:
            series[option] = tuple(CurvePoint(u, costs.quote(v, u).cost.per_useful_gpu_hour) for u in points)
        except ISOLATED as exc:
            codes[option], errors[option] = failure(exc)
    usable = [Variant(o) for o in options if o in series]
    pairs = [(a, b) for i, a in enumerate(usable) for b in usable[i + 1 :]]
    found = crossings(costs, pairs)
    at = tuple(
        None if (u := c.utilization.get("expected")) is None else costs.per_hour(Variant(c.first), u, "expected")
        for c in found
    )
    return CostCurves(series, found, at, errors, codes)
