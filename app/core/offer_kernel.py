"""The kernel of an option that buys offers, scored on the shared methodology (docs/plugins.md).

``OfferKernel`` is a ``Kernel`` for an option that buys offers (instance-hours, platform GPU-hours,
servers): the offer's hard constraints, efficiency, stability, usability, the priced extras and the
one money scale (``app.core.model``), each computed once per profile where candidates share it
(``app.core.offer_parts``), and the sentences of the common parts when a quote is materialised. A
subclass writes how its candidates are compiled, how each is priced, and how its own lines and notes
read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from app.core import answers, constraints, model
from app.core.capital import Bridge
from app.core.columns import NAN, Columns, holds
from app.core.errors import MissingKnowledge
from app.core.kernel import Candidate, Kernel, Quote, refs
from app.core.knowledge import AvailabilityRule, Price, SourceRef
from app.core.model import GENERAL, ZERO
from app.core.offer_parts import OfferParts, added_at
from app.core.offer_reads import OfferReads
from app.core.quotes import Line
from app.core.ranges import Range
from app.core.types import Efficiency, Profile, Stability


class OfferKernel(OfferParts, OfferReads, Kernel):
    """The kernel of an option that buys offers, scored on the shared methodology."""

    #: what the team does before each run on this option (``Usability.setup_steps``: a message, or plain text)
    setup_steps: ClassVar[str]
    #: the plans whose capacity the provider may take back at any time (spot): they serve only a profile
    #: whose every job tolerates preemption (``preemptible_share`` 1)
    preemptible_plans: ClassVar[frozenset[str]] = frozenset()
    #: what the shared methodology reads: efficiency, failures, the team's work and an offer's lead time
    #: where its row gives none (a subclass adds its own; ``stability``'s detection and restart keys too)
    requires: ClassVar[tuple[str, ...]] = (
        "execution_efficiency",
        "setup_minutes_per_run",
        "training_run_hours",
        "gpu_failure_rate_per_gpu_year",
        "checkpoint_write_minutes",
        "infra_fte_base",
        "infra_fte_per_server",
        "ops_coverage_none",
        "ops_coverage_basic",
        "ops_coverage_professional",
        "lead_time_days",
    )

    # ---- constants the option's candidates share (compiled once per kernel) --------------------

    def prepare(self, candidate: Candidate) -> Candidate:
        """The candidate with its lead time and the facts its hard constraints test, read once."""
        lead = self.lead(candidate)
        return dataclasses.replace(candidate, lead=lead, checks=constraints.checks(self, candidate, lead))

    def lead(self, c: Candidate) -> Range:
        """The offer's lead time where its source gives one (a derived offer's queue, else its row's),
        else the option's ``lead_time_days``."""
        if c.lead is not None:
            return c.lead
        return c.offer.lead_time_days or c.offer.row.lead_time_days or self.value("lead_time_days")

    def lead_refs(self, c: Candidate) -> tuple[SourceRef, ...]:
        """The source of ``lead`` when it is the option's assumption (none for the offer's own)."""
        return () if c.offer.lead_time_days or c.offer.row.lead_time_days else (self.ref("lead_time_days"),)

    def jurisdiction(self, c: Candidate, profile: Profile) -> str:
        """Where the offer's hardware is: its region (an option that buys hardware for the buyer says
        the buyer's country). Rules of a ``location`` bind there (its country: none for ``global``); rules
        for buyers bind by ``buyer_country`` whatever this says (``app.core.availability``)."""
        return c.offer.row.region

    def availability(self, c: Candidate, profile: Profile) -> list[AvailabilityRule]:
        """The availability rules that bind the offer for the profile (``app.core.availability``)."""
        return constraints.availability(self, c, profile)

    def setup_share(self) -> Range:
        found: Range | None = self.compiled.get("setup_share")
        if found is None:
            found = model.setup_share(self.value("setup_minutes_per_run"), self.value("training_run_hours"))
            self.compiled["setup_share"] = found
        return found

    # the sources of each part, made once per kernel for each set of sources read before them

    def efficiency_refs(self, *pending: Sequence[SourceRef]) -> tuple[SourceRef, ...]:
        """The sources of ``Efficiency``: what the option read before it (``pending``), then its three
        assumptions."""
        keys = ("setup_minutes_per_run", "execution_efficiency", "training_run_hours")
        return self.refs_of(("efficiency_refs", pending), pending, keys)

    def stability_refs(self, detection_key: str, restart_key: str) -> tuple[SourceRef, ...]:
        """The sources of ``Stability``: the failure rate, the detection and restart times the option
        reads (``detection_key``, ``restart_key``) and the checkpoint write time."""
        keys = ("gpu_failure_rate_per_gpu_year", detection_key, restart_key, "checkpoint_write_minutes")
        return self.refs_of(("stability_refs", keys), (), keys)

    def usability_refs(self, profile: Profile, *pending: Sequence[SourceRef]) -> tuple[SourceRef, ...]:
        """The sources of ``Usability``: what the option read before it (``pending``), the work per
        machine and the coverage of the profile's ops team."""
        keys = ("infra_fte_base", "infra_fte_per_server", f"ops_coverage_{profile.ops_team}")
        return self.refs_of(("usability_refs", keys, pending), pending, keys)

    def refs_of(self, key: Any, pending: Sequence[Sequence[SourceRef]], keys: Sequence[str]) -> tuple[SourceRef, ...]:
        """``pending`` sources, then those of the assumptions ``keys``, each once (cached under ``key``)."""
        found: tuple[SourceRef, ...] | None = self.compiled.get(key)
        if found is None:
            found = self.compiled[key] = refs(*pending, tuple(self.ref(k) for k in keys))
        return found

    def engineer(self, region: str) -> tuple[Range, Price, tuple[SourceRef, ...]] | None:
        """The knowledge base's ``engineer_time`` price for ``region`` in the kernel's currency, its row
        and the rates that converted it (None where there is none, or no rate converts it)."""
        key = f"engineer:{region}"
        cache = self.compiled
        if key in cache:
            found: tuple[Range, Price, tuple[SourceRef, ...]] | None = cache[key]
            return found
        rows = [
            r
            for r in self.knowledge.component(GENERAL, "engineer_time", as_of=self.as_of, region=region)
            if r.unit == "per_fte_year"
        ]
        found = None
        if rows:
            try:
                conversion = self.knowledge.conversion(rows[0].currency, self.currency, self.as_of)
            except MissingKnowledge:  # no exchange rate into the currency
                conversion = None
            if conversion is not None:
                found = (rows[0].value * conversion.factor, rows[0], conversion.refs)
        cache[key] = found
        return found

    def bridge(self, at: Columns) -> Bridge | None:
        """What the option offers while another option's capacity is procured, for the option that declares
        ``bridges_lead_time`` (its yearly cost and sources at ``at``'s ends), or None: it offers none."""
        return None

    def machines(self, c: Candidate, at: Columns) -> Any:
        """The machines a team looks after for the offer: its instances or servers, or for an offer
        billed per GPU as many as the GPU's servers hold (``Candidate.per_machine``)."""
        return at.ceil(at.gpus / c.per_machine)

    # ---- constraints ---------------------------------------------------------------------------

    def acceptable(self, c: Candidate, at: Columns) -> bool:
        """Whether the offer breaks none of its hard constraints (``constraints``) for any profile."""
        return not self.constraints(c, at)

    def refused(self, c: Candidate, at: Columns) -> bool:
        """Whether a hard constraint refuses the offer for every profile (a batch's included)."""
        return any(where is True or bool(np.all(where)) for _, where in self.constraints(c, at))

    def constraints(self, c: Candidate, at: Columns) -> list[tuple[str, Any]]:
        """The hard constraints the offer breaks (``app.core.constraints``): codes and where they hold
        (computed once per candidate and call)."""
        memo = at.constraints
        found: list[tuple[str, Any]] | None = memo.get(id(c))
        if found is None:
            found = memo[id(c)] = constraints.hard_constraints(self, c, at)
        return list(found)

    def violation_reason(self, profile: Profile, quote: Quote, code: str) -> str:
        """The sentence of a broken constraint (the shared ones; an option adds its own codes)."""
        return constraints.shared_reason(self, profile, quote, code)

    # ---- a quote ---------------------------------------------------------------------------------

    def finish(
        self,
        at: Columns,
        c: Candidate,
        *,
        annual: Range,
        total: Range,
        paid: Range,
        committed: bool,
        efficiency: Efficiency,
        stability: Stability,
        infra_fte: Range,
        lines: tuple[Line, ...],
        violations: list[tuple[str, Any]],
        upfront: Range = ZERO,
        npv: Range | None = None,
        equivalent_annual: Range | None = None,
        operating_years: Any = None,
        waiting_days: Range = ZERO,
        priced_work: Range | None = None,
        detail: Any = None,
    ) -> Quote:
        """The quote of a candidate priced by the option (its cost figures and ``lines`` at the ends
        ``at.ends``): cost per useful GPU-hour over the years the compute is used (``operating_years``,
        default the horizon), usability, the priced extras, the one money scale and the stall
        constraint (docs/methodology.md "One money scale")."""
        usability, extras = self.extras(at, c, infra_fte, priced_work, waiting_days)
        if operating_years is None:
            useful_total = at.useful_total
        else:
            useful_total = at.useful * operating_years
            if at.arrays and np.any(np.asarray(useful_total) <= 0):
                raise ZeroDivisionError("division by a range that reaches zero")
        works, stalled = self.effective_hours(at, efficiency, stability, useful_total)
        if len(at.ends) == 1:  # the expected end alone
            figure = total[1]
            per_useful = tuple.__new__(Range, (NAN, figure / useful_total, NAN))
            effective = tuple.__new__(Range, (NAN, (figure + added_at(extras, 1)) / works[1], NAN))
        else:
            useful_each, effective_each = [], []
            for e in at.ends:
                figure = total[e]
                useful_each.append(figure / useful_total)
                effective_each.append((figure + added_at(extras, e)) / works[e])
            per_useful, effective = at.range(useful_each), at.range(effective_each)
        if holds(stalled):
            violations = [*violations, ("stalled", stalled)]
        return Quote(
            c,
            annual,
            total,
            upfront,
            paid,
            per_useful,
            effective,
            at.useful,
            useful_total,
            committed,
            efficiency,
            stability,
            usability,
            lines,
            extras,
            tuple(violations),
            npv,
            equivalent_annual,
            detail,
        )

    # ---- words, for what is answered ----------------------------------------------------------------

    #: the materialised assessment of a quote: the option's own breakdown lines and notes, and the shared
    #: parts' sources, extras lines and violation sentences (``app.core.answers.assessment``, this kernel
    #: its first argument): ``self.assessment_of(profile, quote, breakdown=…, notes=…, efficiency_refs=…,
    #: stability_refs=…, usability_refs=…)``
    assessment_of = answers.assessment
