"""Option kernels (docs/plugins.md "Kernels"): an option compiled once, then priced by arithmetic.

A plugin compiles its option per knowledge version × currency × ``as_of`` validity period (the days
between two dates on which some price row or exchange rate starts or stops holding: every day of one
period sees the same rows and rates). The kernel holds the option's **candidates** — every offer it
may buy, priced in the currency, with the constants its price needs and the sources every figure
will cite, grouped by GPU model — and its assumption values. Compiling is lazy per GPU model and
cached on the snapshot (``Knowledge.derived``), so a new request body never compiles; providers,
regions and plans are masks over the compiled candidates.

Per profile, the kernel **quotes** candidates: plain arithmetic from the profile's columns
(``app.core.columns.Columns``: floats for one profile, NumPy arrays for a batch, a sweep or a kernel
compiled over Monte Carlo draws), one end of every range at a time and only the ends the caller
reads. A quote holds numbers and the constraints an offer breaks, no words. ``choose`` keeps the
cheapest feasible quote per effective GPU-hour (per element over arrays), ``assess`` chooses at the
expected figures and quotes only the offers it answers at every end. Only what is answered is
**materialised** into an ``Assessment`` with its sentences, breakdown labels and sources.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from app.core.columns import ALL, EXPECTED, Columns
from app.core.declarations import OptionSpec
from app.core.errors import NoOffer
from app.core.knowledge import ANY, Knowledge, SourceRef
from app.core.offers import gpu_name, provider_name
from app.core.quotes import Candidate, Quote, candidate, select_each
from app.core.ranges import Range, holds_anywhere
from app.core.residency import one_region_each
from app.core.text import Msg, joined, msg, option_ref
from app.core.types import Alternative, Assessment, Profile, Violation

#: alternatives an answer lists: the next cheapest feasible offers, then infeasible ones with their reasons
FEASIBLE_ALTERNATIVES, INFEASIBLE_ALTERNATIVES = 6, 3
#: the offers one provider sells are the same offer's regions and plans: a market lists its best one
Listed = tuple[list[int], list[int]]


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
        self.compiled: dict[Any, Any] = {}
        #: the knowledge holds Monte Carlo draws (``Knowledge.draws``): its figures are arrays of them
        self.sampled = knowledge.draws > 0

    #: whether an answer's alternatives are the best offer of each other provider (a market of providers),
    #: not the next cheapest offers whoever sells them (``alternatives``)
    one_per_provider: ClassVar[bool] = False
    #: the assumptions the kernel reads (``value``, ``ref``) beyond those its base classes require: the
    #: option's own or general ones; ``seeds check`` refuses a knowledge base that lacks one for a loaded
    #: option, and ``required_assumptions`` is the union over the class and its bases
    requires: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def required_assumptions(cls) -> tuple[str, ...]:
        """Every assumption the kernel requires: its ``requires`` and its bases', each once, bases first."""
        found: dict[str, None] = {}
        for klass in reversed(cls.__mro__):
            found.update(dict.fromkeys(vars(klass).get("requires", ())))
        return tuple(found)

    @staticmethod
    def refs(*groups: Sequence[SourceRef]) -> tuple[SourceRef, ...]:
        """The sources of several reads, in order, each once."""
        return refs(*groups)

    # ---- compiled knowledge -------------------------------------------------------------------

    def value(self, key: str) -> Range:
        """The option's assumption ``key`` (its own, else the general one), read once per kernel."""
        return self._assumption(key)[0]

    def ref(self, key: str) -> SourceRef:
        """The source of the assumption ``key`` the kernel reads (``value``), to cite beside its figure."""
        return self._assumption(key)[1]

    def _assumption(self, key: str) -> tuple[Range, SourceRef]:
        found = self._values.get(key)
        if found is None:
            found = self.knowledge.assumption_value(self.option, key)
            self._values[key] = found
        return found

    def group(self, gpu_model: str | None) -> tuple[Candidate, ...]:
        """Every candidate of the option for ``gpu_model`` (None: the reference server), compiled on
        first use (``compile_group``, then ``prepare``) and sorted by price per GPU."""
        found = self._groups.get(gpu_model)
        if found is None:
            found = tuple(sorted((self.prepare(c) for c in self.compile_group(gpu_model)), key=lambda c: c.sort_key))
            self._groups[gpu_model] = found
        return found

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        """The option's candidates for ``gpu_model`` (None: the reference server)."""
        raise NotImplementedError

    def prepare(self, candidate: Candidate) -> Candidate:
        """A compiled candidate with what the kernel derives of it once (``OfferKernel``: its lead time
        and the facts its hard constraints test)."""
        return candidate

    # ---- per profile ------------------------------------------------------------------------------

    def columns(self, profile: Profile, ends: tuple[int, ...] = ALL) -> Columns:
        """The profile as this kernel computes with it (arrays where its knowledge holds Monte Carlo draws)."""
        return Columns(profile, ends, sampled=self.sampled)

    def candidates(self, profile: Profile) -> list[Candidate]:
        """The compiled candidates the profile allows: its GPU model, providers, regions and plan; of a
        price that holds in several regions, the one region the profile is offered
        (``app.core.residency.one_region_each``)."""
        found = self.group(profile.gpu_model)
        providers, regions, plan = profile.providers, profile.regions, profile.rental_plan
        if not (providers or regions or (plan is not None and self.rental_plans)):
            return one_region_each(self.knowledge, found, profile)
        within = self.knowledge.within
        return one_region_each(
            self.knowledge,
            [
                c
                for c in found
                if (not providers or c.offer.row.provider in providers)
                and (not regions or any(within(c.offer.row.region, r) for r in regions))
                and (plan is None or not self.rental_plans or c.plan == plan)
            ],
            profile,
        )

    def no_offer(self, profile: Profile) -> NoOffer:
        """No offer for the profile, in words: the option, the hardware, the day and the filters."""
        option = option_ref(self.option)
        hardware: str = (
            msg("error.reference_server", "the reference server")
            if profile.gpu_model is None
            else gpu_name(self.knowledge, profile.gpu_model)
        )
        day = str(profile.as_of)
        text = f"no offer of {option} for {hardware} valid on {day}"
        params: dict[str, Any] = {"option": option, "hardware": hardware, "as_of": day}
        code = "error.no_offer"  # then _from, _in or _from_in: the filters the profile sets
        if profile.providers:
            params["providers"] = joined(", ", [provider_name(self.knowledge, p) for p in profile.providers])
            text, code = f"{text} from {params['providers']}", f"{code}_from"
        if profile.regions:
            params["regions"] = ", ".join(profile.regions)
            text, code = f"{text} in {params['regions']}", f"{code}_in"
        return NoOffer(Msg(code, text, params))

    def acceptable(self, candidate: Candidate, at: Columns) -> bool:
        """Whether the offer breaks none of the profile's hard constraints (for every profile of a batch)."""
        raise NotImplementedError

    def quotes(self, at: Columns, candidates: Sequence[Candidate]) -> list[Quote]:
        """Each candidate's quote for the profile at the ends ``at.ends`` (what candidates share is
        computed once per call, in ``at.memo``)."""
        raise NotImplementedError

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        """The chosen quote as an assessment, with its sentences, labels and sources."""
        raise NotImplementedError

    def violation_reason(self, profile: Profile, quote: Quote, code: str) -> str:
        """The sentence of a broken constraint ``code`` of ``quote``."""
        raise NotImplementedError

    # ---- the choice -----------------------------------------------------------------------------

    def shortlist(self, at: Columns, per_plan: int = 2, extra: int = 4) -> list[Candidate]:
        """The candidates worth a quote: in each plan the cheapest per GPU up to and including the
        ``per_plan``-th one the profile accepts (cheaper ones that fail stay, to be reported), and the
        next ``extra`` overall for the alternatives. Within a plan billing is the same, so the cheapest
        per GPU that meets the constraints is the cheapest. Raises ``NoOffer`` when there is none."""
        found = self.candidates(at.profile)
        if not found:
            raise self.no_offer(at.profile)
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
                    kept += self.acceptable(c, at)
                else:
                    rest.extend(members[i:])
                    break
        rest.sort(key=lambda c: c.sort_key)
        if self.one_per_provider:  # the cheapest acceptable offer of each provider and plan, to list the best
            listed = {(c.offer.row.provider, c.plan) for c in chosen if self.acceptable(c, at)}
            for c in rest:
                key = (c.offer.row.provider, c.plan)
                if key not in listed and self.acceptable(c, at):
                    listed.add(key)
                    chosen.append(c)
            chosen_ids = {id(c) for c in chosen}  # the same objects: by identity, not field by field
            rest = [c for c in rest if id(c) not in chosen_ids]
        return chosen + rest[:extra]

    def assess(self, profile: Profile) -> Assessment:
        """The option's assessment of one profile: the cheapest feasible quote, materialised, with
        the others as its alternatives (arrays in a profile: chosen per element, see ``choose``).

        Every shortlisted offer is quoted at its expected figures, which decide the choice; only the
        offers answered — the chosen one and the alternatives listed — are quoted at every end."""
        at = self.columns(profile, EXPECTED)
        shortlist = self.shortlist(at)
        if at.arrays or len(shortlist) <= FEASIBLE_ALTERNATIVES + 1:  # every offer is answered: one pass
            quotes = self.quotes(at.at_ends(ALL), shortlist)
            if at.arrays:
                return self._assess_each(profile, quotes)
            return self._answer(profile, quotes, len(quotes))
        keys, infeasible, _ = self._expected(at, shortlist)
        order = sorted(range(len(shortlist)), key=lambda i: (infeasible[i], keys[i], shortlist[i].offer_label))
        feasible, refused = self.alternatives(shortlist, order, infeasible)
        answered = [shortlist[i] for i in (order[0], *feasible, *refused)]
        return self._answer(profile, self.quotes(at.at_ends(ALL), answered), len(shortlist))

    def _answer(self, profile: Profile, answered: list[Quote], compared: int) -> Assessment:
        """The chosen quote materialised with its alternatives: ``answered`` quoted at every end, the
        chosen one, then the next cheapest feasible and infeasible ones among them, of ``compared``
        offers."""
        keys = [q.effective.expected for q in answered]
        infeasible = [holds_anywhere(q.broken()) for q in answered]
        order = sorted(range(len(answered)), key=lambda i: (infeasible[i], keys[i], _label(answered[i])))
        feasible, refused = self.alternatives([q.candidate for q in answered], order, infeasible)
        best = self.materialise(profile, answered[order[0]])
        listed = [self._alternative(profile, answered[i]) for i in (*feasible, *refused)]
        return best.answered(tuple(listed), compared)

    def expected_choice(self, at: Columns, candidates: Sequence[Candidate]) -> tuple[list[float], list[bool]] | None:
        """Each candidate's cost per effective GPU-hour at the expected end of ``at`` (one profile, not
        arrays) and whether it breaks a hard constraint — the figures its quote would give, bit for bit,
        computed in one pass over the candidates' columns (the rented and platform options' kernels);
        None: the kernel has no such pass, and its candidates are quoted one by one (``quotes``)."""
        return None

    def _expected(
        self, at: Columns, candidates: Sequence[Candidate]
    ) -> tuple[list[float], list[bool], list[Quote] | None]:
        """What the choice among ``candidates`` reads: each one's cost per effective GPU-hour at the
        expected end and whether it breaks a hard constraint, from the kernel's one pass
        (``expected_choice``) where it has one and several candidates are compared, else from their
        quotes (then given too)."""
        if len(candidates) > 1 and not at.arrays and at.ends == EXPECTED:
            found = self.expected_choice(at, candidates)
            if found is not None:
                return found[0], found[1], None
        quotes = self.quotes(at, candidates)
        return [q.effective.expected for q in quotes], [holds_anywhere(q.broken()) for q in quotes], quotes

    def choose(self, profile: Profile, ends: tuple[int, ...] = ALL) -> tuple[Quote, int]:
        """The cheapest feasible quote (per element over arrays, with a single violation saying where
        every offer breaks a constraint) and how many were quoted: numbers only, for batches, Monte
        Carlo draws and insights. ``ends``: the ends of its ranges a caller reads (``EXPECTED``: the
        others are NaN)."""
        at = self.columns(profile, ends)
        shortlist = self.shortlist(at)
        # an offer refused for every profile (or draw) by a hard constraint is never chosen while another
        # is feasible: the others are quoted first, and every offer only where none of them is feasible
        viable = [c for c in shortlist if not self.refused(c, at)]
        if at.arrays:
            if viable and len(viable) < len(shortlist):
                chosen = select_each(self.quotes(at, viable))
                if not holds_anywhere(chosen.violations[0][1]):
                    return chosen, len(viable)
            every = self.quotes(at, shortlist)
            return select_each(every), len(every)
        if ends == ALL and len(viable) > 1:  # chosen at the expected figures, the chosen one quoted at every end
            at = at.at_ends(EXPECTED)
        pool = viable or shortlist
        keys, infeasible, quotes = self._expected(at, pool)
        if all(infeasible) and len(pool) < len(shortlist):  # none feasible: the cheapest of every offer
            pool = shortlist
            keys, infeasible, quotes = self._expected(at, pool)
        best = min(range(len(pool)), key=lambda i: (infeasible[i], keys[i], pool[i].offer_label)) if pool[1:] else 0
        if quotes is None or ends != at.ends:
            return self.quotes(at if ends == at.ends else at.at_ends(ends), [pool[best]])[0], len(pool)
        return quotes[best], len(pool)

    def alternatives(
        self, candidates: Sequence[Candidate | None], order: Sequence[int], infeasible: Sequence[bool]
    ) -> Listed:
        """The alternatives of the chosen offer ``order[0]`` (``order``: cheapest feasible first): the next
        ``FEASIBLE_ALTERNATIVES`` feasible offers and ``INFEASIBLE_ALTERNATIVES`` infeasible ones, by index.
        With ``one_per_provider``, the cheapest of each other provider first, then the cheapest of each plan
        not listed (of any provider) while places are left: never a second region of a listed plan."""
        rest = order[1:]
        feasible = [i for i in rest if not infeasible[i]]
        refused = [i for i in rest if infeasible[i]]
        if not self.one_per_provider:
            return feasible[:FEASIBLE_ALTERNATIVES], refused[:INFEASIBLE_ALTERNATIVES]
        providers = {_provider(candidates[order[0]])}
        plans = {_plan(candidates[order[0]])}
        listed = []
        for group, limit in ((feasible, FEASIBLE_ALTERNATIVES), (refused, INFEASIBLE_ALTERNATIVES)):
            picked: list[int] = []
            for by_provider in (True, False):  # each other provider's best, then other plans while room is left
                for i in group:
                    if len(picked) == limit:
                        break
                    c = candidates[i]
                    if i in picked or _plan(c) in plans or (by_provider and _provider(c) in providers):
                        continue
                    picked.append(i)
                    providers.add(_provider(c))
                    plans.add(_plan(c))
            listed.append(sorted(picked, key=group.index))
        return listed[0], listed[1]

    def refused(self, candidate: Candidate, at: Columns) -> bool:
        """Whether a hard constraint refuses the offer for every profile of ``at`` (every element of its
        arrays): such an offer is chosen only where no other is feasible (default: never refused)."""
        return False

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


def _provider(c: Candidate | None) -> str:
    return "" if c is None else c.offer.row.provider


def _plan(c: Candidate | None) -> tuple[str, str]:
    """A provider's plan: the offers of one plan in several regions are one alternative."""
    return ("", "") if c is None else (c.offer.row.provider, c.plan)


#: what a kernel may ask of the other loaded options by role (``app.host.options`` answers it)
Roles = Callable[[str, Knowledge, str, dt.date], "Kernel | None"]


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
