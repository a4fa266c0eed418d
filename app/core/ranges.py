"""Ranges: every figure the service computes is ``{low, expected, high}``, never a false point."""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np

Number = int | float


class Range(tuple[float, float, float]):
    """A non-negative quantity known only within bounds, with a central estimate.

    Arithmetic keeps the bounds honest for the non-negative quantities this service deals in:
    sums and products combine like ends (low with low), a quotient divides the low end by the
    other's high end. ``expected`` is computed from the other ranges' ``expected`` values. A range
    read from the knowledge base (``Range.triangular``) has the mean of its triangular distribution as
    ``expected``, so a result's ``expected`` is its formula at the inputs' means: exactly the mean of a
    result linear in its inputs, and the mean up to Jensen's gap otherwise (docs/methodology.md, "Ranges").

    A tuple for speed (the model builds thousands per request): ``Range.of`` checks the order of
    figures that come from data; the operations below keep it by construction.

    The ends may also be NumPy arrays of Monte Carlo draws (all three the same array): every
    operation below then computes all draws at once (``app.engine.insights.uncertainty``).
    """

    __slots__ = ()
    #: NumPy must leave ``array op Range`` to Range's reflected operators, not broadcast the tuple
    __array_ufunc__ = None

    def __new__(cls, low: float, expected: float, high: float) -> Range:
        return tuple.__new__(cls, (low, expected, high))

    low: float = property(itemgetter(0))  # type: ignore[assignment]
    expected: float = property(itemgetter(1))  # type: ignore[assignment]
    high: float = property(itemgetter(2))  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Range(low={self.low!r}, expected={self.expected!r}, high={self.high!r})"

    @classmethod
    def elementwise(cls, low: Any, expected: Any, high: Any) -> Range:
        """A range whose ends are NumPy arrays — one element per profile of a batch, or per Monte Carlo
        draw (the array contract of ``app.host.hookspecs``)."""
        return cls(low, expected, high)

    @classmethod
    def point(cls, value: Number | np.ndarray) -> Range:
        v: Any = value if isinstance(value, np.ndarray) else float(value)
        return cls(v, v, v)

    @classmethod
    def of(cls, low: Number, high: Number, expected: Number | None = None) -> Range:
        lo, hi = float(low), float(high)
        ex = (lo + hi) / 2 if expected is None else float(expected)
        if not (lo <= ex <= hi):
            raise ValueError(f"range out of order: {lo} <= {ex} <= {hi}")
        return cls(lo, ex, hi)

    @classmethod
    def triangular(cls, low: Number, mode: Number, high: Number) -> Range:
        """The range of a triangular distribution ``(low, mode, high)`` — a knowledge row's figures, the
        source's most likely value as ``mode`` — with its mean as ``expected``: ``(low + mode + high) ÷ 3``.

        The mean is what the Monte Carlo draws average to (``app.engine.insights.uncertainty`` samples
        the same triangle), so a headline figure and the confidence block read one distribution."""
        lo, mo, hi = float(low), float(mode), float(high)
        if not (lo <= mo <= hi):
            raise ValueError(f"range out of order: {lo} <= {mo} <= {hi}")
        if lo == hi:
            return cls(lo, lo, lo)
        return cls(lo, min(max(triangular_mean(lo, mo, hi), lo), hi), hi)

    @property
    def is_point(self) -> bool:
        return self.low == self.high

    # The operators unpack ends directly instead of going through ``_as_range`` and the properties: the
    # same float operations in the same order, without a Range per scalar operand. Where all three ends
    # of both operands are one object (a point, or one array of Monte Carlo draws), the three results are
    # one too: it is computed once ("one pass where ends coincide").

    def __add__(self, other: Range | Number) -> Range:  # type: ignore[override]
        a, b, c = _ends(other)
        lo, ex, hi = self
        if lo is ex is hi and a is b is c:
            v = lo + a
            return tuple.__new__(Range, (v, v, v))
        return tuple.__new__(Range, (lo + a, ex + b, hi + c))

    __radd__ = __add__

    def __mul__(self, other: Range | Number) -> Range:  # type: ignore[override]
        a, b, c = _ends(other)
        lo, ex, hi = self
        if lo is ex is hi and a is b is c:
            v = lo * a
            return tuple.__new__(Range, (v, v, v))
        return tuple.__new__(Range, (lo * a, ex * b, hi * c))

    __rmul__ = __mul__  # type: ignore[assignment]

    def __truediv__(self, other: Range | Number) -> Range:
        a, b, c = _ends(other)
        if np.any(a <= 0) if isinstance(a, np.ndarray) else a <= 0:
            raise ZeroDivisionError("division by a range that reaches zero")
        lo, ex, hi = self
        if lo is ex is hi and a is b is c:
            v = lo / a
            return tuple.__new__(Range, (v, v, v))
        return tuple.__new__(Range, (lo / c, ex / b, hi / a))

    def __rtruediv__(self, other: Number) -> Range:
        return _as_range(other) / self

    def complement(self) -> Range:
        """``1 - self`` for a fraction: the ends swap."""
        lo, ex, hi = self
        if lo is ex is hi:
            v = 1 - lo
            return tuple.__new__(Range, (v, v, v))
        return tuple.__new__(Range, (1 - hi, 1 - ex, 1 - lo))

    def cap(self, ceiling: Number) -> Range:
        return self._at_each_end(_min, ceiling if isinstance(ceiling, np.ndarray) else float(ceiling))

    def floor_at(self, floor: Number) -> Range:
        return self._at_each_end(_max, floor if isinstance(floor, np.ndarray) else float(floor))

    def ceil(self) -> Range:
        return self._at_each_end(_ceil)

    def _at_each_end(self, fn: Callable[..., Any], *args: Any) -> Range:
        """``fn(end, *args)`` at each end, in order (``fn`` keeps the order: it is monotone increasing)."""
        lo, ex, hi = self
        if lo is ex is hi:
            v = fn(lo, *args)
            return tuple.__new__(Range, (v, v, v))
        return tuple.__new__(Range, (fn(lo, *args), fn(ex, *args), fn(hi, *args)))


