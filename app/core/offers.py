"""Offers (docs/methodology.md "Offers"): what an option can buy for a profile, priced in the
profile's currency, checked against the profile's hard constraints, and the choice among them.

An offer is a price row that can be bought by itself — an instance-hour, a platform GPU-hour, a
server — for the profile's hardware (its ``gpu_model``, or the reference server when it names none),
valid on its ``as_of``, of a provider and region the profile allows. Each option's plugin says which
item is its offer and prices each offer into a full assessment; ``choose`` then keeps the cheapest
feasible one per cost per effective GPU-hour and lists the others as alternatives.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.errors import MissingKnowledge, NoOffer
from app.core.knowledge import ANY, Conversion, Knowledge, Price, SourceRef
from app.core.ranges import Range, ceil_number, holds_anywhere
from app.core.text import msg, num, span
from app.core.types import Alternative, Assessment, OfferInfo, Profile, Violation

#: units priced for a whole instance or server: divided by its GPUs for a per-GPU figure
PER_UNIT = ("per_server_hour", "per_server")


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

    @property
    def per_gpu(self) -> Range:
        """The price per GPU (per GPU-hour for hourly units)."""
        return self.price / self.gpus_per_unit if self.row.unit in PER_UNIT else self.price

    @property
    def refs(self) -> tuple[SourceRef, ...]:
        return (self.row.ref, *self.extra_refs, *self.conversion.refs)

    @property
    def label(self) -> str:
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
        )


def anchors(knowledge: Knowledge, profile: Profile, *, option: str, item: str) -> list[Price]:
    """The rows of ``item`` that are offers for the profile's hardware, providers and regions."""
    if profile.gpu_model is None:
        reference = knowledge.reference_server().key
        rows = [p for p in knowledge.rows(option, item, profile.as_of) if p.subject == reference]
    else:
        rows = [p for p in knowledge.rows(option, item, profile.as_of) if p.gpu_model == profile.gpu_model]
    if profile.providers:
        rows = [p for p in rows if p.provider in profile.providers]
    if profile.regions:
        rows = [p for p in rows if p.region in profile.regions]
    return rows


def priced(
    knowledge: Knowledge,
    profile: Profile,
    row: Price,
    *,
    plan: str | None = None,
    factor: Range | None = None,
    extra_refs: tuple[SourceRef, ...] = (),
    variant: str | None = None,
) -> Offer | None:
    """``row`` as an offer in the profile's currency (times ``factor``, e.g. ``1 − discount``); None
    when no exchange rate that early converts it."""
    try:
        conversion = knowledge.conversion(row.currency, profile.currency, profile.as_of)
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
    )


def violations(offer: Offer, profile: Profile, knowledge: Knowledge, *, lead_time_days: Range) -> tuple[Violation, ...]:
    """The profile's hard constraints an offer breaks (each a reason, and where it holds — a bool, or
    an array over a batch of profiles): capacity, the expected lead time, and data residency."""
    found: list[Violation] = []
    capacity = offer.row.capacity_gpus
    if capacity is not None:
        found.append(
            Violation(
                msg(
                    "violation.capacity",
                    f"{offer.label} sells at most {capacity:,} GPUs",
                    offer=offer.label,
                    gpus=f"{capacity:,}",
                ),
                _gt(profile.gpus, capacity),
            )
        )
    found.append(
        Violation(
            msg(
                "violation.lead_time",
                f"compute is needed within {num(profile.start_within_days)} days, but {offer.label} takes "
                f"{span(lead_time_days, 'days')} to obtain (expected {num(lead_time_days.expected)})",
                days=num(profile.start_within_days),
                offer=offer.label,
                lead_time=span(lead_time_days, "days").removesuffix(" days"),
                expected=num(lead_time_days.expected),
            ),
            _gt(lead_time_days.expected, profile.start_within_days),
        )
    )
    if not knowledge.accepts(profile.data_security, offer.row.residency):
        level = knowledge.security_levels[profile.data_security]
        found.append(
            Violation(
                msg(
                    "violation.residency",
                    f"{offer.label} is {offer.row.residency}; data_security '{profile.data_security}' accepts "
                    f"{', '.join(level.accepted_residencies)}",
                    offer=offer.label,
                    residency=offer.row.residency,
                    data_security=profile.data_security,
                    accepted=", ".join(level.accepted_residencies),
                ),
                True,
            )
        )
    return tuple(v for v in found if holds_anywhere(v.violated))


def machines(knowledge: Knowledge, profile: Profile, offer: Offer) -> Any:
    """The machines a team looks after for ``offer``: its instances or servers, or for an offer billed
    per GPU as many as the GPU's servers (the reference server's size where the GPU has none) hold."""
    per_machine = offer.gpus_per_unit
    if per_machine == 1:
        try:
            per_machine = knowledge.server_for(profile.gpu_model).gpus_per_server
        except MissingKnowledge:
            per_machine = knowledge.reference_server().gpus_per_server
    return ceil_number(profile.gpus / per_machine)


