"""Option kernels (docs/plugins.md "Kernels"): an option compiled once, then priced by arithmetic.

A plugin compiles its option per knowledge version × currency × ``as_of`` validity period (the days
between two dates on which some price row or exchange rate starts or stops holding: every day of one
period sees the same rows and rates). The kernel holds the option's **candidates** — every offer it
may buy, priced in the currency, with the constants its price needs and the sources every figure
will cite, grouped by GPU model — and its assumption values. Compiling is lazy per GPU model and
cached on the snapshot (``Knowledge.derived``), so a new request body never compiles; providers,
regions and plans are masks over the compiled candidates.

Per profile, the kernel **quotes** candidates: pure arithmetic on ``Range`` ends from the profile's
numbers — plain floats for one profile, NumPy arrays for a batch (one element per profile) or for
Monte Carlo draws (a kernel compiled over sampled knowledge). A quote holds numbers and the
constraints an offer breaks, no words. ``choose`` keeps the cheapest feasible quote per effective
GPU-hour (per element over arrays). Only what is answered is **materialised** into an ``Assessment``
with its sentences, breakdown labels and sources.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from app.sdk.errors import NoOffer
from app.sdk.knowledge import ANY, Knowledge, SourceRef
from app.sdk.offers import PER_UNIT, Offer
from app.sdk.quotes import Candidate, Quote, select_each
from app.sdk.ranges import Range, holds_anywhere
from app.sdk.types import Alternative, Assessment, OfferInfo, OptionSpec, Profile, Violation

#: alternatives an answer lists: the next cheapest feasible offers, then infeasible ones with their reasons
FEASIBLE_ALTERNATIVES, INFEASIBLE_ALTERNATIVES = 6, 3


class Kernel:
    """One option compiled for a knowledge version, a currency and an ``as_of`` period.

    A subclass says which candidates the option has for a GPU model (``compile_group``), how a
    candidate is priced for a profile (``quote``) and how a chosen quote reads (``materialise``).
    The rest — masks, the shortlist, the choice, alternatives — is here, the same for every option.
    """

    def __init__(self, spec: OptionSpec, knowledge: Knowledge, currency: str, as_of: dt.date, roles: Roles) -> None:
        self.spec = spec
        self.option = spec.key
        #: the plans a request's ``rental_plan`` narrows this option to (``OptionSpec.rental_plans``;
        #: empty: the option ignores it)
        self.rental_plans = frozenset(spec.rental_plans)
        self.knowledge = knowledge
        self.currency = currency
        #: a day of the period the kernel serves (every day of it sees the same rows and rates)
        self.as_of = as_of
        self.roles = roles
        self._groups: dict[str | None, tuple[Candidate, ...]] = {}
        self._values: dict[str, tuple[Range, SourceRef]] = {}
        #: values the kernel derives from the knowledge once (constants its candidates share)
        self.compiled: dict[str, Any] = {}

    # ---- compiled knowledge -------------------------------------------------------------------

    def value(self, key: str) -> Range:
        """The option's assumption ``key`` (its own, else the general one), read once per kernel."""
        return self._assumption(key)[0]

    def ref(self, key: str) -> SourceRef:
        return self._assumption(key)[1]

    def _assumption(self, key: str) -> tuple[Range, SourceRef]:
        found = self._values.get(key)
        if found is None:
            found = self.knowledge.assumption_value(self.option, key)
            self._values[key] = found
        return found

    def group(self, gpu_model: str | None) -> tuple[Candidate, ...]:
        """Every candidate of the option for ``gpu_model`` (None: the reference server), compiled on
        first use and sorted by price per GPU."""
        found = self._groups.get(gpu_model)
        if found is None:
            found = tuple(sorted(self.compile_group(gpu_model), key=lambda c: c.sort_key))
            self._groups[gpu_model] = found
        return found

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        """The option's candidates for ``gpu_model`` (None: the reference server)."""
        raise NotImplementedError

    # ---- per profile ------------------------------------------------------------------------------

    def candidates(self, profile: Profile) -> list[Candidate]:
        """The compiled candidates the profile allows: its GPU model, providers, regions and plan."""
        found = self.group(profile.gpu_model)
        providers, regions, plan = profile.providers, profile.regions, profile.rental_plan
        if not (providers or regions or (plan is not None and self.rental_plans)):
            return list(found)
        within = self.knowledge.within
        return [
            c
            for c in found
            if (not providers or c.offer.row.provider in providers)
            and (not regions or any(within(c.offer.row.region, r) for r in regions))
            and (plan is None or not self.rental_plans or c.plan == plan)
        ]

    def no_offer(self, profile: Profile) -> NoOffer:
        hardware = profile.gpu_model or "the reference server"
        return NoOffer(
            f"no {self.option} offer for {hardware} valid on {profile.as_of}"
            + (f" from {', '.join(profile.providers)}" if profile.providers else "")
            + (f" in {', '.join(profile.regions)}" if profile.regions else "")
        )

    def acceptable(self, candidate: Candidate, profile: Profile) -> bool:
        """Whether the offer breaks none of the profile's hard constraints (for every profile of a batch)."""
        raise NotImplementedError

    def quotes(self, profile: Profile, candidates: Sequence[Candidate]) -> list[Quote]:
        """Each candidate's quote for the profile (what candidates share is computed once)."""
        raise NotImplementedError

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        """The chosen quote as an assessment, with its sentences, labels and sources."""
        raise NotImplementedError

    def violation_reason(self, profile: Profile, quote: Quote, code: str) -> str:
        """The sentence of a broken constraint ``code`` of ``quote``."""
        raise NotImplementedError

    # ---- the choice -----------------------------------------------------------------------------

    def shortlist(self, profile: Profile, per_plan: int = 2, extra: int = 4) -> list[Candidate]:
        """The candidates worth a quote: in each plan the cheapest per GPU up to and including the
        ``per_plan``-th one the profile accepts (cheaper ones that fail stay, to be reported), and the
        next ``extra`` overall for the alternatives. Within a plan billing is the same, so the cheapest
        per GPU that meets the constraints is the cheapest. Raises ``NoOffer`` when there is none."""
        found = self.candidates(profile)
        if not found:
            raise self.no_offer(profile)
        chosen: list[Candidate] = []
        by_plan: dict[str, list[Candidate]] = {}
        for c in found:  # sorted by price per GPU, then label
            by_plan.setdefault(c.plan, []).append(c)
        rest: list[Candidate] = []
        for members in by_plan.values():
            kept = 0
            for i, c in enumerate(members):
                if kept < per_plan:
                    chosen.append(c)
                    kept += self.acceptable(c, profile)
                else:
                    rest.extend(members[i:])
                    break
        rest.sort(key=lambda c: c.sort_key)
        return chosen + rest[:extra]

    def assess(self, profile: Profile) -> Assessment:
        """The option's assessment of one profile: the cheapest feasible quote, materialised, with
        the others as its alternatives (arrays in a profile: chosen per element, see ``choose``)."""
        quotes = self.quotes(profile, self.shortlist(profile))
        keys = [q.effective.expected for q in quotes]
        if any(isinstance(k, np.ndarray) for k in keys):
            return self._assess_each(profile, quotes)
        infeasible = [holds_anywhere(q.broken()) for q in quotes]
        order = sorted(range(len(quotes)), key=lambda i: (infeasible[i], keys[i], _label(quotes[i])))
        best = self.materialise(profile, quotes[order[0]])
        listed = [self._alternative(profile, quotes[i]) for i in order[1:]]
        feasible = [a for a in listed if a.feasible][:FEASIBLE_ALTERNATIVES]
        return dataclasses.replace(
            best,
            alternatives=tuple(feasible + [a for a in listed if not a.feasible][:INFEASIBLE_ALTERNATIVES]),
            offers_considered=len(quotes),
        )

    def choose(self, profile: Profile) -> tuple[Quote, int]:
        """The cheapest feasible quote (per element over arrays, with a single violation saying where
        every offer breaks a constraint) and how many were quoted: numbers only, for batches, Monte
        Carlo draws and insights."""
        quotes = self.quotes(profile, self.shortlist(profile))
        if len(quotes) == 1 and not any(isinstance(q.effective.expected, np.ndarray) for q in quotes):
            return quotes[0], 1
        keys = [q.effective.expected for q in quotes]
        if not any(isinstance(k, np.ndarray) for k in keys):
            infeasible = [holds_anywhere(q.broken()) for q in quotes]
            best = min(range(len(quotes)), key=lambda i: (infeasible[i], keys[i], _label(quotes[i])))
            return quotes[best], len(quotes)
        return select_each(quotes), len(quotes)

    def _assess_each(self, profile: Profile, quotes: list[Quote]) -> Assessment:
        chosen = select_each(quotes)
        first = self.materialise(profile, quotes[0])
        every_broken = chosen.violations[0][1] if chosen.violations else False
        return dataclasses.replace(
            first,
            cost=dataclasses.replace(chosen.cost, breakdown=first.cost.breakdown, extras=first.cost.extras),
            efficiency=dataclasses.replace(chosen.efficiency, sources=first.efficiency.sources),
            stability=dataclasses.replace(chosen.stability, sources=first.stability.sources),
            usability=dataclasses.replace(chosen.usability, sources=first.usability.sources),
            violations=(Violation("every offer breaks a constraint", every_broken),),
            offers_considered=len(quotes),
        )

    def _alternative(self, profile: Profile, quote: Quote) -> Alternative:
        reasons = tuple(
            self.violation_reason(profile, quote, code) for code, where in quote.violations if holds_anywhere(where)
        )
        assert quote.candidate is not None
        return Alternative(offer=quote.candidate.info, cost=quote.cost, feasible=not reasons, reasons=reasons)


