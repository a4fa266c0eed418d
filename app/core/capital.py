"""Capital over a horizon (docs/methodology.md "Capital"): what owning an asset costs in cash and in
present value when it is bought at the start, replaced at the end of its life, and sold at whatever
it is still worth when it is replaced or when the horizon ends.

Every function takes plain numbers or NumPy arrays (batch evaluations: one element per profile).
Time is in years from the decision; ``start`` is when the asset is delivered and begins to age.
``app.core.owning`` adds an option's capital and running lines up into what owning its hardware costs.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from app.core.ageing import Keeping
from app.core.ranges import Range

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
        if _number(age):  # one profile: no NumPy per call
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

    What depends only on the asset's life, curve, start, horizon and rate is ``flow_factors``, which
    callers pricing many assets of one kind compute once.
    """
    return flows(cost, flow_factors(life, residual, start, horizon, rate))


class Factors(NamedTuple):
    """What an asset's flows take of its life, residual curve, start, horizon and cost of capital
    (``flow_factors``): cash and present value are then linear in its price (``flows``). A named tuple:
    an own cluster's quote makes six."""

    purchases: Any
    at_life: Any
    replacements: Any
    at_end: Any
    #: 1 − residual(life): what each replacement costs net of the resale of the one it replaces
    net_of_resale: Any
    #: the replacements' discount factors summed
    series: Any
    #: the discount factor of the horizon's end (where the last asset is sold)
    end_discount: Any
    one: bool


def flow_factors(
    life: Any, residual: Residual, start: Any, horizon: Any, rate: Any, shared: dict[Any, Any] | None = None
) -> Factors:
    """``asset_flows``'s factors: purchases, residuals, the replacements' discounted series. ``shared``:
    a dict in which assets of several kinds priced together keep the discount factors they share
    (the delivery's and the horizon's end), computed once for arrays."""
    if _number(life) and _number(start) and _number(horizon) and _number(rate):
        return _factors_one(float(life), residual, float(start), float(horizon), float(rate))
    keep: dict[Any, Any] = {} if shared is None else shared
    in_service = np.maximum(np.asarray(horizon, dtype=float) - start, 0.0)
    purchases = np.maximum(1.0, np.ceil(in_service / life - 1e-9))
    replacements = purchases - 1.0
    age_at_end = in_service - replacements * life
    at_life = residual(life)
    at_end = residual(age_at_end)
    # replacements happen at start + j × life, j = 1 … replacements: a geometric series of discount factors
    if isinstance(rate, np.ndarray) or rate > 0:
        r = np.maximum(rate, MIN_RATE) if isinstance(rate, np.ndarray) else rate
        v_life = (1.0 + r) ** (-life)
        delivery_key = ("delivery", memo_key(rate), memo_key(start))
        delivery = keep.get(delivery_key)
        if delivery is None:
            delivery = keep[delivery_key] = ((1.0 + r) ** (-start), rate, start)
        series = delivery[0] * v_life * (1.0 - v_life**replacements) / (1.0 - v_life)
    else:
        series = replacements
    end_key = ("end", memo_key(rate), memo_key(horizon))
    end = keep.get(end_key)
    if end is None:
        end = keep[end_key] = ((1.0 + rate) ** (-np.asarray(horizon, dtype=float)), rate, horizon)
    return Factors(purchases, at_life, replacements, at_end, 1.0 - at_life, series, end[0], False)


def _number(x: Any) -> bool:
    """Whether ``x`` is one plain number (not an array, nor a bool)."""
    return isinstance(x, float | int) and not isinstance(x, bool)


def _factors_one(life: float, residual: Residual, start: float, horizon: float, rate: float) -> Factors:
    """``flow_factors`` for plain numbers: the same operations in the same order, on Python floats
    (``max`` as ``np.maximum`` for numbers that are not NaN, powers of NumPy scalars kept where the
    array path takes them). The figures agree with the array path's to the last bit only where NumPy's
    power of an array agrees with Python's: on some machines it differs in the last bit for a few
    inputs in a hundred (docs/performance.md, "Fourth pass")."""
    in_service = max(horizon - start, 0.0)
    purchases = max(1.0, float(math.ceil(in_service / life - 1e-9)))
    replacements = purchases - 1.0
    age_at_end = in_service - replacements * life
    at_life = residual(life)
    at_end = residual(age_at_end)
    if rate > 0:
        v_life = (1.0 + rate) ** (-life)
        series = (1.0 + rate) ** (-start) * v_life * (1.0 - v_life ** np.float64(replacements)) / (1.0 - v_life)
    else:
        series = replacements
    end_discount = (1.0 + rate) ** np.float64(-horizon)
    return Factors(purchases, at_life, replacements, at_end, 1.0 - at_life, series, end_discount, True)


def flows(cost: Any, f: Factors) -> tuple[Any, Any, Any]:
    """Cash, present value and purchases of an asset of price ``cost`` with factors ``f``."""
    cash = cost * f.purchases - cost * f.at_life * f.replacements - cost * f.at_end
    npv = cost + cost * f.net_of_resale * f.series - cost * f.at_end * f.end_discount
    if f.one and not isinstance(cost, np.ndarray):
        return float(cash), float(npv), int(f.purchases)
    return cash, npv, f.purchases


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


class CapitalLine(NamedTuple):
    """An asset class bought at the start: its price, useful life and residual curves (per end of the
    cost, ``residual_curves``); ``keeping``: its support by warranty and whether it may be kept past its
    life (``app.core.ageing``; None: replaced at the end of its life, no support)."""

    key: str
    upfront: Range
    life: Range
    curves: tuple[Residual, Residual, Residual]
    keeping: Keeping | None = None
    #: the key of its support line (where ``keeping`` prices support)
    support_key: str = "hardware_support"


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


class RunningLine(NamedTuple):
    """A cost paid every year the asset is in service."""

    key: str
    annual: Range


@dataclass(frozen=True, slots=True)
class Bridge:
    """Renting the compute while the owned one is procured: its yearly cost and sources."""

    yearly: Range
    sources: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Ownership:
    """What owning costs over the horizon (``own``), every figure a Range (arrays over a batch; NaN at
    an end not computed)."""

    #: per capital and running line, and the bridge: ``(key, annual, upfront, total)`` (the words of each
    #: line are its caller's: ``app.core.cluster.Bill.labels``)
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


def memo_key(value: Any) -> Any:
    """A memo key for a number or an array (by identity: the memo keeps the array alive)."""
    return id(value) if isinstance(value, np.ndarray) else value
