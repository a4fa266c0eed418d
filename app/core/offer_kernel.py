"""The kernel of an option that buys offers, scored on the shared methodology (docs/plugins.md).

``OfferKernel`` is a ``Kernel`` for an option that buys offers (instance-hours, platform GPU-hours,
servers): the offer's hard constraints, efficiency, stability, usability, the priced extras and the
one money scale (``app.core.model``), each computed once per profile where candidates share it, and
the sentences of the common parts when a quote is materialised. A subclass writes how its
candidates are compiled, how each is priced, and how its own lines and notes read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from app.core import answers, constraints, model
from app.core.capital import Bridge
from app.core.columns import ALL, NAN, Columns, holds, where
from app.core.errors import MissingKnowledge
from app.core.kernel import Candidate, Kernel, Quote, refs
from app.core.knowledge import AvailabilityRule, Price, SourceRef
from app.core.model import GENERAL, ZERO
from app.core.offer_reads import OfferReads
from app.core.pricing import annuity, whole_terms
from app.core.quotes import Line
from app.core.ranges import Range
from app.core.types import Efficiency, Profile, Stability, Usability


class OfferKernel(OfferReads, Kernel):
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

    # ---- the shared methodology, per profile (each computed once per call where candidates share it) ----

    def scaling(self, c: Candidate, at: Columns) -> tuple[str, Any] | None:
        """Where the largest job spans several of the offer's nodes: the assumption that scales it (its
        fabric's ``multi_node_scaling_<fabric>``) and where it spans them (a bool, or an array over a batch);
        None where it fits one node (``app.core.constraints.scaling_key``)."""
        key = constraints.scaling_key(c)
        if key is None:
            return None
        spans = at.gt(at.job_gpus, c.node_gpus)
        return (key, spans) if holds(spans) else None

    def efficiency(
        self, at: Columns, lead: Range, waits: Any = True, scaling: tuple[str, Any] | None = None
    ) -> Efficiency:
        """The offer's efficiency (``app.core.model.productive_share``) for its lead time; ``waits``: whether
        the team waits for the compute (per profile over a batch), not bridging it on other compute;
        ``scaling`` (``OfferKernel.scaling``): a job across nodes runs at ``execution_efficiency ×
        multi_node_scaling_<fabric>`` — applied here once, so productive share and effective hours read it."""
        spans = None if scaling is None else scaling[1]
        key = (
            id(lead),
            id(waits) if isinstance(waits, np.ndarray) else bool(waits),
            None if scaling is None else scaling[0],
            id(spans) if isinstance(spans, np.ndarray) else spans,
        )
        memo = at.memo.get("efficiency")
        if memo is None:
            memo = at.memo["efficiency"] = {}
        found = memo.get(key)
        if found is None:
            execution = self.value("execution_efficiency")
            if scaling is not None:
                factor = self.value(scaling[0])
                execution = Range.elementwise(*(where(spans, execution[e] * factor[e], execution[e]) for e in ALL))
            productive = model.productive_share(
                lead, execution, self.setup_share(), at.horizon, waits=waits, ends=at.ends
            )
            efficiency = Efficiency(lead, self.value("setup_minutes_per_run"), execution, productive, ())
            # the memo keeps what its key names alive: an id is only unique while its object lives
            found = memo[key] = (efficiency, lead, waits, spans)
        result: Efficiency = found[0]
        return result

    def stability(
        self,
        at: Columns,
        *,
        detection_key: str = "detection_hours",
        restart_key: str = "restart_hours",
        extra_rate: str | None = None,
    ) -> Stability:
        """``app.core.model.stability_of`` from the option's assumptions; ``extra_rate`` names an
        assumption added to the failure rate (spot preemptions)."""
        key = ("stability", detection_key, restart_key, extra_rate)
        found: Stability | None = at.memo.get(key)
        if found is None:
            rate, write = self._failures(extra_rate)
            found = at.memo[key] = model.stability_of(
                at.job_gpus, at.useful, rate, self.value(detection_key), self.value(restart_key), write, at.ends
            )
        return found

    def _failures(self, extra_rate: str | None) -> tuple[Range, Range]:
        """The failure rate per GPU-year (plus ``extra_rate``) and the checkpoint write time in hours."""
        key = f"failures:{extra_rate}"
        found: tuple[Range, Range] | None = self.compiled.get(key)
        if found is None:
            rate = self.value("gpu_failure_rate_per_gpu_year")
            if extra_rate is not None:
                rate = rate + self.value(extra_rate)
            write = self.value("checkpoint_write_minutes") * (1 / model.MINUTES_PER_HOUR)
            found = self.compiled[key] = (rate, write)
        return found

    def software_work(self, machines: Any, share: Any = 1.0, ends: tuple[int, ...] = ALL) -> Range:
        """The team's infrastructure work in FTE for ``machines`` (``infra_fte_base`` + ``infra_fte_per_server``
        per machine), times ``share`` (the share of the year the machines are held)."""
        return model.software_work_of(
            self.value("infra_fte_base"), self.value("infra_fte_per_server"), machines, share, ends
        )

    def machine_work(self, c: Candidate, at: Columns, share: Any = 1.0) -> Range:
        """``software_work`` for the machines of ``c`` (``machines``): the same for every candidate with
        as many GPUs per machine, computed once per call."""
        key = ("work", c.per_machine)
        found: Range | None = at.memo.get(key)
        if found is None:
            found = at.memo[key] = self.software_work(self.machines(c, at), share, at.ends)
        return found

    def work(self, at: Columns, infra_fte: Range, priced_work: Range | None, region: str) -> tuple[Usability, Any]:
        """The team's usability for ``infra_fte`` of infrastructure work, and the line pricing the part of
        ``priced_work`` (default: all of it) its ops staff do not absorb at the region's engineer cost
        (None where the region has none): shared by candidates with the same work and region."""
        # by value for numbers (candidates of one size share it), by identity for arrays (kept alive below)
        work_key, priced_key = (id(infra_fte), id(priced_work)) if at.arrays else (infra_fte, priced_work)
        key = (work_key, priced_key, region)
        memo = at.memo.get("work")
        if memo is None:
            memo = at.memo["work"] = {}
        found = memo.get(key)
        if found is None:
            coverage = self.value(f"ops_coverage_{at.profile.ops_team}")
            usabilities = at.memo.get("usability")
            if usabilities is None:
                usabilities = at.memo["usability"] = {}
            usability: Usability | None = usabilities.get((work_key, priced_key))
            if usability is None:
                # work the option's own priced staff do (an own cluster's hired ops teams) is neither
                # priced again nor taken from the engineers' focus: only ``priced_work`` can fall on them
                usability = model.usability_of(
                    infra_fte, coverage, at.team_size, self.setup_steps, at.ends, engineers_work=priced_work
                )
                usabilities[(work_key, priced_key)] = usability
            unmet = usability.infra_fte_unmet
            line: Line | None = None
            engineer = self.engineer(region)
            if engineer is not None:
                price = engineer[0]
                yearly = at.range([unmet[e] * price[e] for e in at.ends])
                line = ("infrastructure_work", yearly, ZERO, at.range([yearly[e] * at.horizon for e in at.ends]))
            found = memo[key] = (usability, line, infra_fte, priced_work)
        return found[0], found[1]

    def terms(self, at: Columns, term: float, rate: Any) -> tuple[Any, Any]:
        """Years paid for a commitment of ``term`` years covering the horizon (``pricing.whole_terms``) and
        their annuity factor at ``rate``: the same for every candidate of the term."""
        key = ("terms", term, id(rate) if isinstance(rate, np.ndarray) else rate)
        found = at.memo.get(key)
        if found is None:
            years = whole_terms(at.horizon, term)
            found = at.memo[key] = (years, annuity(years, rate), rate)
        return found[0], found[1]

    def effective_hours(
        self, at: Columns, efficiency: Efficiency, stability: Stability, useful_total: Any
    ) -> tuple[list[Any], Any]:
        """Per end, the effective GPU-hours the money buys (``app.core.model.effective_work``), and where
        the job stalls: the same for candidates that share efficiency, stability and useful hours."""
        memo = at.memo.get("effective")
        if memo is None:
            memo = at.memo["effective"] = {}
        key = (
            id(efficiency),
            id(stability),
            id(useful_total) if isinstance(useful_total, np.ndarray) else useful_total,
        )
        found = memo.get(key)
        if found is None:
            execution, goodput = efficiency.execution_efficiency, stability.goodput
            works: list[Any] = [NAN, NAN, NAN]
            for e in at.ends:
                works[e] = model.effective_work(e, execution, goodput, useful_total)
            # the memo keeps what its key names alive: an id is only unique while its object lives
            found = memo[key] = (works, model.stalled(goodput), efficiency, stability, useful_total)
        return found[0], found[1]

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
            effective = tuple.__new__(Range, (NAN, (figure + _added(extras, 1)) / works[1], NAN))
        else:
            useful_each, effective_each = [], []
            for e in at.ends:
                figure = total[e]
                useful_each.append(figure / useful_total)
                effective_each.append((figure + _added(extras, e)) / works[e])
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

    def extras(
        self, at: Columns, c: Candidate, infra_fte: Range, priced_work: Range | None, waiting_days: Range
    ) -> tuple[Usability, tuple[Line, ...]]:
        """The team's usability for the offer and the priced extras ``finish`` adds to its cost per effective
        GPU-hour: the infrastructure work its ops staff do not absorb (``work``), and the days waited for
        the compute where the profile prices waiting."""
        usability, work_line = self.work(at, infra_fte, priced_work, c.offer.row.region)
        extras: tuple[Line, ...] = () if work_line is None else (work_line,)
        per_day = at.delay_per_day
        if per_day is not None:
            extras += (("waiting", ZERO, ZERO, at.range([waiting_days[e] * per_day for e in at.ends])),)
        return usability, extras

    def expected_keys(self, at: Columns, totals: np.ndarray, parts: Sequence[Parts]) -> tuple[list[float], list[bool]]:
        """What ``finish`` gives the choice among several candidates at the expected end of one profile,
        from their expected total costs (``totals``: an array over the candidates, made in one pass) and
        what each shares with others (``parts``, one per candidate, in order: the candidate, its efficiency,
        stability, infrastructure work in FTE, lead time in days and the hard constraints it breaks, as its
        quote passes them to ``finish``): the cost per effective GPU-hour, as
        ``finish`` computes it bit for bit — ``(total + extras) ÷ effective GPU-hours`` — over the
        candidates at once, and whether each breaks a hard constraint (one it was given, or a job that
        stalls). For a kernel whose candidates use the compute for the whole horizon."""
        added, works, infeasible = [], [], []
        useful_total = at.useful_total
        for c, efficiency, stability, infra_fte, waiting_days, violations in parts:
            extras = self.extras(at, c, infra_fte, None, waiting_days)[1]
            added.append(_added(extras, 1))
            each, stalled = self.effective_hours(at, efficiency, stability, useful_total)
            works.append(each[1])
            infeasible.append(bool(violations) or holds(stalled))
        effective: list[float] = ((totals + np.array(added)) / np.array(works)).tolist()
        return effective, infeasible

    # ---- words, for what is answered ----------------------------------------------------------------

    #: the materialised assessment of a quote: the option's own breakdown lines and notes, and the shared
    #: parts' sources, extras lines and violation sentences (``app.core.answers.assessment``, this kernel
    #: its first argument): ``self.assessment_of(profile, quote, breakdown=…, notes=…, efficiency_refs=…,
    #: stability_refs=…, usability_refs=…)``
    assessment_of = answers.assessment


#: what ``OfferKernel.expected_keys`` reads of one candidate: the candidate, its efficiency, stability,
#: infrastructure work in FTE, lead time in days (waited where the profile prices waiting) and the hard
#: constraints it breaks
Parts = tuple[Candidate, Efficiency, Stability, Range, Range, list[tuple[str, Any]]]


def _added(extras: Sequence[Line], e: int) -> Any:
    """What the priced extras add to an offer's cost at end ``e`` (their totals, in order)."""
    added = 0.0
    for line in extras:
        added = added + line[3][e]
    return added
