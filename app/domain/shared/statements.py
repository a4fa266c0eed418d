"""The sentences insights answer with: break-even points, payback and what would change the answer,
in the words a team lead reads."""

from __future__ import annotations

from collections.abc import Mapping

from app.core.insights import Crossing, Payback
from app.core.text import Msg, msg


def break_even_sentence(c: Crossing, gpus: int) -> Msg | None:
    """The recommendation's one line on owning versus renting on demand (``c.first`` owns)."""
    u, cheaper = c.utilization["expected"], c.cheaper_above["expected"]
    n = f"{gpus:,}"
    if u is not None and cheaper == c.first:
        at = f"{u * 100:.0f}%"
        text = f"With {n} GPUs, owning becomes cheaper than renting on demand above {at} utilization."
        return msg("statement.break_even_above", text, gpus=n, utilization=at)
    if u is None and cheaper == c.second:
        text = f"With {n} GPUs, owning costs more than renting on demand at any utilization."
        return msg("statement.break_even_never", text, gpus=n)
    if u is None and cheaper == c.first:
        text = f"With {n} GPUs, owning costs less than renting on demand at any utilization."
        return msg("statement.break_even_always", text, gpus=n)
    return None


def crossing_statement(c: Crossing) -> str:
    u, above = c.utilization["expected"], c.cheaper_above["expected"]
    if u is not None and above is not None:
        below = c.second if above == c.first else c.first
        return f"{above} is cheaper per useful GPU-hour above {u * 100:.0f}% utilization, {below} below it."
    if u is not None:
        return f"From {u * 100:.0f}% utilization on, both cost the same per useful GPU-hour (every hour is paid)."
    if above is not None:
        return f"{above} is cheaper per useful GPU-hour at every utilization."
    return "Both cost the same per useful GPU-hour at every utilization."


def cheapest_statement(gpus: Mapping[str, int | None], utilization: float) -> str:
    expected = gpus["expected"]
    if expected is None:
        return f"At {utilization * 100:.0f}% utilization owning is not the cheapest option up to 32,768 GPUs."
    return f"At {utilization * 100:.0f}% utilization owning is the cheapest option from {expected:,} GPUs."


def payback_statement(p: Payback, horizon_years: float) -> str:
    m = p.months["expected"]
    if m is None:
        return f"Against {p.alternative}, an owned cluster never pays for itself."
    if not p.within_horizon["expected"]:
        return (
            f"Against {p.alternative}, an owned cluster pays for itself after {m:,.0f} months: never within "
            f"the {horizon_years:g}-year horizon."
        )
    return f"Against {p.alternative}, an owned cluster pays for itself after {m:,.0f} months."


def weight_change_statement(shift: float, dimension: str, option: str) -> str:
    return f"Moving {shift * 100:.1f}% of the weight onto {dimension} makes {option} the recommendation."


def utilization_change_statement(utilization: float, now: float, option: str) -> str:
    return f"At {utilization * 100:.0f}% utilization (now {now * 100:.0f}%), {option} becomes the recommendation."
