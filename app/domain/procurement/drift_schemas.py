"""API v1 schemas of a stored recommendation's drift and of the list of stored recommendations."""

from __future__ import annotations

import datetime as dt
from typing import Literal

import msgspec

from app.domain.shared.schemas import RangeRead, StoredList

#: why an offer the stored answer priced is gone now (``app.domain.procurement.drift``)
GoneWhy = Literal["unpriced", "infeasible", "replaced"]


class DriftSideRead(msgspec.Struct):
    """One side of a drift: the stored answer, or the same request priced now."""

    knowledge_version: str
    recommended_option: str | None
    #: each option's total cost over the horizon, in the answer's currency (null: the option had no figures)
    costs: dict[str, RangeRead | None]
    #: the day the side was priced as of (the stored request's, else the day it was answered / today)
    as_of: dt.date | None = None
    #: each option's rank (null: not ranked on this side)
    ranks: dict[str, int | None] = msgspec.field(default_factory=dict)


class RankChangeRead(msgspec.Struct):
    option: str
    #: null: the option was not ranked on that side (not loaded then, or not now)
    stored_rank: int | None
    now_rank: int | None


class CostChangeRead(msgspec.Struct):
    """An option's expected total cost, stored and now, and the change as a fraction of the stored one."""

    stored: float | None
    now: float | None
    #: (now − stored) / stored; null when either is missing or the stored cost is 0
    change: float | None


class OfferGoneRead(msgspec.Struct):
    """An offer the stored answer priced for ``option`` that prices it no more."""

    option: str
    provider: str
    region: str
    subject: str
    plan: str
    variant: str | None
    gpu_model: str | None
    gpus_per_unit: int
    #: the offer as the stored answer named it
    name: str | None
    #: ``unpriced``: the option has no figures now; ``infeasible``: it was feasible and breaks a constraint
    #: now; ``replaced``: the option is priced with another offer now
    why: GoneWhy
    #: with ``replaced``: the offer (or offers) the option is priced with now, as named now
    replaced_by: list[str] = msgspec.field(default_factory=list)


class DriftRead(msgspec.Struct):
    recommendation_id: str
    #: the answer differs: see docs/operations.md "Drift" (a new knowledge version alone is no change)
    changed: bool
    #: the currency of every cost (the stored request's)
    currency: str
    stored: DriftSideRead
    now: DriftSideRead
    rank_changes: list[RankChangeRead]
    cost_changes: dict[str, CostChangeRead]
    offers_gone: list[OfferGoneRead]


class RecommendationSummary(msgspec.Struct):
    """A stored recommendation in a list: what tells it apart, not its whole answer."""

    id: str
    created_at: dt.datetime
    knowledge_version: str
    recommended_option: str | None
    currency: str | None
    as_of: dt.date | None
    gpus: int | None = None
    horizon_years: float | None = None


class RecommendationList(StoredList):
    items: list[RecommendationSummary]
