"""From the core's values to the answers' shapes: rounding of ranges, and the confidence block."""

from __future__ import annotations

from collections.abc import Mapping

from app.core.insights import Uncertainty
from app.core.ranges import Range
from app.domain.shared.schemas import ConfidenceRead, OptionUncertaintyRead, Percentiles, RangeRead

DISTRIBUTION = "triangular(low, mode=expected, high) per knowledge-base range, independent draws"


def range_read(r: Range, digits: int = 2) -> RangeRead:
    """A range as answers show it: money and hours to 2 decimals, shares and unit prices to 4."""
    return RangeRead(low=round(r.low, digits), expected=round(r.expected, digits), high=round(r.high, digits))


def _percentiles(q: Mapping[str, float]) -> Percentiles:
    return Percentiles(p10=q["p10"], p50=q["p50"], p90=q["p90"])


def confidence_read(u: Uncertainty) -> ConfidenceRead:
    """A Monte Carlo run as the ``confidence`` block of a recommendation (and of ``/v1/uncertainty``)."""
    return ConfidenceRead(
        draws=u.draws,
        seed=u.seed,
        distribution=DISTRIBUTION,
        options={
            o: OptionUncertaintyRead(
                annual_cost=_percentiles(x.annual_cost),
                total_cost=_percentiles(x.total_cost),
                probability_first=x.probability_first,
            )
            for o, x in u.options.items()
        },
        errors=dict(u.errors),
    )
