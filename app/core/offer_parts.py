"""What the offers of an option share for one profile, as methods of its kernel (SDK v4): the
methodology's efficiency, stability, the team's work and its priced extras, the terms of a commitment and
the effective GPU-hours the money buys — each computed once per call where candidates share it (in the
columns' memo) — and the choice's pass over several candidates at the expected end (``expected_keys``).
``OfferKernel`` is built on it; docs/methodology.md says what each formula is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from app.core import constraints, model
from app.core.columns import ALL, NAN, Columns, holds, where
from app.core.model import ZERO
from app.core.pricing import annuity, whole_terms
from app.core.quotes import Candidate, Line
from app.core.ranges import Range
from app.core.types import Efficiency, Stability, Usability

if TYPE_CHECKING:
    from app.core.knowledge import Price, SourceRef


class OfferParts:
    """The shared parts of an ``OfferKernel``'s quotes."""

    compiled: dict[Any, Any]
    setup_steps: ClassVar[str]  # OfferKernel's

    if TYPE_CHECKING:

        def value(self, key: str) -> Range: ...  # Kernel's

        def setup_share(self) -> Range: ...  # OfferKernel's

        def machines(self, c: Candidate, at: Columns) -> Any: ...  # OfferKernel's

        def engineer(self, region: str) -> tuple[Range, Price, tuple[SourceRef, ...]] | None: ...  # OfferKernel's

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
        what each shares with others (``parts``, one per candidate, in order: the candidate, its
        efficiency, stability, infrastructure work in FTE, lead time in days and the hard constraints it
        breaks, as its quote passes them to ``finish``): the cost per effective GPU-hour as ``finish``
        computes it, bit for bit — ``(total + extras) ÷ effective GPU-hours`` — over the candidates at
        once, and whether each breaks a hard constraint (one it was given, or a job that stalls). For a
        kernel whose candidates use the compute for the whole horizon."""
        added, works, infeasible = [], [], []
        useful_total = at.useful_total
        for c, efficiency, stability, infra_fte, waiting_days, violations in parts:
            extras = self.extras(at, c, infra_fte, None, waiting_days)[1]
            added.append(added_at(extras, 1))
            each, stalled = self.effective_hours(at, efficiency, stability, useful_total)
            works.append(each[1])
            infeasible.append(bool(violations) or holds(stalled))
        effective: list[float] = ((totals + np.array(added)) / np.array(works)).tolist()
        return effective, infeasible


#: what ``OfferKernel.expected_keys`` reads of one candidate: the candidate, its efficiency, stability,
#: infrastructure work in FTE, lead time in days (waited where the profile prices waiting) and the hard
#: constraints it breaks
Parts = tuple[Candidate, Efficiency, Stability, Range, Range, list[tuple[str, Any]]]


def added_at(extras: Sequence[Line], e: int) -> Any:
    """What the priced extras add to an offer's cost at end ``e`` (their totals, in order)."""
    added = 0.0
    for line in extras:
        added = added + line[3][e]
    return added
