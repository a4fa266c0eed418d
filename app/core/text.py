"""Numbers in the words a team lead reads."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.core.ranges import Range


def _scalar(value: Any) -> float:
    """Monte Carlo runs pass arrays of draws through the plugins: their sentences use the mean."""
    return float(np.mean(value)) if isinstance(value, np.ndarray) else float(value)


def _scalar_range(r: Range) -> Range:
    return r if not isinstance(r.low, np.ndarray) else Range.point(_scalar(r.expected))


def num(value: float, digits: int = 0) -> str:
    return f"{_scalar(value):,.{digits}f}"


def money(value: float, currency: str) -> str:
    return f"{_scalar(value):,.0f} {currency}"


def money_range(r: Range, currency: str) -> str:
    r = _scalar_range(r)
    if r.is_point or round(r.low, -3) == round(r.high, -3):
        return money(r.expected, currency)
    return f"{r.low:,.0f}–{r.high:,.0f} {currency} (expected {r.expected:,.0f})"


def pct(fraction: float) -> str:
    return f"{_scalar(fraction) * 100:.0f}%"


def span(r: Range, unit: str, digits: int = 0) -> str:
    r = _scalar_range(r)
    if r.is_point:
        return f"{r.expected:,.{digits}f} {unit}"
    return f"{r.low:,.{digits}f}–{r.high:,.{digits}f} {unit}"
