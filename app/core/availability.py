"""The availability rules that bind an offer for a buyer (docs/methodology.md "Rules by buyer"): which rules
bind, the reason code an offer is refused with, and the sentences and notes an answer carries.

A rule's ``scope`` says whom it binds: ``buyer`` — a buyer whose ``buyer_country`` lies in the rule's
jurisdiction, on every offer (without a buyer no such rule applies, and the answer says so);
``location`` — the hardware of an offer in the jurisdiction (the country its region lies in: an own
cluster's is the buyer's country; a price that holds ``global``\\ly lies in no country). Its ``kind`` says
whose law it is, and so the reason code of a rented or platform offer it refuses: ``export-controlled``
(the supplier's country) or ``import-restricted`` (the buyer's). An offer of servers, bought outright,
is ``not-procurable`` where a rule refuses its GPU model or where only a grey-market quote prices it:
such a quote is listed among the alternatives with its reason, never chosen while a legal one is
feasible.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

from app.core.kernel import Candidate
from app.core.knowledge import ANY, AvailabilityRule, Knowledge
from app.core.offers import gpu_name
from app.core.text import Msg, joined, msg
from app.core.types import Profile

#: reason codes of the availability rules, as answers carry them (``violation.<code>``)
EXPORT_CONTROLLED = "export-controlled"
IMPORT_RESTRICTED = "import-restricted"
NOT_PROCURABLE = "not-procurable"
CODES = (EXPORT_CONTROLLED, IMPORT_RESTRICTED, NOT_PROCURABLE)
#: the source quality of a quote from a market that sells outside the law
GREY_MARKET = "grey_market"
#: the price item of an offer bought outright (an own cluster's servers): refused as ``not-procurable``
BOUGHT = "server_hardware"


class Binding(Protocol):
    """What the rules read of an offer kernel (``app.core.offer_kernel.OfferKernel``)."""

    knowledge: Knowledge
    as_of: dt.date
    compiled: dict[Any, Any]

    def jurisdiction(self, c: Candidate, profile: Profile) -> str: ...


def hardware_country(kernel: Binding, c: Candidate, profile: Profile) -> str | None:
    """The country the offer's hardware is in (``jurisdiction``: its region, an own cluster's buyer's
    country); None where its region lies in no single country (``global``, a continent, ``*``)."""
    return kernel.knowledge.country_of(kernel.jurisdiction(c, profile))


def bound(kernel: Binding, c: Candidate, profile: Profile) -> list[AvailabilityRule]:
    """The rules on the offer's GPU model that bind it for the profile on the period's day: ``buyer`` rules
    whose jurisdiction holds ``buyer_country``, ``location`` rules whose jurisdiction holds the hardware's
    country. The region ``global`` is never a jurisdiction: a price that holds everywhere meets no
    ``location`` rule."""
    gpu = c.offer.row.gpu_model
    kb = kernel.knowledge
    if gpu == ANY or not kb.availability:
        return []
    place = {"buyer": profile.buyer_country, "location": hardware_country(kernel, c, profile)}
    key = ("availability", gpu, place["buyer"], place["location"])
    found: list[AvailabilityRule] | None = kernel.compiled.get(key)
    if found is None:
        found = [
            r
            for r in kb.availability
            if r.gpu_model == gpu
            and r.valid_on(kernel.as_of)
            and (where := place[r.scope]) is not None
            and kb.within(where, r.jurisdiction)
        ]
        kernel.compiled[key] = found
    return found


def refusing(kernel: Binding, c: Candidate, profile: Profile) -> AvailabilityRule | None:
    """The first rule that makes the offer's GPU model unavailable for the profile (None: none does)."""
    return next((r for r in bound(kernel, c, profile) if r.effect == "unavailable"), None)


def refusal(kernel: Binding, c: Candidate, profile: Profile) -> str | None:
    """The reason code the availability rules refuse the offer with, or None: an offer bought outright is
    ``not-procurable`` (a rule refuses its part, or a grey-market quote prices it); another offer is
    ``export-controlled`` or ``import-restricted`` by the refusing rule's kind."""
    bought = c.offer.row.item == BOUGHT
    if bought and c.offer.row.source_quality == GREY_MARKET:
        return NOT_PROCURABLE
    rule = refusing(kernel, c, profile)
    if rule is None:
        return None
    if bought:
        return NOT_PROCURABLE
    return EXPORT_CONTROLLED if rule.kind == "export" else IMPORT_RESTRICTED


