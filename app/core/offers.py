"""Offers (docs/methodology.md "Offers"): what an option can buy for a profile, priced in the
profile's currency, checked against the profile's hard constraints, and the choice among them.

An offer is a price row that can be bought by itself — an instance-hour, a platform GPU-hour, a
server — for the profile's hardware (its ``gpu_model``, or the reference server when it names none),
valid on its ``as_of``, of a provider and region the profile allows. Each option's plugin says which
item is its offer and prices each offer into a full assessment; ``choose`` then keeps the cheapest
feasible one per cost per effective GPU-hour and lists the others as alternatives.

An offer is named as people say it (``offer_name``): the provider, the instance or server, the region,
the plan and the machine room — "AWS p5.48xlarge, us-east-1, Capacity Block" — each part a message the
catalogs word in the request's language (``provider.<key>``, ``server.<key>``, ``plan.<key>``,
``facility.<variant>``); the knowledge base's own names where the catalogs lack a key.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.errors import MissingKnowledge
from app.core.knowledge import ANY, Conversion, Knowledge, Price, SourceRef
from app.core.ranges import Range
from app.core.text import Msg, joined, msg, plan_name
from app.core.types import OfferInfo

#: units priced for a whole instance or server: divided by its GPUs for a per-GPU figure
PER_UNIT = ("per_server_hour", "per_server")
#: the fabrics that join a multi-node training job's nodes (ethernet without GPUDirect does not); each scales a
#: job across nodes by its ``multi_node_scaling_<fabric>`` assumption (GPUDirect-TCPX/TCPXO below RDMA fabrics)
TRAINING_FABRICS = frozenset({"infiniband", "roce", "efa", "tcpxo", "tcpx"})
#: the smallest node a multi-node training job spans
MIN_NODE_GPUS = 8


@dataclass(frozen=True, slots=True)
class Offer:
    """One thing an option may buy, priced in the profile's currency."""

    option: str
    row: Price
    #: the plan it is billed under (a derived offer — a reservation priced as a discount — has its own)
    plan: str
    #: per ``row.unit`` in the profile's currency (after conversion and any discount)
    price: Range
    gpus_per_unit: int
    conversion: Conversion
    #: other rows that made the price (a reservation discount)
    extra_refs: tuple[SourceRef, ...] = ()
    #: a variant of the same row (an own cluster's colocation or own machine room)
    variant: str | None = None
    #: the lead time of a derived offer whose discount row states one (a queued start), else the row's
    lead_time_days: Range | None = None
    #: its name as people read it (``offer_name``), made once where it is priced
    name: Msg | None = None

    @property
    def per_gpu(self) -> Range:
        """The price per GPU (per GPU-hour for hourly units)."""
        return self.price / self.gpus_per_unit if self.row.unit in PER_UNIT else self.price

    @property
    def refs(self) -> tuple[SourceRef, ...]:
        return (self.row.ref, *self.extra_refs, *self.conversion.refs)

    @property
    def label(self) -> Msg:
        """Its name in sentences: "AWS p5.48xlarge, us-east-1, Capacity Block" (``offer_name``)."""
        return self.name or offer_name(None, self.row, self.plan, self.variant)

    @property
    def ident(self) -> str:
        """Its keys in one string (provider, subject, region, plan, variant): the order of offers that
        cost the same, whatever their names in any language."""
        parts = [self.row.provider, self.row.subject, self.row.region, self.plan]
        return " ".join(p for p in (*parts, self.variant) if p and p != ANY)

    def info(self) -> OfferInfo:
        r = self.row
        return OfferInfo(
            provider=r.provider,
            region=r.region,
            gpu_model=None if r.gpu_model == ANY else r.gpu_model,
            subject=r.subject,
            plan=self.plan,
            variant=self.variant,
            unit=r.unit,
            gpus_per_unit=self.gpus_per_unit,
            price=self.price,
            quoted_price=r.value,
            quoted_currency=r.currency,
            exchange_rate=None if self.conversion.identity else self.conversion.factor,
            valid_from=r.valid_from,
            residency=r.residency,
            source=r.source,
            source_quality=r.source_quality,
            refs=self.refs,
            name=self.label,
            price_book=r.book,
        )


def group_rows(knowledge: Knowledge, as_of: dt.date, *, option: str, item: str, gpu_model: str | None) -> list[Price]:
    """The rows of ``item`` valid on ``as_of`` that are offers for ``gpu_model`` (None: the reference
    server): of the rows of one offer (``offer_key``), the latest ``valid_from`` (then ``retrieved_on``)
    stands, in the price books' order."""
    if gpu_model is None:
        reference = knowledge.reference_server().key
        rows = [p for p in knowledge.rows(option, item, as_of) if p.subject == reference]
    else:
        rows = [p for p in knowledge.rows(option, item, as_of) if p.gpu_model == gpu_model]
    newest: dict[tuple[Any, ...], Price] = {}
    for p in rows:
        key = offer_key(p)
        kept = newest.get(key)
        if kept is None or (p.valid_from, p.retrieved_on or p.valid_from) > (
            kept.valid_from,
            kept.retrieved_on or kept.valid_from,
        ):
            newest[key] = p
    stands = {id(p) for p in newest.values()}
    return [p for p in rows if id(p) in stands]


