"""Scores and ranking (docs/methodology.md, "Scores"): one definition, used by the single evaluation
(``app.engine.decision``), the vectorised batch (``app.engine.batch``) and the Monte Carlo runs
(``app.engine.insights.uncertainty``).

Every function takes plain numbers or NumPy arrays (element-wise, one element per profile or per
draw) and gives the same figures either way.

Each dimension scores 0–100, monotone in its measure:
- cost: ``100 × cheapest ÷ own`` cost per effective GPU-hour (expected) among the assessed options;
- efficiency: ``100 × productive_share``; stability: ``100 × goodput``;
- usability: ``100 × model_focus_share``.
The total is the weighted mean plus the fit points of the scenario rules that hold, clamped to
0–100 for display. Feasible options rank first, then by the unclamped total, then by option key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from app.core.vocab import DIMENSIONS

#: subtracted from an infeasible option's total so that every feasible option ranks above it
#: (totals are weighted 0–100 scores plus fit points: far below this)
INFEASIBLE_OFFSET = 1e6


def normalise_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Scale non-negative weights to sum to 1 (the edge has already refused all-zero weights)."""
    total = sum(weights.get(d, 0.0) for d in DIMENSIONS)
    if total <= 0:
        raise ValueError("weights must not all be zero")
    return {d: weights.get(d, 0.0) / total for d in DIMENSIONS}


def cost_score(own: Any, cheapest: Any) -> Any:
    """``100 × cheapest ÷ own``; 100 when the option costs nothing per useful GPU-hour."""
    if isinstance(own, np.ndarray) or isinstance(cheapest, np.ndarray):
        positive = np.asarray(own) > 0
        return np.where(positive, 100.0 * cheapest / np.where(positive, own, 1.0), 100.0)
    return 100.0 * cheapest / own if own > 0 else 100.0


def dimension_scores(*, per_hour: Any, cheapest: Any, productive: Any, goodput: Any, focus: Any) -> dict[str, Any]:
    """The four dimension scores of one option from its measures (expected values)."""
    return {
        "cost": cost_score(per_hour, cheapest),
        "efficiency": 100.0 * productive,
        "stability": 100.0 * goodput,
        "usability": 100.0 * focus,
    }


def total(weights: Mapping[str, float], scores: Mapping[str, Any], fit: Any) -> Any:
    """The unclamped total: ``Σ weight_d × score_d + fit`` (weights already normalised)."""
    return sum(weights[d] * scores[d] for d in DIMENSIONS) + fit


def order_value(feasible: Any, raw: Any) -> Any:
    """What ranks an option: its total, far lower when it is infeasible."""
    if isinstance(feasible, np.ndarray) or isinstance(raw, np.ndarray):
        return raw - np.where(feasible, 0.0, INFEASIBLE_OFFSET)
    return raw if feasible else raw - INFEASIBLE_OFFSET


def spread(scores: Mapping[str, Any], fit: Any) -> Any:
    """What breaks a tie of totals: the unweighted sum of the dimension scores, plus the fit points."""
    return sum(scores[d] for d in DIMENSIONS) + fit


def ranked(rows: Sequence[tuple[str, bool, float, float]]) -> list[int]:
    """Indices of ``(option, feasible, raw total, spread)`` rows, best first: feasible before
    infeasible, then the higher total, then — on a tie — the higher ``spread`` (so that an option
    better somewhere and worse nowhere ranks first even where that dimension weighs nothing), then
    the option key."""
    return sorted(range(len(rows)), key=lambda i: (-order_value(rows[i][1], rows[i][2]), -rows[i][3], rows[i][0]))


def ranked_many(options: Sequence[str], feasible: np.ndarray, raw: np.ndarray, spreads: np.ndarray) -> np.ndarray:
    """``ranked`` for many profiles at once: ``feasible``, ``raw`` and ``spreads`` are arrays of options
    (rows, sorted by key) × profiles (columns); column ``i`` of the answer is profile i's option
    indices, best first. The same keys as ``ranked``, compared as it compares them, ties included; a
    profile with a NaN among its keys (which ``sorted`` does not order consistently) is ranked by
    ``ranked`` itself."""
    assert list(options) == sorted(options), "options must be sorted by key"
    value = np.asarray(order_value(feasible, raw), dtype=float)
    index = np.broadcast_to(np.arange(len(options))[:, None], value.shape)
    order: np.ndarray = np.lexsort((index, -spreads, -value), axis=0)
    with np.errstate(invalid="ignore"):
        odd = np.isnan(value).any(axis=0) | np.isnan(spreads).any(axis=0)
    for i in np.flatnonzero(odd).tolist():
        rows = [(o, bool(feasible[j, i]), float(raw[j, i]), float(spreads[j, i])) for j, o in enumerate(options)]
        order[:, i] = ranked(rows)
    return order


def first(options: Sequence[str], feasible: Sequence[Any], raw: Sequence[Any]) -> Any:
    """Element-wise index (into ``options``, sorted by key) of the option that ranks first, as
    ``ranked`` would order them: ties go to the earlier key."""
    values = np.stack([np.asarray(order_value(f, r), dtype=float) for f, r in zip(feasible, raw, strict=True)])
    assert list(options) == sorted(options), "options must be sorted by key"
    return np.argmax(values, axis=0)


def shown(value: float) -> float:
    """A score as answers show it: clamped to 0–100, one decimal."""
    return round(float(min(100.0, max(0.0, value))), 1)
