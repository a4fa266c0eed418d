"""An owned asset as it ages (docs/methodology.md "Capital (own cluster)", "No double counts, no sunk
resale"): hardware support priced by warranty, and past the asset's life the cheaper of keeping it
longer and replacing it.

``plan`` prices one asset of price 1 kept in service from its delivery ``start`` to the ``horizon``
(years from the decision), at one end of its ranges: the purchases, replacements and resale of
``app.core.capital.flow_factors``, plus its support contract — a small share of the price a year while
the OEM warranty runs, the post-warranty share after it — and, where the horizon ends less than
``extension`` years after a replacement would fall due, the plan that keeps the old asset instead
(its support raised by ``increase``, as repairs rise with the failure rate of an ageing server) when
that costs less in cash. Every figure is a number, or an array over a batch or Monte Carlo draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.core.ranges import Range

#: the smallest cost of capital the closed forms are computed at (they divide by ln(1 + rate))
MIN_RATE = 1e-9


@dataclass(frozen=True, slots=True)
class Keeping:
    """How an asset ages: its warranty (years), the support share of its price a year in warranty
    and after it, how many years it may be kept past its life, and how much its support rises then
    (all ranges; support none where both shares are 0)."""

    warranty_years: Range
    in_warranty: Range
    after_warranty: Range
    extension_years: Range
    increase: Range
    #: whether support is priced at all (either share above 0 at some end): read for every line of
    #: every quote, so decided once here
    supported: bool = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "supported", not (_zero(self.in_warranty) and _zero(self.after_warranty)))


@dataclass(frozen=True, slots=True)
class Plan:
    """One asset of price 1 over the horizon: capital cash and present value (purchases less resale),
    its support's cash and present value, and where it is kept past its life rather than replaced."""

    cash: Any
    npv: Any
    support_cash: Any
    support_npv: Any
    extended: Any


def plan(e: int, *, life: Any, residual: Any, start: Any, horizon: Any, rate: Any, keeping: Keeping) -> Plan:
    """The asset's plan at end ``e`` of its ranges (the low cost end takes the longer warranty and
    extension and the smaller support shares).

        in service T = max(horizon − start, 0); purchases P = max(1, ⌈T ÷ L⌉); R = P − 1; A = T − R·L
        support(t)   = in_warranty × min(W, t) + after_warranty × max(t − W, 0)
        replace      cash = P − R·res(L) − res(A)            + R·support(L) + support(A)
        keep longer  cash = R − (R − 1)·res(L) − res(L + A)  + R·support(L) + after × (1 + increase) × A
                     (where R ≥ 1 and A ≤ the extension), whichever costs less.
    """
    w, x = keeping.warranty_years[2 - e], keeping.extension_years[2 - e]
    a_in, a_after, rise = keeping.in_warranty[e], keeping.after_warranty[e], keeping.increase[e]
    if all(type(v) is float or type(v) is int for v in (life, start, horizon, rate, w, x, a_in, a_after, rise)):
        return _plan_one(float(life), residual, float(start), float(horizon), float(rate), w, x, a_in, a_after, rise)
    in_service = np.maximum(np.asarray(horizon, dtype=float) - start, 0.0)
    purchases = np.maximum(1.0, np.ceil(in_service / life - 1e-9))
    r = purchases - 1.0
    age = in_service - r * life
    at_life, at_end, kept_end = residual(life), residual(age), residual(life + age)

    def support(t: Any) -> Any:
        return a_in * np.minimum(w, t) + a_after * np.maximum(t - w, 0.0)

    aged = a_after * (1.0 + rise) * age
    cash_replace = purchases - r * at_life - at_end
    cash_keep = r - np.maximum(r - 1.0, 0.0) * at_life - kept_end
    support_replace = r * support(life) + support(age)
    support_keep = r * support(life) + aged
    extended = (r >= 1.0) & (age <= x) & (cash_keep + support_keep < cash_replace + support_replace)

    # present values: generations start at start + j·L (j = 0 … R); v = 1 ÷ (1 + rate)
    rate_a = np.maximum(rate, MIN_RATE)
    v = 1.0 + rate_a
    log = np.log1p(rate_a)

    def annuity(t: Any) -> Any:
        return (1.0 - v ** (-np.asarray(t, dtype=float))) / log

    def starts(n: Any) -> Any:  # Σ_{j=0}^{n−1} v^(start + j·L)
        v_life = v ** (-life)
        return v ** (-start) * (1.0 - v_life**n) / (1.0 - v_life)

    def support_pv(t: Any) -> Any:  # a generation's support, discounted to its delivery
        inside = np.minimum(w, t)
        return a_in * annuity(inside) + a_after * (annuity(t) - annuity(inside))

    end_discount = v ** (-np.asarray(horizon, dtype=float))
    net = 1.0 - at_life
    v_life = v ** (-life)
    npv_replace = 1.0 + net * v_life * starts(r) - at_end * end_discount
    npv_keep = 1.0 + net * v_life * starts(np.maximum(r - 1.0, 0.0)) - kept_end * end_discount
    full = support_pv(life) * starts(r)
    last_start = v ** (-(start + r * life))
    support_npv_replace = full + support_pv(age) * last_start
    previous_start = v ** (-(start + np.maximum(r - 1.0, 0.0) * life))
    support_npv_keep = full + previous_start * a_after * (1.0 + rise) * (annuity(life + age) - annuity(life))
    found = Plan(
        np.where(extended, cash_keep, cash_replace),
        np.where(extended, npv_keep, npv_replace),
        np.where(extended, support_keep, support_replace),
        np.where(extended, support_npv_keep, support_npv_replace),
        extended,
    )
    if np.ndim(found.cash) == 0:  # one profile: plain numbers
        cash, npv, s_cash, s_npv = (float(f) for f in (found.cash, found.npv, found.support_cash, found.support_npv))
        return Plan(cash, npv, s_cash, s_npv, bool(found.extended))
    return found


