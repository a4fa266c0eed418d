"""The SDK's pricing blocks: formulas several options need, written once (docs/plugins.md, "Pricing
blocks"; docs/methodology.md names each).

- ``held_hours``: GPU-hours paid for on capacity held while it is used (rented instances on demand,
  a platform billed for a pool, an own cluster's bridge until it is installed);
- ``billed_at``: GPU-hours a platform bills under its billing rule (job seconds, a held cluster, a pool);
- ``whole_terms``: the years paid for when capacity is committed in whole terms (reservations,
  subscriptions, capacity blocks);
- ``quote_cost``: a quote's ``Cost`` (cost per useful GPU-hour over the hours the compute is used);
- ``discounted``: offers priced as a discount off a pay-as-used offer (reservations, savings plans,
  committed use, a queued start);
- ``own`` (``app.core.owning``): capital flows of owning — bought, replaced, resold;
- ``app.core.cluster``: an owned cluster's bill of materials.

``gt`` and ``holds`` state a hard constraint per profile (a bool, or an array over a batch).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import numpy as np

from app.core import model
from app.core.capital import annuity
from app.core.columns import ALL, Num, gt, holds, minimum
from app.core.knowledge import ANY, Knowledge
from app.core.model import ZERO
from app.core.offers import Offer, price_row
from app.core.owning import own
from app.core.quotes import Line
from app.core.ranges import Range, ceil_number
from app.core.types import Cost, Profile
from app.core.vocab import BILLINGS

JOB_SECONDS, HELD_CLUSTER, POOLED = BILLINGS

__all__ = [
    "HELD_CLUSTER",
    "JOB_SECONDS",
    "POOLED",
    "Line",
    "annuity",
    "billed_at",
    "discounted",
    "gt",
    "held_at",
    "held_hours",
    "holds",
    "own",
    "quote_cost",
    "whole_terms",
]


def held_at(e: int, useful: Num, held_utilization: Range, ceiling: Num) -> Num:
    """GPU-hours paid for capacity held while it is used, at end ``e``: ``min(GPUs × 8760, useful
    GPU-hours ÷ the utilization achieved on held capacity)`` — ``ceiling`` is every hour of the GPUs held."""
    return minimum(useful / held_utilization[2 - e], ceiling)


def billed_at(
    e: int, billing: str, useful: Num, ceiling: Num, *, utilization: Range, startup_share: Range | None = None
) -> Num:
    """GPU-hours a year a platform bills at end ``e`` for ``useful`` ones under its billing rule
    (``vocab.BILLINGS``), never more than every hour of the GPUs (``ceiling``): ``job_seconds`` bills
    the useful hours plus one start-up per training run (``startup_share``: the start-up's share of a
    run); a ``held_cluster`` or ``pooled`` platform bills ``held_at`` the utilization it achieves on
    what it holds (``utilization``: the team's on a held cluster, the pool's)."""
    if billing == JOB_SECONDS:
        assert startup_share is not None, "job-second billing needs the start-up's share of a run"
        return minimum((startup_share[e] + 1.0) * useful, ceiling)
    return held_at(e, useful, utilization, ceiling)


def held_hours(useful: Any, held_utilization: Range, ceiling: Any) -> Range:
    """``held_at`` at every end."""
    ceiling = ceiling if isinstance(ceiling, np.ndarray) else float(ceiling)
    return Range.elementwise(*(held_at(e, useful, held_utilization, ceiling) for e in ALL))


def whole_terms(horizon_years: Num, term_years: float) -> Num:
    """Years paid for a commitment sold in whole terms covering the horizon (a 2-year horizon on a
    3-year reservation pays three years)."""
    years: Num = ceil_number(horizon_years / term_years - 1e-9) * term_years
    return years


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


def discounted(
    knowledge: Knowledge, found: list[Offer], *, option: str, base_plan: str, currency: str, as_of: dt.date
) -> list[Offer]:
    """The offers the price books price only as a discount off a pay-as-used offer (a reservation, a
    savings plan, a committed-use or a queued start): for each offer of ``base_plan`` in ``found``, each
    of its provider's ``reservation_discount`` rows that applies to it — its subject or any, its GPU model
    or any, a region it lies in — and names a plan the provider does not quote for it itself. The price
    is the base's times ``1 − discount``; a discount row's lead time (a queue) becomes the offer's."""
    quoted = {(o.row.provider, o.row.subject, o.row.region, o.plan) for o in found}
    rows = knowledge.rows(option, "reservation_discount", as_of)
    derived: list[Offer] = []
    for base in [o for o in found if o.plan == base_plan]:
        r = base.row
        for d in rows:
            if not (
                d.provider == r.provider
                and d.subject in (r.subject, ANY)
                and d.gpu_model in (r.gpu_model, ANY)
                and knowledge.within(r.region, d.region)
            ):
                continue
            if (r.provider, r.subject, r.region, d.plan) in quoted:
                continue  # the provider quotes that plan itself
            offer = price_row(
                knowledge, r, currency, as_of, plan=d.plan, factor=d.value.complement(), extra_refs=(d.ref,)
            )
            if offer is not None:
                derived.append(dataclasses.replace(offer, lead_time_days=d.lead_time_days))
    return derived


def held_share(assumed: Range, given: Any) -> Range:
    """The share of held hours a team turns into useful work: the profile's ``held_share`` where it
    gives one (per profile over a batch, where an absent value is NaN), else ``assumed`` (the knowledge
    base's ``held_utilization``: the article's 50 %, "如果利用率只有50%，有效算力成本翻倍")."""
    if given is None:
        return assumed
    if isinstance(given, np.ndarray):
        absent = np.isnan(given)
        if bool(np.all(absent)):
            return assumed
        return Range.elementwise(*(np.where(absent, assumed[e], given) for e in range(3)))
    return Range.point(float(given))