def _label(q: Quote) -> str:
    return "" if q.candidate is None else q.candidate.offer_label


#: what a kernel may ask of the other loaded options by role (``app.host.options`` answers it)
Roles = Callable[[str, Knowledge, str, dt.date], "Kernel | None"]


def offer_label(info: OfferInfo) -> str:
    """``Assessment.offer_label`` of an offer."""
    return f"{info.provider} {info.subject} {info.region} {info.plan} {info.variant or ''}"


def candidate(
    offer: Offer, per_machine: int = 1, data: Any = None, *, node_gpus: int | None = None, interconnect: Any = ...
) -> Candidate:
    """A compiled candidate of ``offer`` (its price per GPU, label and answerable info made once). Its
    node is its instance or server where the row says how many GPUs it has, else the machine size
    (a GPU-billed platform schedules jobs on its servers); its interconnect the row's unless given."""
    info = offer.info()
    row = offer.row
    node = (
        node_gpus
        if node_gpus is not None
        else (offer.gpus_per_unit if row.gpus_per_unit is not None or row.unit in PER_UNIT else per_machine)
    )
    fabric = row.interconnect if interconnect is ... else interconnect
    return Candidate(
        offer=offer,
        per_gpu=offer.per_gpu,
        label=offer.label,
        info=info,
        offer_label=offer_label(info),
        per_machine=per_machine,
        node_gpus=node,
        interconnect=fabric,
        data=data,
    )


__all__ = [
    "ANY",
    "Candidate",
    "Kernel",
    "Quote",
    "Roles",
    "candidate",
    "select_each",
]


def refs(*groups: Sequence[SourceRef]) -> tuple[SourceRef, ...]:
    """The sources of several reads, in order, each once (as ``Inputs.take_refs`` keeps them)."""
    return tuple(dict.fromkeys(r for g in groups for r in g))
