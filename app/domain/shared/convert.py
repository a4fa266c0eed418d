"""From the core's values to the answers' shapes: rounding of ranges, and the confidence block."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.core.errors import MissingKnowledge
from app.core.knowledge import Knowledge
from app.core.model import METHODOLOGY_VERSION
from app.core.ranges import Range
from app.core.types import Assessment, Cost, LineItem, OfferInfo, Profile
from app.domain.shared.schemas import (
    ConfidenceRead,
    CostRead,
    LineItemRead,
    OfferRead,
    OptionUncertaintyRead,
    Percentiles,
    RangeRead,
    SourceRead,
)
from app.engine import throughput
from app.engine.insights import Uncertainty
from app.i18n import DEFAULT_LANG, Lang, render

DISTRIBUTION = "triangular(low, mode, high) per knowledge-base range, mean = expected, independent draws"


def range_read(r: Range, digits: int = 2) -> RangeRead:
    """A range as answers show it: money and hours to 2 decimals, shares and unit prices to 4 (a range
    whose ends are one number away from zero rounded once: the same figures, a third of the work)."""
    low, expected, high = r
    if low == expected == high and expected:  # not at zero, where -0.0 and 0.0 are equal but shown apart
        shown = round(float(expected), digits)
        return RangeRead(low=shown, expected=shown, high=shown)
    return RangeRead(
        low=round(float(low), digits), expected=round(float(expected), digits), high=round(float(high), digits)
    )


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
        error_codes=dict(u.error_codes),
    )


def offer_read(o: OfferInfo, currency: str, lang: Lang = DEFAULT_LANG) -> OfferRead:
    """The offer an assessment priced, in the answer's currency, named in its language."""
    return OfferRead(
        provider=o.provider,
        region=o.region,
        gpu_model=o.gpu_model,
        subject=o.subject,
        plan=o.plan,
        variant=o.variant,
        unit=o.unit,
        gpus_per_unit=o.gpus_per_unit,
        price=range_read(o.price, 4),
        currency=currency,
        quoted_price=range_read(o.quoted_price, 4),
        quoted_currency=o.quoted_currency,
        exchange_rate=None if o.exchange_rate is None else round(o.exchange_rate, 6),
        valid_from=o.valid_from,
        residency=o.residency,
        source=o.source,
        source_quality=o.source_quality,
        price_book="org" if o.price_book == "org" else "list",
        name=None if o.name is None else render(o.name, lang),
    )


def line_read(li: LineItem, horizon_years: float, lang: Lang = DEFAULT_LANG) -> LineItemRead:
    return LineItemRead(
        key=li.key,
        label=render(li.label, lang),
        annual=range_read(li.annual),
        upfront=range_read(li.upfront),
        basis=render(li.basis, lang),
        sources=[SourceRead(table=r.table, ref=r.ref, source=r.source, quality=r.quality) for r in li.sources],
        total=range_read(li.total if li.total is not None else li.annual * horizon_years),
    )


def optional_range(r: Range | None, digits: int = 2) -> RangeRead | None:
    return None if r is None else range_read(r, digits)


def pflop_hour_read(
    kb: Knowledge, per_useful_gpu_hour: Range, gpu_model: str | None, precision: str
) -> RangeRead | None:
    """The cost per useful PFLOP-hour of an offer on ``gpu_model`` (README "Cost per unit of work"):
    its cost per useful GPU-hour over the PFLOPS a GPU of that model sustains at ``precision`` (dense peak ×
    MFU), the low cost over the high MFU at the low end, to 4 decimals as the cost per GPU-hour. None where
    the GPU model is not named (the source article's reference server), has no dense peak at ``precision``,
    or the knowledge version has no MFU for it."""
    if gpu_model is None:
        return None
    try:
        work = throughput.throughput(kb, gpu_model, precision)
    except MissingKnowledge:
        return None
    return range_read(throughput.cost_per_pflop_hour(per_useful_gpu_hour, work), 4)


def option_pflop_hour_read(kb: Knowledge, a: Assessment, profile: Profile) -> RangeRead | None:
    """An option's cost per useful PFLOP-hour at the profile's precision: on its chosen offer's GPU model; on
    a demand over time (no one offer: the portfolio's segments) on the demand's GPU model, the model its useful
    GPU-hours are counted in."""
    gpu_model = profile.gpu_model if a.offer is None else a.offer.gpu_model
    return pflop_hour_read(kb, a.cost.per_useful_gpu_hour, gpu_model, profile.precision)


def cost_read(c: Cost) -> CostRead:
    return CostRead(
        annual_cost=range_read(c.annual),
        total_cost=range_read(c.total),
        upfront_cost=range_read(c.upfront),
        cost_per_useful_gpu_hour=range_read(c.per_useful_gpu_hour, 4),
        npv_cost=optional_range(c.npv),
        equivalent_annual_cost=optional_range(c.equivalent_annual),
        cost_per_effective_gpu_hour=optional_range(c.per_effective_gpu_hour, 4),
    )


def profile_head(kb: Knowledge, profile: Profile) -> dict[str, Any]:
    """The fields an answer about one profile starts with: what it was computed from, and for what."""
    return {
        "knowledge_version": kb.version,
        "methodology_version": METHODOLOGY_VERSION,
        "currency": profile.currency,
        "as_of": profile.as_of,
        "gpus": profile.gpus,
        "utilization": profile.utilization,
        "horizon_years": profile.horizon_years,
        "rental_plan": profile.rental_plan,
    }