def triangular_mean(low: float, mode: float, high: float) -> float:
    """The mean of the triangular distribution ``(low, mode, high)``: ``(low + mode + high) ÷ 3``, computed
    as ``mode + (low + high − 2 × mode) ÷ 3`` so that a symmetric triangle's mean is its mode exactly (no
    rounding of the sum: 0.25 / 0.4 / 0.55 reads 0.4, not 0.4000000000000001)."""
    if math.isclose(low + high, 2 * mode, rel_tol=1e-12, abs_tol=1e-300):  # symmetric (up to rounding)
        return mode
    return mode + (low + high - 2 * mode) / 3


def triangular_mode(low: float, mean: float, high: float) -> float:
    """The mode of the triangular distribution with these ends and ``mean``: ``3 × mean − low − high``,
    kept within the ends (a figure rounded on its way may land a hair outside them)."""
    return min(max(3 * mean - low - high, low), high)


def _min(a: Any, b: Any) -> Any:
    return np.minimum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b)


def _ceil(a: Any) -> Any:
    return np.ceil(a) if isinstance(a, np.ndarray) else math.ceil(a)


def ceil_number(value: Any) -> Any:
    """``math.ceil`` for a number, element-wise for an array of profiles (batch evaluation)."""
    return _ceil(value)


def _ends(value: Range | Number) -> tuple[Any, Any, Any]:
    """The three ends of a Range, or a number's (as ``Range.point`` makes them) three times."""
    if isinstance(value, Range):
        return value
    v = value if isinstance(value, np.ndarray) else float(value)
    return v, v, v


def holds_anywhere(value: Any) -> bool:
    """``bool(np.any(value))``: for a plain bool without NumPy's dispatch, for an array of a batch's
    profiles or of Monte Carlo draws whether any element holds."""
    return bool(value.any()) if isinstance(value, np.ndarray) else bool(value)


def _as_range(value: Range | Number) -> Range:
    return value if isinstance(value, Range) else Range.point(value)