def _plan_one(
    life: float,
    residual: Any,
    start: float,
    horizon: float,
    rate: float,
    w: float,
    x: float,
    a_in: float,
    a_after: float,
    rise: float,
) -> Plan:
    """``plan`` for one profile: the same operations in the same order on Python floats (``max`` and
    ``min`` as NumPy's for numbers that are not NaN; powers and the logarithm on NumPy scalars, as the
    array path takes them), so the figures are the same to the last bit (tests/test_ageing.py): 12 µs a
    call where NumPy on 0-d arrays took 34 µs, and an own cluster's offer makes six of them."""
    f64 = np.float64
    in_service = max(horizon - start, 0.0)
    purchases = max(1.0, float(math.ceil(in_service / life - 1e-9)))
    r = purchases - 1.0
    age = in_service - r * life
    at_life, at_end, kept_end = residual(life), residual(age), residual(life + age)

    def support(t: float) -> float:
        return a_in * min(w, t) + a_after * max(t - w, 0.0)

    aged = a_after * (1.0 + rise) * age
    cash_replace = purchases - r * at_life - at_end
    cash_keep = r - max(r - 1.0, 0.0) * at_life - kept_end
    support_replace = r * support(life) + support(age)
    support_keep = r * support(life) + aged
    extended = (r >= 1.0) and (age <= x) and (cash_keep + support_keep < cash_replace + support_replace)

    rate_a = max(rate, MIN_RATE)
    v = f64(1.0 + rate_a)
    log = float(np.log1p(f64(rate_a)))

    def annuity(t: float) -> float:
        return float((1.0 - v ** f64(-t)) / log)

    def starts(n: float) -> float:
        v_life = v ** f64(-life)
        return float(v ** f64(-start) * (1.0 - v_life ** f64(n)) / (1.0 - v_life))

    def support_pv(t: float) -> float:
        inside = min(w, t)
        return a_in * annuity(inside) + a_after * (annuity(t) - annuity(inside))

    net = 1.0 - at_life
    v_life = float(v ** f64(-life))
    end_discount = float(v ** f64(-horizon))
    full = support_pv(life) * starts(r)
    if not extended:  # replaced at the end of its life
        npv = 1.0 + net * v_life * starts(r) - at_end * end_discount
        last_start = float(v ** f64(-(start + r * life)))
        return Plan(float(cash_replace), npv, float(support_replace), full + support_pv(age) * last_start, False)
    npv_keep = 1.0 + net * v_life * starts(max(r - 1.0, 0.0)) - kept_end * end_discount
    previous_start = float(v ** f64(-(start + max(r - 1.0, 0.0) * life)))
    support_npv_keep = full + previous_start * a_after * (1.0 + rise) * (annuity(life + age) - annuity(life))
    return Plan(float(cash_keep), npv_keep, float(support_keep), support_npv_keep, True)


def priced(memo: dict[Any, Any], line: Any, e: int, start: Any, horizon: Any, rate: Any) -> tuple[Any, ...]:
    """Capital cash and present value, and support cash and present value, of the capital ``line``
    (``app.core.capital.CapitalLine`` with ``keeping``) at end ``e``: ``plan`` × its price, the plan kept
    in ``memo`` for lines of the same life, curves and keeping."""
    key = ("keeping", id(line.curves), id(line.life), id(line.keeping), e, _key(start), _key(horizon), _key(rate))
    kept = memo.get(key)
    if kept is None:
        found = plan(
            e,
            life=line.life[2 - e],
            residual=line.curves[e],
            start=start,
            horizon=horizon,
            rate=rate,
            keeping=line.keeping,
        )
        kept = memo[key] = (found, line, start, horizon, rate)  # keeps what the key names alive
    p: Plan = kept[0]
    price = line.upfront[e]
    return price * p.cash, price * p.npv, price * p.support_cash, price * p.support_npv


def _key(value: Any) -> Any:
    return id(value) if isinstance(value, np.ndarray) else value


def on_market(residual: Any, haircut: float, delay_years: float) -> Any:
    """A residual curve as a seller receives it: ``(1 − haircut) × residual(age + time to sell)`` —
    the remarketer's share and the months the hardware keeps ageing before it is sold."""

    def received(age: Any) -> Any:
        value = (1.0 - haircut) * residual(age + delay_years)
        return value if isinstance(value, np.ndarray) and value.ndim else float(value)

    return received


def sunk(age: Any) -> Any:
    """The residual of an asset nothing is received for (a built machine room at the horizon)."""
    return 0.0 * np.asarray(age, dtype=float) if isinstance(age, np.ndarray) and age.ndim else 0.0


def _zero(r: Range) -> bool:
    return all(np.all(np.asarray(x) == 0) for x in r)
