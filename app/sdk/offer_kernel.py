"""The kernel of an option that buys offers, scored on the shared methodology (docs/plugins.md).

``OfferKernel`` is a ``Kernel`` for an option that buys offers (instance-hours, platform GPU-hours,
servers): the offer's hard constraints, efficiency, stability, usability, the priced extras and the
one money scale (``app.sdk.model``), each computed once per profile where candidates share it, and
the sentences of the common parts when a quote is materialised. A subclass writes how its
candidates are compiled, how each is priced, and how its own lines and notes read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from app.sdk import constraints, model
from app.sdk.errors import MissingKnowledge
from app.sdk.kernel import Candidate, Kernel, Quote, refs
from app.sdk.knowledge import AvailabilityRule, Price, SourceRef
from app.sdk.model import GENERAL, ZERO
from app.sdk.pricing import Line, holds
from app.sdk.ranges import Range, ceil_number
from app.sdk.text import msg
from app.sdk.types import Assessment, Cost, Efficiency, LineItem, Profile, Stability, Violation


class OfferKernel(Kernel):
    """The kernel of an option that buys offers, scored on the shared methodology."""

    #: what the team does before each run on this option (``Usability.setup_steps``: a message, or plain text)
    setup_steps: ClassVar[str]
    #: the plans whose capacity the provider may take back at any time (spot): they serve only a profile
    #: whose every job tolerates preemption (``preemptible_share`` 1)
    preemptible_plans: ClassVar[frozenset[str]] = frozenset()

    # ---- constants the option's candidates share (compiled once per kernel) --------------------

    def lead(self, c: Candidate) -> Range:
        """The offer's lead time where its source gives one (a derived offer's queue, else its row's),
        else the option's ``lead_time_days``."""
        return c.offer.lead_time_days or c.offer.row.lead_time_days or self.value("lead_time_days")

    def lead_refs(self, c: Candidate) -> tuple[SourceRef, ...]:
        """The source of ``lead`` when it is the option's assumption (none for the offer's own)."""
        return () if c.offer.lead_time_days or c.offer.row.lead_time_days else (self.ref("lead_time_days"),)

    def jurisdiction(self, c: Candidate, profile: Profile) -> str:
        """Where the offer's hardware is: its region (an option that buys hardware for the buyer says
        the buyer's country)."""
        return c.offer.row.region

    def availability(self, c: Candidate, profile: Profile) -> list[AvailabilityRule]:
        """The export controls on the offer's GPU model where its hardware is (``app.sdk.constraints``)."""
        return constraints.availability(self, c, profile)

    def setup_share(self) -> Range:
        found: Range | None = self.compiled.get("setup_share")
        if found is None:
            found = model.setup_share(self.value("setup_minutes_per_run"), self.value("training_run_hours"))
            self.compiled["setup_share"] = found
        return found

    def efficiency_refs(self, *pending: Sequence[SourceRef]) -> tuple[SourceRef, ...]:
        """The sources of ``Efficiency``: what the option read before it (``pending``), then its three
        assumptions."""
        return refs(
            *pending,
            (self.ref("setup_minutes_per_run"), self.ref("execution_efficiency"), self.ref("training_run_hours")),
        )

    def stability_refs(self, detection_key: str, restart_key: str) -> tuple[SourceRef, ...]:
        return refs(
            (
                self.ref("gpu_failure_rate_per_gpu_year"),
                self.ref(detection_key),
                self.ref(restart_key),
                self.ref("checkpoint_write_minutes"),
            )
        )

    def usability_refs(self, profile: Profile, *pending: Sequence[SourceRef]) -> tuple[SourceRef, ...]:
        return refs(
            *pending,
            (self.ref("infra_fte_base"), self.ref("infra_fte_per_server")),
            (self.ref(f"ops_coverage_{profile.ops_team}"),),
        )

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

    def machines(self, c: Candidate, profile: Profile) -> Any:
        """The machines a team looks after for the offer: its instances or servers, or for an offer
        billed per GPU as many as the GPU's servers hold (``Candidate.per_machine``)."""
        return ceil_number(profile.gpus / c.per_machine)

    # ---- constraints ---------------------------------------------------------------------------

    def acceptable(self, c: Candidate, profile: Profile) -> bool:
        return not any(holds(where) for _, where in self.constraints(c, profile, self.lead(c)))

    def constraints(self, c: Candidate, profile: Profile, lead: Range) -> list[tuple[str, Any]]:
        """The hard constraints the offer breaks (``app.sdk.constraints``): codes and where they hold."""
        return constraints.hard_constraints(self, c, profile, lead)

    def violation_reason(self, profile: Profile, quote: Quote, code: str) -> str:
        """The sentence of a broken constraint (the shared ones; an option adds its own codes)."""
        return constraints.shared_reason(self, profile, quote, code)

    # ---- the shared methodology, per profile ----------------------------------------------------

    def efficiency(self, profile: Profile, lead: Range, memo: dict[Any, Any], waits: Any = True) -> Efficiency:
        key = ("efficiency", id(lead), id(waits) if isinstance(waits, np.ndarray) else waits)
        found: Efficiency | None = memo.get(key)
        if found is None:
            execution = self.value("execution_efficiency")
            productive = model.productive_share(lead, execution, self.setup_share(), profile.horizon_years, waits=waits)
            found = Efficiency(lead, self.value("setup_minutes_per_run"), execution, productive, ())
            memo[key] = found
        return found

    def stability(
        self,
        profile: Profile,
        memo: dict[Any, Any],
        *,
        detection_key: str = "detection_hours",
        restart_key: str = "restart_hours",
        extra_rate: str | None = None,
    ) -> Stability:
        """``app.sdk.model.stability_of`` from the option's assumptions; ``extra_rate`` names an
        assumption added to the failure rate (spot preemptions)."""
        key = ("stability", detection_key, restart_key, extra_rate)
        found: Stability | None = memo.get(key)
        if found is None:
            rate = self.value("gpu_failure_rate_per_gpu_year")
            if extra_rate is not None:
                rate = rate + self.value(extra_rate)
            write = self.value("checkpoint_write_minutes") * (1 / model.MINUTES_PER_HOUR)
            found = model.stability_of(
                profile.job_gpus,
                profile.useful_gpu_hours_per_year,
                rate,
                self.value(detection_key),
                self.value(restart_key),
                write,
            )
            memo[key] = found
        return found

    def software_work(self, machines: Any, share: Any = 1.0) -> Range:
        return model.software_work_of(self.value("infra_fte_base"), self.value("infra_fte_per_server"), machines, share)

    def machine_work(self, c: Candidate, profile: Profile, memo: dict[Any, Any], share: Any = 1.0) -> Range:
        """``software_work`` for the machines of ``c`` (``machines``): the same for every candidate with
        as many GPUs per machine, computed once per profile."""
        key = ("work", c.per_machine)
        found: Range | None = memo.get(key)
        if found is None:
            found = self.software_work(self.machines(c, profile), share)
            memo[key] = found
        return found

    def finish(
        self,
        profile: Profile,
        c: Candidate,
        memo: dict[Any, Any],
        *,
        cost: Cost,
        efficiency: Efficiency,
        stability: Stability,
        infra_fte: Range,
        lines: tuple[Line, ...],
        violations: list[tuple[str, Any]],
        waiting_days: Range = ZERO,
        priced_work: Range | None = None,
        detail: Any = None,
    ) -> Quote:
        """The quote of a candidate priced by the option (``cost`` and its ``lines``): usability, the
        priced extras, the one money scale and the stall constraint (``app.sdk.model.assessment``)."""
        region = c.offer.row.region
        key = ("usability", id(infra_fte), id(priced_work), region)
        shared = memo.get(key)
        if shared is None:  # the same for candidates that share the work and the region
            coverage = self.value(f"ops_coverage_{profile.ops_team}")
            usability = model.usability_of(infra_fte, coverage, profile.team_size, self.setup_steps)
            unmet = usability.infra_fte_unmet if priced_work is None else priced_work * coverage.complement()
            work_lines: list[Line] = []
            engineer = self.engineer(region)
            if engineer is not None:
                yearly = unmet * engineer[0]
                work_lines.append(("infrastructure_work", yearly, ZERO, yearly * profile.horizon_years))
            shared = memo[key] = (usability, work_lines, infra_fte, priced_work)
        usability, work_lines = shared[0], shared[1]
        extras = list(work_lines)
        waiting = model.waiting_cost(waiting_days, profile.delay_cost_per_day)
        if waiting is not None:
            extras.append(("waiting", ZERO, ZERO, waiting))
        useful_total = cost.useful_gpu_hours_total if cost.useful_gpu_hours_total is not None else 0.0
        effective = model.effective_cost(
            cost.total, [e[3] for e in extras], efficiency.execution_efficiency, stability.goodput, useful_total
        )
        stalled = model.stalled(stability.goodput)
        if holds(stalled):
            violations = [*violations, ("stalled", stalled)]
        return Quote(
            c,
            _with_effective(cost, effective),
            efficiency,
            stability,
            usability,
            lines,
            tuple(extras),
            tuple(violations),
            detail,
        )

    # ---- words, for what is answered ----------------------------------------------------------------

    def assessment_of(
        self,
        profile: Profile,
        quote: Quote,
        *,
        breakdown: Sequence[LineItem],
        notes: tuple[str, ...],
        efficiency_refs: tuple[SourceRef, ...],
        stability_refs: tuple[SourceRef, ...],
        usability_refs: tuple[SourceRef, ...],
    ) -> Assessment:
        """The materialised assessment of ``quote``: the option's own breakdown lines and notes, and the
        shared parts' sources, extras lines and violation sentences."""
        c = quote.candidate
        assert c is not None
        extras = []
        for key, annual, upfront, total in quote.extras:
            if key == "infrastructure_work":
                engineer = self.engineer(c.offer.row.region)
                assert engineer is not None
                coverage_ref = self.ref(f"ops_coverage_{profile.ops_team}")
                extras.append(
                    LineItem(
                        "infrastructure_work",
                        msg("line.infrastructure_work", "Infrastructure work left to the team, at an engineer's cost"),
                        annual,
                        upfront,
                        "infra_fte_unmet × engineer_time per FTE-year × horizon_years",
                        (engineer[1].ref, *refs((coverage_ref,), engineer[2])),
                        total=total,
                    )
                )
            else:
                extras.append(
                    LineItem(
                        "waiting",
                        msg("line.waiting", "Waiting for the compute, at delay_cost_per_day"),
                        annual,
                        upfront,
                        "lead_time_days × delay_cost_per_day",
                        (),
                        total=total,
                    )
                )
        cost = quote.cost
        violations = tuple(
            Violation(self.violation_reason(profile, quote, code), where) for code, where in quote.violations
        )
        licensed = [r for r in self.availability(c, profile) if r.effect == "licence_required"]
        if licensed:  # available, but only with an export licence: said, not refused
            place = self.jurisdiction(c, profile)
            notes = (
                *notes,
                msg(
                    "note.licence_required",
                    f"{c.offer.row.gpu_model} needs an export licence for {place} ({licensed[0].source}).",
                    gpu_model=c.offer.row.gpu_model,
                    jurisdiction=place,
                    source=licensed[0].source,
                ),
            )
        return Assessment(
            option=self.option,
            cost=Cost(
                annual=cost.annual,
                total=cost.total,
                upfront=cost.upfront,
                per_useful_gpu_hour=cost.per_useful_gpu_hour,
                useful_gpu_hours=cost.useful_gpu_hours,
                paid_gpu_hours=cost.paid_gpu_hours,
                committed=cost.committed,
                breakdown=tuple(breakdown),
                npv=cost.npv,
                equivalent_annual=cost.equivalent_annual,
                useful_gpu_hours_total=cost.useful_gpu_hours_total,
                per_effective_gpu_hour=cost.per_effective_gpu_hour,
                extras=tuple(extras),
            ),
            efficiency=_sourced(quote.efficiency, efficiency_refs),
            stability=_sourced(quote.stability, stability_refs),
            usability=_sourced(quote.usability, usability_refs),
            notes=notes,
            offer=c.info,
            violations=violations,
        )


def _sourced(record: Any, sources: tuple[SourceRef, ...]) -> Any:
    return dataclasses.replace(record, sources=sources)


def _with_effective(c: Cost, effective: Range) -> Cost:
    """``c`` with its cost per effective GPU-hour (by its constructor: ``dataclasses.replace`` costs
    several times as much, once per candidate quoted)."""
    return Cost(
        annual=c.annual,
        total=c.total,
        upfront=c.upfront,
        per_useful_gpu_hour=c.per_useful_gpu_hour,
        useful_gpu_hours=c.useful_gpu_hours,
        paid_gpu_hours=c.paid_gpu_hours,
        committed=c.committed,
        breakdown=c.breakdown,
        npv=c.npv,
        equivalent_annual=c.equivalent_annual,
        useful_gpu_hours_total=c.useful_gpu_hours_total,
        per_effective_gpu_hour=effective,
        extras=c.extras,
    )
