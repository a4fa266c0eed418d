"""The sentences insights answer with: break-even points, payback and what would change the answer,
in the words a team lead reads."""

from __future__ import annotations

from collections.abc import Mapping

from app.core.text import Msg, msg, option_ref
from app.engine.insights import Crossing, Payback


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


def _ref(option: str) -> Msg:
    """How a sentence names an option, or an option on a plan (``rented_gpu_instances:on_demand``): by
    its name in the request's language (``app.core.text.option_ref``)."""
    return option_ref(option)


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def crossing_statement(c: Crossing) -> Msg:
    u, above = c.utilization["expected"], c.cheaper_above["expected"]
    if u is not None and above is not None:
        below = c.second if above == c.first else c.first
        text = f"{_ref(above)} is cheaper per useful GPU-hour above {_pct(u)} utilization, {_ref(below)} below it."
        return msg("statement.crossing", text, above=_ref(above), utilization=_pct(u), below=_ref(below))
    if u is not None:
        text = f"From {_pct(u)} utilization on, both cost the same per useful GPU-hour (every hour is paid)."
        return msg("statement.crossing_same_from", text, utilization=_pct(u))
    if above is not None:
        other = c.second if above == c.first else c.first
        return msg(
            "statement.crossing_always",
            f"{_ref(above)} is cheaper per useful GPU-hour than {_ref(other)} at every utilization.",
            option=_ref(above),
            other=_ref(other),
        )
    return msg("statement.crossing_never", "Both cost the same per useful GPU-hour at every utilization.")


def cheapest_statement(gpus: Mapping[str, int | None], utilization: float) -> Msg:
    expected = gpus["expected"]
    if expected is None:
        text = f"At {_pct(utilization)} utilization owning is not the cheapest option up to 32,768 GPUs."
        return msg("statement.own_never_cheapest", text, utilization=_pct(utilization), gpus="32,768")
    text = f"At {_pct(utilization)} utilization owning is the cheapest option from {expected:,} GPUs."
    return msg("statement.own_cheapest_from", text, utilization=_pct(utilization), gpus=f"{expected:,}")


def payback_statement(p: Payback, horizon_years: float) -> Msg:
    m = p.months["expected"]
    if m is None:
        text = f"Against {_ref(p.alternative)}, an owned cluster never pays for itself."
        return msg("statement.payback_never", text, alternative=_ref(p.alternative))
    months = f"{m:,.0f}"
    if not p.within_horizon["expected"]:
        text = (
            f"Against {_ref(p.alternative)}, an owned cluster pays for itself after {months} months: never within "
            f"the {horizon_years:g}-year horizon."
        )
        return msg(
            "statement.payback_beyond",
            text,
            alternative=_ref(p.alternative),
            months=months,
            horizon=f"{horizon_years:g}",
        )
    text = f"Against {_ref(p.alternative)}, an owned cluster pays for itself after {months} months."
    return msg("statement.payback", text, alternative=_ref(p.alternative), months=months)


def weight_change_statement(shift: float, dimension: str, option: str) -> Msg:
    share = f"{shift * 100:.1f}%"
    text = f"Moving {share} of the weight onto {dimension} makes {_ref(option)} the recommendation."
    return msg(
        "statement.weight_change",
        text,
        share=share,
        dimension=msg(f"dimension.{dimension}", dimension),
        option=_ref(option),
    )


def utilization_change_statement(utilization: float, now: float, option: str) -> Msg:
    text = f"At {_pct(utilization)} utilization (now {_pct(now)}), {_ref(option)} becomes the recommendation."
    return msg("statement.utilization_change", text, utilization=_pct(utilization), now=_pct(now), option=_ref(option))