def _gt(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a) > np.asarray(b)
    return bool(a > b)


def level(value: Any) -> float:
    """A figure as one number to sort by: its mean over Monte Carlo draws."""
    return float(np.mean(value)) if isinstance(value, np.ndarray) else float(value)


def shortlist(offers: Sequence[Offer], keep: Callable[[Offer], bool], per_plan: int = 2, extra: int = 4) -> list[Offer]:
    """The offers worth a full assessment: in each plan the cheapest per GPU up to and including the
    ``per_plan``-th one that ``keep`` accepts (cheaper ones that fail it stay, to be reported), and
    the next ``extra`` overall for the alternatives. Within a plan, billing is the same, so the
    cheapest per GPU that meets the constraints is the cheapest."""
    chosen: list[Offer] = []
    by_plan: dict[str, list[Offer]] = {}
    for o in sorted(offers, key=lambda o: (level(o.per_gpu.expected), o.label)):
        by_plan.setdefault(o.plan, []).append(o)
    rest: list[Offer] = []
    for group in by_plan.values():
        kept = 0
        for i, o in enumerate(group):
            if kept < per_plan:
                chosen.append(o)
                kept += keep(o)
            else:
                rest.extend(group[i:])
                break
    rest.sort(key=lambda o: (level(o.per_gpu.expected), o.label))
    return chosen + rest[:extra]


def choose(candidates: Sequence[Assessment], *, alternatives: int = 6) -> Assessment:
    """The candidate (one assessment per offer) with the lowest expected cost per effective GPU-hour
    among those that break no constraint — or, when every one breaks one, the cheapest, with its
    violations (the option is then infeasible). The others become the chosen one's alternatives.

    Over a batch (arrays), the choice is made per profile and the figures are taken element-wise."""
    if not candidates:
        raise NoOffer("no offer for this profile")
    keys = [_effective(c).expected for c in candidates]
    if any(isinstance(k, np.ndarray) for k in keys):
        return _choose_each(candidates)
    infeasible = [any(holds_anywhere(v.violated) for v in c.violations) for c in candidates]
    order = sorted(range(len(candidates)), key=lambda i: (infeasible[i], keys[i], candidates[i].offer_label))
    best = candidates[order[0]]
    listed = [_alternative(candidates[i]) for i in order[1:]]
    feasible_alt = [a for a in listed if a.feasible][:alternatives]
    return dataclasses.replace(
        best,
        alternatives=tuple(feasible_alt + [a for a in listed if not a.feasible][:3]),
        offers_considered=len(candidates),
    )


def _effective(a: Assessment) -> Range:
    return a.cost.per_effective_gpu_hour or a.cost.per_useful_gpu_hour


def _alternative(a: Assessment) -> Alternative:
    reasons = tuple(v.reason for v in a.violations if holds_anywhere(v.violated))
    assert a.offer is not None
    return Alternative(offer=a.offer, cost=a.cost, feasible=not reasons, reasons=reasons)


def _choose_each(candidates: Sequence[Assessment]) -> Assessment:
    """Per profile of a batch: the cheapest feasible candidate, figure by figure."""
    n = max(np.size(_effective(c).expected) for c in candidates)
    keys = np.stack([np.broadcast_to(_effective(c).expected, (n,)) for c in candidates])
    broken = np.stack(
        [
            np.logical_or.reduce(
                [np.broadcast_to(np.asarray(v.violated, dtype=bool), (n,)) for v in c.violations]
                or [np.zeros(n, dtype=bool)]
            )
            for c in candidates
        ]
    )
    ranked = np.where(broken, np.inf, keys)
    every_broken = broken.all(axis=0)
    index = np.where(every_broken, keys.argmin(axis=0), ranked.argmin(axis=0))
    best: Assessment = _select(list(candidates), index)
    return dataclasses.replace(
        best,
        violations=(Violation("every offer breaks a constraint", every_broken),),
        offers_considered=len(candidates),
    )


def _select(items: list[Any], index: np.ndarray) -> Any:
    """Element-wise choice among same-shaped values: Ranges and arrays by ``index``, dataclasses field by
    field; anything else (labels, sources) is the first item's."""
    first = items[0]
    if isinstance(first, Range):
        return Range.elementwise(
            *(np.choose(index, [np.broadcast_to(r[i], index.shape) for r in items]) for i in range(3))
        )
    if isinstance(first, np.ndarray | float | int) and not isinstance(first, bool):
        return np.choose(index, [np.broadcast_to(x, index.shape) for x in items])
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        changes = {f.name: _select([getattr(x, f.name) for x in items], index) for f in dataclasses.fields(first)}
        return dataclasses.replace(first, **changes)
    return first


def describe(offers: Iterable[Offer]) -> list[str]:
    return [o.label for o in offers]


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