def jurisdiction_name(knowledge: Knowledge, key: str) -> Msg:
    """A country or bloc as people name it (``jurisdiction.<key>``; the region hierarchy's name where the
    catalogs lack the key): never its key."""
    region = knowledge.regions.get(key)
    return msg(f"jurisdiction.{key}", key if region is None else region.name)


def rule_sentence(knowledge: Knowledge, rule: AvailabilityRule) -> Msg:
    """What a refusing rule says: the part export-controlled for its jurisdiction, or not permitted into it."""
    gpu = gpu_name(knowledge, rule.gpu_model)
    place = jurisdiction_name(knowledge, rule.jurisdiction)
    if rule.kind == "export":
        text = f"{gpu} is export-controlled for {place} ({rule.source})"
        return msg(f"violation.{EXPORT_CONTROLLED}", text, gpu_model=gpu, jurisdiction=place, source=rule.source)
    text = f"{gpu} may not be imported into {place} ({rule.source})"
    return msg(f"violation.{IMPORT_RESTRICTED}", text, gpu_model=gpu, jurisdiction=place, source=rule.source)


def reason(kernel: Binding, c: Candidate, profile: Profile, label: str, code: str) -> Msg:
    """The sentence of ``code`` (one of ``CODES``) for the offer ``label``: the refusing rule with its
    source, or — for an offer bought outright — where it cannot be bought legally and why."""
    kb = kernel.knowledge
    rule = refusing(kernel, c, profile)
    if code != NOT_PROCURABLE:
        assert rule is not None
        return rule_sentence(kb, rule)
    country = hardware_country(kernel, c, profile)
    where = jurisdiction_name(kb, rule.jurisdiction if rule is not None else country or c.offer.row.region)
    if rule is not None:
        why = rule_sentence(kb, rule)
    else:
        day = str(c.offer.row.valid_from)  # the quote itself is the offer's source, listed with it
        why = msg(
            "procurement.grey-market", f"its only price is a grey-market quote of {day}, not a legal purchase", date=day
        )
    return msg(
        f"violation.{NOT_PROCURABLE}",
        f"{label} cannot be bought legally in {where}: {why}",
        offer=label,
        jurisdiction=where,
        reason=why,
    )


def notes(
    knowledge: Knowledge, as_of: dt.date, c: Candidate, profile: Profile, rules: list[AvailabilityRule]
) -> tuple[Msg, ...]:
    """What an answer says of the ``rules`` that bind the offer (``bound``) without refusing it: a licence
    needed, a purchase the buyer's authorities discourage; and, without a buyer, that no rule for buyers
    of its GPU model applied."""
    gpu_model = c.offer.row.gpu_model
    found: list[Msg] = []
    gpu = gpu_name(knowledge, gpu_model)
    licensed = next((r for r in rules if r.effect == "licence_required"), None)
    if licensed is not None:  # available, but only with an export licence: said, not refused
        place = jurisdiction_name(knowledge, licensed.jurisdiction)
        text = f"{gpu} needs an export licence for {place} ({licensed.source})."
        found.append(msg("note.licence_required", text, gpu_model=gpu, jurisdiction=place, source=licensed.source))
    discouraged = next((r for r in rules if r.effect == "discouraged"), None)
    if discouraged is not None:
        place = jurisdiction_name(knowledge, discouraged.jurisdiction)
        text = f"Authorities in {place} discourage buying {gpu} ({discouraged.source})."
        found.append(msg("note.discouraged", text, gpu_model=gpu, jurisdiction=place, source=discouraged.source))
    if profile.buyer_country is None and gpu_model != ANY:
        places = sorted(
            {
                r.jurisdiction
                for r in knowledge.availability
                if r.gpu_model == gpu_model and r.scope == "buyer" and r.valid_on(as_of)
            }
        )
        if places:
            names = joined("; ", [jurisdiction_name(knowledge, p) for p in places])
            text = (
                f"No buyer country was given, so the rules that bind buyers of {gpu} in {names} were not "
                "applied: give the buyer's country to apply them."
            )
            found.append(msg("note.no_buyer_rules", text, gpu_model=gpu, jurisdictions=names))
    return tuple(found)
