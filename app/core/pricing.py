"""The SDK's pricing blocks: formulas several options need, written once (docs/plugins.md, "Pricing
blocks"; docs/methodology.md names each).

- ``held_hours``: GPU-hours paid for on capacity held while it is used (rented instances on demand,
  a platform billed for a pool, an own cluster's bridge until it is installed);
- ``whole_terms``: the years paid for when capacity is committed in whole terms (reservations,
  subscriptions, capacity blocks);
- ``quote_cost``: a quote's ``Cost`` (cost per useful GPU-hour over the hours the compute is used);
- ``own`` (``app.core.capital``): capital flows of owning — bought, replaced, resold;
- ``app.core.cluster``: an owned cluster's bill of materials.

``gt`` and ``holds`` state a hard constraint per profile (a bool, or an array over a batch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from app.core import model
from app.core.capital import annuity, own
from app.core.model import ZERO
from app.core.ranges import Range, ceil_number
from app.core.types import Cost, Profile

__all__ = ["Line", "annuity", "gt", "held_hours", "holds", "own", "quote_cost", "whole_terms"]

#: a line of a quote: (key, annual, upfront, total)
Line = tuple[str, Range, Range, Range]


def held_hours(useful: Any, held_utilization: Range, ceiling: Any) -> Range:
    """GPU-hours paid for capacity held while it is used: ``min(GPUs × 8760, useful GPU-hours ÷ the
    utilization achieved on held capacity)`` — ``ceiling`` is every hour of the GPUs held."""
    paid: Range = (useful / held_utilization).cap(ceiling)
    return paid


def whole_terms(horizon_years: Any, term_years: float) -> Any:
    """Years paid for a commitment sold in whole terms covering the horizon (a 2-year horizon on a
    3-year reservation pays three years)."""
    return ceil_number(horizon_years / term_years - 1e-9) * term_years


def gt(a: Any, b: Any) -> Any:
    """``a > b``: a bool, or element-wise over a batch or Monte Carlo draws."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a) > np.asarray(b)
    return bool(a > b)


def holds(where: Any) -> bool:
    """Whether a constraint holds anywhere (a bool, or any element of an array)."""
    return bool(where.any()) if isinstance(where, np.ndarray) else bool(where)


def quote_cost(
    profile: Profile,
    *,
    annual: Range,
    total: Range,
    paid: Range,
    committed: bool,
    upfront: Range = ZERO,
    npv: Range | None = None,
    equivalent_annual: Range | None = None,
    operating_years: Any = None,
) -> Cost:
    """``app.core.model.cost`` without a breakdown (a quote's lines are numbers; labels come later)."""
    return model.cost(
        profile,
        annual=annual,
        total=total,
        paid=paid,
        committed=committed,
        breakdown=(),
        upfront=upfront,
        npv=npv,
        equivalent_annual=equivalent_annual,
        operating_years=operating_years,
    )
