"""``range_read`` rounds a range as answers show it; a range whose ends are one number is rounded once,
with the same figures as rounding each end (signed zeros, NaN and NumPy scalars included)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from app.core.ranges import Range
from app.domain.shared.convert import range_read


def _each_end(r: Range, digits: int) -> tuple[float, ...]:
    return tuple(round(float(x), digits) for x in r)


def _same(a: float, b: float) -> bool:
    return (a != a and b != b) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))


@pytest.mark.parametrize("digits", [2, 3, 4])
def test_range_read_shows_each_end_rounded(digits: int) -> None:
    rnd = random.Random(7)
    figures: list[float] = [0.0, -0.0, 0.005, 0.015, 2.675, 1e-9, -1e-9, 1e300, math.nan, math.inf, 12_345.675]
    figures += [np.float64(3.14159), np.float64(-0.0)]
    figures += [rnd.uniform(-1e6, 1e6) for _ in range(300)] + [round(rnd.uniform(0, 100), 3) for _ in range(300)]
    for x in figures:
        for other in (x, 0.0, -0.0, x * 1.5):
            for r in (Range(x, x, x), Range(other, x, x), Range(x, x, other), Range(other, other, other)):
                shown = range_read(r, digits)
                got = (shown.low, shown.expected, shown.high)
                assert all(_same(a, b) for a, b in zip(got, _each_end(r, digits), strict=True)), (r, got)
