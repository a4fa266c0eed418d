"""Data residency by location (docs/methodology.md "Data residency by location"): where a profile's
``data_security`` level lets data sit (``data_location``), which offers keep it there, and — for a price
that holds in several regions — which one of its regions a profile is offered.

``anywhere``: no place is refused. ``jurisdiction``: the buyer's country or a bloc it belongs to (the
EU/EEA); hardware tied to no country (a ``global`` or ``*`` row) is refused, since nothing says where its
data sits; without ``buyer_country`` nothing is refused and the answer says so (``notes``).
``premises``: only the buyer's own hardware or a platform deployed there (``PREMISES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.knowledge import Knowledge, Price
from app.core.quotes import Candidate
from app.core.text import joined, msg
from app.core.types import Profile

#: the residencies that stand on the buyer's premises: its own hardware, a platform deployed there
PREMISES = frozenset({"on_premises", "private_deployment"})


def data_location(kb: Knowledge, profile: Profile) -> str:
    """Where the profile's level lets data sit (``anywhere`` for a level the knowledge lacks)."""
    level = kb.security_levels.get(profile.data_security)
    return "anywhere" if level is None else level.data_location


def outside(kb: Knowledge, profile: Profile, row: Price) -> bool:
    """Whether an offer of ``row`` keeps data outside where the profile's level lets it sit. The buyer's own
    hardware (``on_premises``) and a private deployment stand where the buyer puts them: never outside."""
    location = data_location(kb, profile)
    if location == "anywhere" or row.residency in PREMISES:
        return False
    if location == "premises":
        return True
    country = profile.buyer_country
    return country is not None and not kb.keeps_data_in(row.region, country)


def allowed_places(kb: Knowledge, country: str) -> str:
    """Where a jurisdiction keeps data, in words: "Germany or European Economic Area (EU/EEA)"."""
    home = kb.regions[country].name if country in kb.regions else country
    blocs = [kb.regions[key].name for key in kb.blocs_of(country)]
    if not blocs:
        return home
    return msg(
        "residency.place.country_or_bloc", f"{home} or {', '.join(blocs)}", country=home, blocs=joined(", ", blocs)
    )


def reason(kb: Knowledge, profile: Profile, label: str, row: Price) -> str:
    """The sentence of an offer refused for where it keeps data (code ``residency``)."""
    security = msg(f"data_security.{profile.data_security}", profile.data_security)
    place_key = kb.country_of(row.region)
    place = kb.regions[place_key].name if place_key is not None else None
    if data_location(kb, profile) == "premises":
        return msg(
            "violation.residency_place.premises",
            f"{label} is not on the buyer's own premises, where {security} data security keeps data",
            offer=label,
            data_security=security,
        )
    country = profile.buyer_country or ""
    allowed = allowed_places(kb, country)
    if place is None:
        return msg(
            "violation.residency_place.unplaced",
            f"{label} names no country its hardware is in, but {security} data security keeps data in {allowed}",
            offer=label,
            data_security=security,
            allowed=allowed,
        )
    return msg(
        "violation.residency_place.location",
        f"{label} is in {place}, but {security} data security keeps data in {allowed}",
        offer=label,
        place=place,
        data_security=security,
        allowed=allowed,
    )


def notes(kb: Knowledge, profile: Profile) -> tuple[str, ...]:
    """The note of a level that keeps data in the buyer's jurisdiction when the profile names none."""
    if profile.buyer_country is not None or data_location(kb, profile) != "jurisdiction":
        return ()
    security = msg(f"data_security.{profile.data_security}", profile.data_security)
    return (
        msg(
            "note.residency.no_buyer",
            f"{security} data security keeps data in the buyer's country or its bloc, but no buyer country "
            "was given: no offer was refused for where it is.",
            data_security=security,
        ),
    )


def one_region_each(kb: Knowledge, found: Sequence[Candidate], profile: Profile) -> list[Candidate]:
    """Of a price that holds in several regions (its row lists ``regions``: one candidate per region), the
    one candidate the profile is offered: the region that keeps data where its level lets it sit, then
    the nearest the buyer (``RegionHierarchy.nearness``), then the first the row lists. Every other
    candidate stays as it is, in its order."""
    if not any(c.offer.row.regions for c in found):
        return list(found)
    located = data_location(kb, profile) != "anywhere"
    buyer = profile.buyer_country
    places: dict[tuple[str, Any], tuple[bool, int]] = {}  # (region, residency) → (outside, nearness)
    best: dict[tuple[Any, ...], tuple[tuple[Any, ...], Candidate]] = {}
    for c in found:
        row = c.offer.row
        if row.regions is None:
            continue
        key = (row.regions, row.provider, row.subject, row.gpu_model, row.gpus_per_unit, row.valid_from, c.plan)
        place = places.get((row.region, row.residency))
        if place is None:
            place = places[row.region, row.residency] = (
                located and outside(kb, profile, row),
                3 if buyer is None else kb.nearness(row.region, buyer),
            )
        rank = (*place, row.regions.index(row.region) if row.region in row.regions else len(row.regions))
        kept = best.get((*key, c.offer.variant))
        if kept is None or rank < kept[0]:
            best[(*key, c.offer.variant)] = (rank, c)
    chosen = {id(c) for _, c in best.values()}
    return [c for c in found if c.offer.row.regions is None or id(c) in chosen]