def offer_key(p: Price) -> tuple[Any, ...]:
    """One offer's identity among the rows valid on a day: provider, GPU model, plan, region, GPUs per
    unit and subject (two rows of one identity: the newer stands)."""
    return (p.provider, p.gpu_model, p.plan, p.region, p.gpus_per_unit, p.subject)


def price_row(
    knowledge: Knowledge,
    row: Price,
    currency: str,
    as_of: dt.date,
    *,
    plan: str | None = None,
    factor: Range | None = None,
    extra_refs: tuple[SourceRef, ...] = (),
    variant: str | None = None,
) -> Offer | None:
    """``row`` as an offer in ``currency`` on ``as_of`` (times ``factor``, e.g. ``1 − discount``); None
    when no exchange rate that early converts it."""
    try:
        conversion = knowledge.conversion(row.currency, currency, as_of)
    except MissingKnowledge:
        return None
    price = row.value * conversion.factor
    if factor is not None:
        price = price * factor
    gpus = row.gpus_per_unit
    if gpus is None:
        server = knowledge.servers.get(row.subject)
        gpus = server.gpus_per_server if server is not None else 1
    return Offer(
        option=row.option,
        row=row,
        plan=plan or row.plan,
        price=price,
        gpus_per_unit=gpus,
        conversion=conversion,
        extra_refs=extra_refs,
        variant=variant,
        name=offer_name(knowledge, row, plan or row.plan, variant),
    )


def provider_name(knowledge: Knowledge | None, key: str) -> Msg:
    """A provider as people name it (``provider.<key>``; the knowledge base's name where the catalogs
    lack the key)."""
    found = None if knowledge is None else knowledge.providers.get(key)
    return msg(f"provider.{key}", key if found is None else found.name)


def subject_name(knowledge: Knowledge | None, subject: str) -> str:
    """What an offer sells: a server by its name (``server.<key>``; the knowledge base's where the
    catalogs lack it), an instance type or a platform's product as the price book writes it."""
    server = None if knowledge is None else knowledge.servers.get(subject)
    return subject if server is None else msg(f"server.{subject}", server.name)


def gpu_name(knowledge: Knowledge, gpu_model: str) -> str:
    """A GPU model by its name ("H100 SXM5"), its key where the knowledge base lacks it."""
    gpu = knowledge.gpus.get(gpu_model)
    return gpu_model if gpu is None else gpu.name


def facility_name(variant: str) -> Msg:
    """An own cluster's machine room (``bom``'s variants: quoted facility, colocation, own facility)."""
    return msg(f"facility.{variant.replace(' ', '_')}", variant)


def offer_name(knowledge: Knowledge | None, row: Price, plan: str, variant: str | None) -> Msg:
    """An offer as people read it: "AWS p5.48xlarge, us-east-1, Capacity Block", "Own HGX H100 8-GPU
    server, US, own machine room" — a part the row leaves open (``*``) is left out."""
    provider, subject = provider_name(knowledge, row.provider), subject_name(knowledge, row.subject)
    parts: list[str] = [msg("offer.product", f"{provider} {subject}", provider=provider, subject=subject)]
    if row.region != ANY:
        parts.append(row.region)
    if plan != ANY:
        parts.append(plan_name(plan))
    if variant:
        parts.append(facility_name(variant))
    return joined(", ", parts)


def per_machine(knowledge: Knowledge, gpus_per_unit: int, gpu_model: str | None) -> int:
    """GPUs per machine of an offer of ``gpus_per_unit`` on ``gpu_model``: the unit's, or for a unit of
    one GPU the GPU's server size (the reference server's where the GPU has none)."""
    if gpus_per_unit != 1:
        return gpus_per_unit
    try:
        return knowledge.server_for(gpu_model).gpus_per_server
    except MissingKnowledge:
        return knowledge.reference_server().gpus_per_server


def level(value: Any) -> float:
    """A figure as one number to sort by: its mean over Monte Carlo draws."""
    return float(np.mean(value)) if isinstance(value, np.ndarray) else float(value)


def offer_identity(p: Price) -> tuple[str, ...]:
    """What one offer is over time: the natural key of its rows but for the date."""
    return (p.option, p.provider, p.item, p.subject, p.gpu_model, p.plan, p.region, p.currency)


def stale(rows: Iterable[Price], days: int, today: dt.date) -> list[Price]:
    """The newest row of each offer among ``rows`` whose newest row was read (else became valid) more
    than ``days`` before ``today`` — ``GET /v1/offers?stale_days=`` and ``compute-advisor prices stale``."""
    newest: dict[tuple[str, ...], Price] = {}
    for p in rows:
        key = offer_identity(p)
        if key not in newest or p.valid_from > newest[key].valid_from:
            newest[key] = p
    cutoff = today - dt.timedelta(days=days)
    return [p for p in newest.values() if last_read(p) < cutoff]


def last_read(p: Price) -> dt.date:
    """When a price row was last known to hold: the day it was read, else the day it became valid."""
    return p.retrieved_on or p.valid_from
