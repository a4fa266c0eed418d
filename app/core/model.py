"""Methodology v2: the formulas the option plugins share (docs/methodology.md explains each).

Every input comes from the knowledge snapshot; the only constants are the units of time (8,760
hours in the article's "24小时不间断运行" year, 365 days).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from app.core import reliability
from app.core.capital import where
from app.core.errors import MissingKnowledge
from app.core.knowledge import ANY, Knowledge, Price, Server, SourceRef
from app.core.ranges import Range, ceil_number, holds_anywhere
from app.core.text import msg
from app.core.types import (
    HOURS_PER_YEAR,
    Assessment,
    Cost,
    Efficiency,
    LineItem,
    OfferInfo,
    Profile,
    Stability,
    Usability,
    Violation,
)

METHODOLOGY_VERSION = "2.0"
DAYS_PER_YEAR = 365
MINUTES_PER_HOUR = 60
ZERO = Range.point(0)
#: the general option of knowledge rows that belong to no single option (weights, engineer time)
GENERAL = ANY
#: below this goodput a job makes no real progress: the effective cost's denominator stops here
MIN_GOODPUT = 1e-3


class Inputs:
    """Reads one option's assumptions (and, given the profile, its prices in the profile's currency)
    and remembers which rows it used."""

    def __init__(self, knowledge: Knowledge, option: str, profile: Profile | None = None) -> None:
        self.knowledge = knowledge
        self.option = option
        self.profile = profile
        self.refs: list[SourceRef] = []

    def __call__(self, key: str) -> Range:
        value, ref = self.knowledge.assumption_value(self.option, key)
        self.refs.append(ref)
        return value

    def take_refs(self) -> tuple[SourceRef, ...]:
        refs, self.refs = tuple(dict.fromkeys(self.refs)), []
        return refs

    def price(self, item: str, unit: str, subject: str = ANY) -> Price:
        """The option's price of ``item`` in ``unit`` for ``subject`` in the profile's currency on its ``as_of``."""
        assert self.profile is not None, "Inputs(knowledge, option, profile) reads prices"
        return self.knowledge.price(
            self.option, item, unit=unit, currency=self.profile.currency, as_of=self.profile.as_of, subject=subject
        )

    def money(
        self,
        item: str,
        *,
        units: tuple[str, ...],
        option: str | None = None,
        provider: str | None = None,
        region: str = ANY,
        subject: str = ANY,
        gpu_model: str = ANY,
        gpus: Any = None,
    ) -> tuple[Range, Price] | None:
        """A component's price in the profile's currency (None where the knowledge base has none):
        the nearest region's row (``Knowledge.component``); for volume tiers (``min_gpus``), the tier
        ``gpus`` falls in — per profile over a batch."""
        assert self.profile is not None, "Inputs(knowledge, option, profile) reads prices"
        p = self.profile
        rows = [
            r
            for r in self.knowledge.component(
                option or self.option,
                item,
                as_of=p.as_of,
                provider=provider,
                region=region,
                subject=subject,
                gpu_model=gpu_model,
            )
            if r.unit in units
        ]
        if not rows:
            return None
        if gpus is None or not any(r.min_gpus for r in rows):
            return self.convert(rows[0]), rows[0]
        tiers = sorted(rows, key=lambda r: r.min_gpus or 0)
        values = [self.convert(r) for r in tiers]
        if isinstance(gpus, np.ndarray):  # each profile of a batch in its own tier
            conditions = [gpus >= (r.min_gpus or 0) for r in reversed(tiers)]
            ends = (np.select(conditions, [v[i] for v in reversed(values)]) for i in range(3))
            return Range.elementwise(*ends), tiers[0]
        index = max((i for i, r in enumerate(tiers) if (r.min_gpus or 0) <= gpus), default=0)
        return values[index], tiers[index]

    def convert(self, row: Price) -> Range:
        """A row's value in the profile's currency (its exchange rate joins the sources)."""
        assert self.profile is not None
        conversion = self.knowledge.conversion(row.currency, self.profile.currency, self.profile.as_of)
        self.refs.extend(conversion.refs)
        return row.value * conversion.factor


def hardware(knowledge: Knowledge, profile: Profile) -> tuple[Server, Any]:
    """The server SKU the profile runs on, and how many of them its GPUs fill (whole servers)."""
    server = knowledge.server_for(profile.gpu_model)
    return server, ceil_number(profile.gpus / server.gpus_per_server)


def cost(
    profile: Profile,
    *,
    annual: Range,
    total: Range,
    paid: Range,
    committed: bool,
    breakdown: Iterable[LineItem],
    upfront: Range = ZERO,
    npv: Range | None = None,
    equivalent_annual: Range | None = None,
    operating_years: Any = None,
) -> Cost:
    """An option's cost. ``operating_years`` is the part of the horizon the compute is used (the
    whole horizon unless the team waits for it): useful GPU-hours over the horizon are a year's times
    that, and ``per_useful_gpu_hour = total ÷ useful GPU-hours over the horizon``."""
    useful = profile.useful_gpu_hours_per_year
    years = profile.horizon_years if operating_years is None else operating_years
    useful_total = useful * years
    return Cost(
        annual=annual,
        total=total,
        upfront=upfront,
        per_useful_gpu_hour=total / useful_total,
        useful_gpu_hours=useful,
        paid_gpu_hours=paid,
        committed=committed,
        breakdown=tuple(breakdown),
        npv=npv,
        equivalent_annual=equivalent_annual,
        useful_gpu_hours_total=useful_total,
    )


def efficiency(
    inputs: Inputs, profile: Profile, *, lead_time_days: Range | None = None, waits: Any = True
) -> Efficiency:
    """Share of the horizon's GPU time that becomes training progress.

    ``productive = execution_efficiency × (1 − wait) × (1 − setup)``, where
    ``wait = lead_time_days ÷ horizon days`` (capped at 1; 0 when the team bridges the wait on other
    compute) and ``setup = setup_hours ÷ (setup_hours + training_run_hours)`` — set-up repeats every
    run. ``lead_time_days`` is the offer's own where its source gives one, else the option's.
    """
    lead = lead_time_days if lead_time_days is not None else inputs("lead_time_days")
    setup_minutes = inputs("setup_minutes_per_run")
    execution = inputs("execution_efficiency")
    run_hours = inputs("training_run_hours")
    horizon_days = profile.horizon_years * DAYS_PER_YEAR
    wait = where(waits, (lead / horizon_days).cap(1), ZERO)  # per profile over a batch
    setup_hours = setup_minutes * (1 / MINUTES_PER_HOUR)
    setup_share = Range(
        setup_hours.low / (setup_hours.low + run_hours.high),
        setup_hours.expected / (setup_hours.expected + run_hours.expected),
        setup_hours.high / (setup_hours.high + run_hours.low),
    )
    productive = execution * wait.complement() * setup_share.complement()
    return Efficiency(lead, setup_minutes, execution, productive, inputs.take_refs())


def stability(
    inputs: Inputs,
    profile: Profile,
    *,
    detection_key: str = "detection_hours",
    restart_key: str = "restart_hours",
    extra_rate: Range | None = None,
) -> Stability:
    """What failures cost a job that spans all of the profile's GPUs (``app.core.reliability``).

    Interruptions grow with the GPUs (``gpu_failure_rate_per_gpu_year``, plus ``extra_rate`` such as
    spot preemptions); each costs detection + restart + half the Young–Daly checkpoint interval,
    which follows from the job's MTBF and the checkpoint write time; automation (the option's and
    the ops team's) shortens detection and restart. The low end of every figure is the best case.
    """
    rate = inputs("gpu_failure_rate_per_gpu_year")
    if extra_rate is not None:
        rate = rate + extra_rate
    detection = inputs(detection_key)
    restart = inputs(restart_key)
    write = inputs("checkpoint_write_minutes") * (1 / MINUTES_PER_HOUR)
    useful = profile.useful_gpu_hours_per_year
    # best case (low end): fewest failures, fastest recovery, quickest checkpoints; worst at the high end
    ends = {end: _job(profile.gpus, rate, detection, restart, write, end) for end in ("low", "expected", "high")}
    goodput = Range(ends["high"][2], ends["expected"][2], ends["low"][2])
    interval = Range(ends["low"][0], ends["expected"][0], ends["high"][0])
    per_interruption = detection + restart + interval * 0.5
    interruptions = rate * (useful / HOURS_PER_YEAR)
    lost = Range(*(useful * (1.0 / _floor(g) - 1.0) for g in (goodput.high, goodput.expected, goodput.low)))
    return Stability(interruptions, per_interruption, lost, goodput, inputs.take_refs(), interval)


def _job(gpus: Any, rate: Range, detection: Range, restart: Range, write: Range, end: str) -> tuple[Any, Any, Any]:
    """(checkpoint interval, MTBF, goodput) with every input at ``end``."""
    mtbf = reliability.mtbf_hours(getattr(rate, end), gpus)
    w, d, r = getattr(write, end), getattr(detection, end), getattr(restart, end)
    return reliability.checkpoint_interval_hours(mtbf, w), mtbf, reliability.goodput(mtbf, w, d, r)


def _floor(g: Any) -> Any:
    floored: Any = np.maximum(g, MIN_GOODPUT) if isinstance(g, np.ndarray) else max(g, MIN_GOODPUT)
    return floored


def usability(inputs: Inputs, profile: Profile, infra_fte: Range, setup_steps: str) -> Usability:
    """Share of the team's time left for models.

    The option needs ``infra_fte`` of infrastructure work; the team's own ops staff absorb
    ``ops_coverage_<ops_team>`` of it; the rest falls on the algorithm engineers:
    ``focus = max(0, 1 − infra_fte × (1 − coverage) ÷ team_size)``.
    """
    coverage = inputs(f"ops_coverage_{profile.ops_team}")
    unmet = infra_fte * coverage.complement()
    focus = (unmet / profile.team_size).cap(1).complement().floor_at(0)
    return Usability(infra_fte, unmet, setup_steps, focus, inputs.take_refs())


def software_work(inputs: Inputs, servers: Any, *, share: Any = 1.0) -> Range:
    """Infrastructure work every option that hands the team machines needs: environments, scheduling,
    checkpoints, monitoring — ``(infra_fte_base + infra_fte_per_server × servers) × share``, where
    ``share`` is the part of the year the machines are in use for options paid by use (the profile's
    utilization) and 1 for an own cluster, which runs all year."""
    work: Range = (inputs("infra_fte_base") + inputs("infra_fte_per_server") * servers) * share
    return work


def assessment(
    option: str,
    inputs: Inputs,
    profile: Profile,
    *,
    cost: Cost,
    efficiency: Efficiency,
    stability: Stability,
    infra_fte: Range,
    setup_steps: str,
    notes: tuple[str, ...],
    offer: OfferInfo | None = None,
    violations: tuple[Violation, ...] = (),
    region: str = ANY,
    waiting_days: Range = ZERO,
    priced_work: Range | None = None,
) -> Assessment:
    """The option's assessment: its cost on the one money scale (docs/methodology.md "One money
    scale"), and efficiency, stability and usability.

    ``effective = (total + unmet infrastructure work × engineer_time × horizon + waiting × delay_cost_per_day)
    ÷ (useful GPU-hours over the horizon × execution_efficiency × goodput)``

    ``priced_work`` is the part of ``infra_fte`` whose unmet share is priced here (default: all of it;
    an own cluster's ops teams are priced in its cost already).
    """
    usab = usability(inputs, profile, infra_fte, setup_steps)
    coverage = inputs(f"ops_coverage_{profile.ops_team}")
    unmet = usab.infra_fte_unmet if priced_work is None else priced_work * coverage.complement()
    extras = _priced_extras(inputs, profile, unmet, region=region, waiting_days=waiting_days)
    added = sum((li.total or ZERO for li in extras), ZERO)
    useful_total = cost.useful_gpu_hours_total if cost.useful_gpu_hours_total is not None else 0.0
    work = efficiency.execution_efficiency * stability.goodput.floor_at(MIN_GOODPUT) * useful_total
    effective = (cost.total + added) / work
    violations = (*violations, *_stalls(stability))
    return Assessment(
        option=option,
        cost=_with(cost, per_effective_gpu_hour=effective, extras=tuple(extras)),
        efficiency=efficiency,
        stability=stability,
        usability=usab,
        notes=notes,
        offer=offer,
        violations=violations,
    )


def _with(c: Cost, **changes: Any) -> Cost:
    return dataclasses.replace(c, **changes)


def _stalls(stability: Stability) -> tuple[Violation, ...]:
    """A job whose failures come faster than it recovers makes no progress: that is infeasible."""
    stalled = stability.goodput.expected <= MIN_GOODPUT
    if not holds_anywhere(stalled):
        return ()
    return (Violation("at this scale failures come faster than the job recovers: no progress", stalled),)


def _priced_extras(
    inputs: Inputs, profile: Profile, unmet_fte: Range, *, region: str, waiting_days: Range
) -> list[LineItem]:
    """Unmet infrastructure work at the knowledge base's ``engineer_time`` price, and waiting at the
    profile's ``delay_cost_per_day`` (when it gives one)."""
    lines: list[LineItem] = []
    try:
        found = inputs.money("engineer_time", units=("per_fte_year",), option=GENERAL, region=region)
    except MissingKnowledge:  # no exchange rate into the profile's currency
        found = None
    if found is not None:
        price, row = found
        yearly = unmet_fte * price
        lines.append(
            LineItem(
                "infrastructure_work",
                msg("line.infrastructure_work", "Infrastructure work left to the team, at an engineer's cost"),
                yearly,
                ZERO,
                "infra_fte_unmet × engineer_time per FTE-year × horizon_years",
                (row.ref, *inputs.take_refs()),
                total=yearly * profile.horizon_years,
            )
        )
    delay = profile.delay_cost_per_day
    if delay is not None and not (isinstance(delay, np.ndarray) and np.all(np.isnan(delay))):
        per_day = np.nan_to_num(delay) if isinstance(delay, np.ndarray) else delay
        waiting = waiting_days * per_day
        lines.append(
            LineItem(
                "waiting",
                msg("line.waiting", "Waiting for the compute, at delay_cost_per_day"),
                ZERO,
                ZERO,
                "lead_time_days × delay_cost_per_day",
                (),
                total=waiting,
            )
        )
    return lines


def with_effective_cost(a: Assessment) -> Assessment:
    """An assessment from a plugin that prices no effective cost (written before methodology v2) gets
    the part it can: ``per useful GPU-hour ÷ (execution_efficiency × goodput)``, so that every option is
    scored on the same money scale."""
    if a.cost.per_effective_gpu_hour is not None:
        return a
    work = a.efficiency.execution_efficiency * a.stability.goodput.floor_at(MIN_GOODPUT)
    return dataclasses.replace(a, cost=_with(a.cost, per_effective_gpu_hour=a.cost.per_useful_gpu_hour / work))
