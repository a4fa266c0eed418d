"""Numbers in the words a team lead reads."""

from __future__ import annotations

from app.core.ranges import Range


def num(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def money(value: float, currency: str) -> str:
    return f"{value:,.0f} {currency}"


def money_range(r: Range, currency: str) -> str:
    if r.is_point or round(r.low, -3) == round(r.high, -3):
        return money(r.expected, currency)
    return f"{r.low:,.0f}–{r.high:,.0f} {currency} (expected {r.expected:,.0f})"


def pct(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def span(r: Range, unit: str, digits: int = 0) -> str:
    if r.is_point:
        return f"{r.expected:,.{digits}f} {unit}"
    return f"{r.low:,.{digits}f}–{r.high:,.{digits}f} {unit}"
