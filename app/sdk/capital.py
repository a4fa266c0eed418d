"""Capital over a horizon (docs/methodology.md "Capital"): what owning an asset costs in cash and in
present value when it is bought at the start, replaced at the end of its life, and sold at whatever
it is still worth when it is replaced or when the horizon ends.

Every function takes plain numbers or NumPy arrays (batch evaluations: one element per profile).
Time is in years from the decision; ``start`` is when the asset is delivered and begins to age.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.sdk.ranges import Range

ZERO = Range.point(0)
#: the smallest cost of capital arrays of draws are computed at (the closed forms divide by ln(1 + rate))
MIN_RATE = 1e-9
#: residual(age in years) -> share of the purchase price the asset still fetches
Residual = Callable[[Any], Any]


def discount_factor(years: Any, rate: float) -> Any:
    """``1 / (1 + rate)^years``: what money ``years`` from now is worth today."""
    return (1.0 + rate) ** (-np.asarray(years, dtype=float) if isinstance(years, np.ndarray) else -years)


def annuity(years: Any, rate: Any) -> Any:
    """Present value of 1 a year paid continuously for ``years``: ``(1 − v^years) / ln(1 + rate)``
    (``years`` itself at a zero rate). Running costs are such streams. ``rate`` may be an array of
    Monte Carlo draws."""
    if isinstance(rate, np.ndarray):
        r = np.maximum(rate, MIN_RATE)
        return (1.0 - (1.0 + r) ** (-np.asarray(years, dtype=float))) / np.log1p(r)
    if rate <= 0:
        return years
    return (1.0 - discount_factor(years, rate)) / math.log1p(rate)


def residual_curve(decline_per_year: Any, points: Sequence[tuple[float, float]] = ()) -> Residual:
    """An asset's resale value as a share of new, by age: through the market ``points`` (age, share)
    where the knowledge base has them — linear between points — and beyond the last point (or from
    new, without points) falling by a constant share a year: the last segment's rate where there are
    two points or more, else ``decline_per_year``."""
    ages = [0.0, *(a for a, _ in points)]
    shares = [1.0, *(s for _, s in points)]
    last_age, last_share = ages[-1], shares[-1]
    if len(points) >= 2 and shares[-2] > 0 and ages[-1] > ages[-2]:
        yearly = (last_share / shares[-2]) ** (1.0 / (ages[-1] - ages[-2]))
    else:
        yearly = 1.0 - decline_per_year

    def residual(age: Any) -> Any:
        if isinstance(age, float | int) and not isinstance(age, bool):  # one profile: no NumPy per call
            x = float(age)
            if x <= last_age:
                return _interp(x, ages, shares)
            return float(last_share * yearly ** np.float64(max(x - last_age, 0.0)))
        a = np.asarray(age, dtype=float)
        inside = np.interp(np.minimum(a, last_age), ages, shares)
        beyond = last_share * yearly ** np.maximum(a - last_age, 0.0)
        value = np.where(a <= last_age, inside, beyond)
        return value if np.ndim(value) else float(value)

    return residual


def asset_flows(
    cost: Any, *, life: Any, residual: Residual, start: Any, horizon: Any, rate: Any
) -> tuple[Any, Any, Any]:
    """Cash cost, present value and number of purchases of keeping one asset in service from
    ``start`` to ``horizon``.

    Bought at 0 and delivered at ``start``; replaced each time its age reaches ``life`` (the old one
    sold at ``residual(life)``); the one in service at the horizon is sold at ``residual(age)``:

        purchases = max(1, ceil((horizon − start) ÷ life))
        cash      = cost × purchases − cost × residual(life) × (purchases − 1) − cost × residual(age at horizon)
        npv       = the same flows discounted to today at ``rate``
    """
    if all(isinstance(x, float | int) and not isinstance(x, bool) for x in (cost, life, start, horizon, rate)):
        return _asset_flows_one(float(cost), float(life), residual, float(start), float(horizon), float(rate))
    in_service = np.maximum(np.asarray(horizon, dtype=float) - start, 0.0)
    purchases = np.maximum(1.0, np.ceil(in_service / life - 1e-9))
    replacements = purchases - 1.0
    age_at_end = in_service - replacements * life
    at_life = residual(life)
    at_end = residual(age_at_end)
    cash = cost * purchases - cost * at_life * replacements - cost * at_end
    # replacements happen at start + j × life, j = 1 … replacements: a geometric series of discount factors
    if isinstance(rate, np.ndarray) or rate > 0:
        r = np.maximum(rate, MIN_RATE) if isinstance(rate, np.ndarray) else rate
        v_life = (1.0 + r) ** (-life)
        series = (1.0 + r) ** (-start) * v_life * (1.0 - v_life**replacements) / (1.0 - v_life)
    else:
        series = replacements
    npv = cost + cost * (1.0 - at_life) * series - cost * at_end * (1.0 + rate) ** (-np.asarray(horizon, dtype=float))
    if not any(isinstance(x, np.ndarray) for x in (horizon, rate, cost, life, start, npv)):
        return float(cash), float(npv), int(purchases)
    return cash, npv, purchases


def _asset_flows_one(
    cost: float, life: float, residual: Residual, start: float, horizon: float, rate: float
) -> tuple[float, float, int]:
    """``asset_flows`` for plain numbers: the same operations in the same order, on Python floats
    (``max`` as ``np.maximum`` for numbers that are not NaN, powers of NumPy scalars kept where the
    array path takes them)."""
    in_service = max(horizon - start, 0.0)
    purchases = max(1.0, float(math.ceil(in_service / life - 1e-9)))
    replacements = purchases - 1.0
    age_at_end = in_service - replacements * life
    at_life = residual(life)
    at_end = residual(age_at_end)
    cash = cost * purchases - cost * at_life * replacements - cost * at_end
    if rate > 0:
        v_life = (1.0 + rate) ** (-life)
        series = (1.0 + rate) ** (-start) * v_life * (1.0 - v_life ** np.float64(replacements)) / (1.0 - v_life)
    else:
        series = replacements
    npv = cost + cost * (1.0 - at_life) * series - cost * at_end * (1.0 + rate) ** np.float64(-horizon)
    return float(cash), float(npv), int(purchases)


def _interp(x: float, xp: Sequence[float], fp: Sequence[float]) -> float:
    """``float(np.interp(x, xp, fp))`` for one number (NumPy's algorithm: the left or right value
    outside, the point's value on a point, else ``slope × (x − xp[j]) + fp[j]``)."""
    if x < xp[0]:
        return float(fp[0])
    if x > xp[-1]:
        return float(fp[-1])
    if len(xp) == 1:
        return float(fp[0])
    j = bisect.bisect_right(xp, x) - 1
    if j == len(xp) - 1 or xp[j] == x:
        return float(fp[j])
    slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
    return float(slope * (x - xp[j]) + fp[j])


def where(condition: Any, yes: Any, no: Any) -> Any:
    """``yes`` where ``condition`` holds, else ``no`` — element-wise over a batch, plainly otherwise.
    Ranges are chosen end by end."""
    if isinstance(yes, Range) or isinstance(no, Range):
        a, b = _as_range(yes), _as_range(no)
        return Range.elementwise(*(where(condition, a[i], b[i]) for i in range(3)))
    if isinstance(condition, np.ndarray) or isinstance(yes, np.ndarray) or isinstance(no, np.ndarray):
        return np.where(condition, yes, no)
    return yes if condition else no


def _as_range(value: Any) -> Range:
    return value if isinstance(value, Range) else Range.point(value)


@dataclass(frozen=True, slots=True)
class CapitalLine:
    """An asset class bought at the start: its price, useful life and resale."""

    key: str
    label: str
    basis: str
    sources: tuple[Any, ...]
    upfront: Range
    life: Range
    decline: Range
    #: market resale points (age, (low, expected, high) share of new), when the knowledge base has them
    resale: tuple[tuple[float, tuple[float, float, float]], ...] = ()
    #: the residual curves of the low, expected and high ends (``residual_curves``), when made beforehand
    curves: tuple[Residual, Residual, Residual] | None = None


def residual_curves(
    decline: Range, resale: tuple[tuple[float, tuple[float, float, float]], ...] = ()
) -> tuple[Residual, Residual, Residual]:
    """An asset's residual curve at each end of the cost: the low end (best case) resells at the high
    market share and declines by the low rate, the high end the other way."""
    if not resale and decline.low is decline.expected is decline.high:  # one curve serves every end
        one = residual_curve(decline.low)
        return one, one, one
    return tuple(  # type: ignore[return-value]
        residual_curve(getattr(decline, end), [(a, s[pick]) for a, s in resale])
        for end, pick in (("low", 2), ("expected", 1), ("high", 0))
    )


@dataclass(frozen=True, slots=True)
class RunningLine:
    """A cost paid every year the asset is in service."""

    key: str
    label: str
    basis: str
    sources: tuple[Any, ...]
    annual: Range


@dataclass(frozen=True, slots=True)
class Bridge:
    """Renting the compute while the owned one is procured: its yearly cost and sources."""

    yearly: Range
    sources: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Ownership:
    """What owning costs over the horizon (``own``), every figure a Range (arrays over a batch)."""

    #: per capital and running line, and the bridge: ``(key, annual, upfront, total)`` (the words of each
    #: line are its caller's: ``app.sdk.cluster.Bill.labels``)
    lines: tuple[tuple[str, Range, Range, Range], ...]
    annual: Range
    upfront: Range
    total: Range
    npv: Range
    equivalent_annual: Range
    #: where the team rents until installation rather than waiting (bool, or an array over a batch)
    bridged: Any
    #: years the owned compute serves within the horizon (the whole horizon when bridged)
    operating_years: Any


ENDS = ("low", "expected", "high")
#: the end of a cost-lowering input (a longer life) that goes with each end of the cost
FAVOURABLE = {"low": "high", "expected": "expected", "high": "low"}


def own(
    *,
    horizon: Any,
    lead_time_days: Range,
    capital: Sequence[CapitalLine],
    running: Sequence[RunningLine],
    rate: Any,
    depreciation_years: Range,
    bridge: Bridge | None = None,
    delay_cost_per_day: Any = None,
) -> Ownership:
    """Capital and running costs of owning over ``horizon`` years (docs/methodology.md "Capital").

    The assets are bought now and delivered after the lead time; running costs are paid while they
    serve; while waiting the team either goes without (paying ``delay_cost_per_day`` when given) or,
    with a ``bridge``, rents — whichever costs less per useful GPU-hour, per profile. ``annual`` is the
    accounting view: capital written off over ``depreciation_years`` plus running costs.
    """
    start = {e: getattr(lead_time_days, e) / 365.0 for e in ENDS}
    cash: dict[str, Range] = {}
    npv_parts: list[Range] = []
    for c in capital:
        per_end = []
        curves = c.curves or residual_curves(c.decline, c.resale)
        u, life = c.upfront, c.life
        if (
            curves[0] is curves[1] is curves[2]
            and u.low is u.expected is u.high
            and life.low is life.expected is life.high
        ):
            # every end the same (a point, or one array of Monte Carlo draws): computed once
            flows = asset_flows(
                u.low, life=life.low, residual=curves[0], start=start["expected"], horizon=horizon, rate=rate
            )
            cash[c.key] = Range.elementwise(flows[0], flows[0], flows[0])
            npv_parts.append(Range.elementwise(flows[1], flows[1], flows[1]))
            continue
        for end, curve in zip(ENDS, curves, strict=True):
            per_end.append(
                asset_flows(
                    getattr(c.upfront, end),
                    life=getattr(c.life, FAVOURABLE[end]),
                    residual=curve,
                    start=start["expected"],
                    horizon=horizon,
                    rate=rate,
                )
            )
        cash[c.key] = Range.elementwise(*(f[0] for f in per_end))
        npv_parts.append(Range.elementwise(*(f[1] for f in per_end)))
    # running costs from installation to the horizon's end: the best case runs shortest
    serving = Range.elementwise(*(np.maximum(horizon - start[e], 0.0) for e in ("high", "expected", "low")))
    serving_pv = Range.elementwise(
        *(annuity(horizon, rate) - annuity(start[e], rate) for e in ("high", "expected", "low"))
    )
    waiting = Range.elementwise(*(start[e] for e in ENDS))
    yearly_running = sum((r.annual for r in running), Range.point(0))
    capital_total = sum(cash.values(), Range.point(0))
    total = capital_total + yearly_running * serving
    npv = sum(npv_parts, Range.point(0)) + yearly_running * serving_pv
    bridged: Any = False
    if bridge is not None:
        operating = np.maximum(horizon - start["expected"], 1e-9)
        delay = 0.0 if delay_cost_per_day is None else np.nan_to_num(delay_cost_per_day) * lead_time_days.expected
        wait_per_year = (total.expected + delay) / operating
        bridge_per_year = (total.expected + bridge.yearly.expected * start["expected"]) / horizon
        bridged = bridge_per_year < wait_per_year
        if not isinstance(bridged, np.ndarray):
            bridged = bool(bridged)
    lines: list[tuple[str, Range, Range, Range]] = [
        (c.key, c.upfront / depreciation_years, c.upfront, cash[c.key]) for c in capital
    ]
    lines += [(r.key, r.annual, ZERO, r.annual * serving) for r in running]
    if bridge is not None and np.any(bridged):
        spent = where(bridged, bridge.yearly * waiting, 0.0)
        total = total + spent
        npv = npv + where(bridged, bridge.yearly * Range.elementwise(*(annuity(start[e], rate) for e in ENDS)), 0.0)
        lines.append(("bridge", ZERO, ZERO, spent))
    return Ownership(
        lines=tuple(lines),
        annual=sum((li[1] for li in lines), ZERO),
        upfront=sum((c.upfront for c in capital), ZERO),
        total=total,
        npv=npv,
        equivalent_annual=npv / annuity(horizon, rate),
        bridged=bridged,
        operating_years=where(bridged, horizon, np.maximum(horizon - start["expected"], 1e-9)),
    )
