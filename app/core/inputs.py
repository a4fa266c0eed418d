"""SDK v2: assessing one profile per request from knowledge reads (docs/plugins.md, "Hooks").

A plugin that implements only ``compute_advisor_assess`` builds its ``Assessment`` with these
helpers: ``Inputs`` reads the option's assumptions and prices and remembers the rows it used, and
each helper feeds the methodology's formulas (``app.core.model``) — the same formulas the kernels
compute with, so both kinds of plugin are scored alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from app.core.answers import waiting_line, work_line
from app.core.errors import MissingKnowledge
from app.core.knowledge import ANY, Knowledge, Price, SourceRef
from app.core.model import (
    GENERAL,
    MINUTES_PER_HOUR,
    STALLED,
    ZERO,
    effective_cost,
    productive_share,
    setup_share,
    software_work_of,
    stability_of,
    stalled,
    usability_of,
    waiting_cost,
)
from app.core.ranges import Range, holds_anywhere
from app.core.types import (
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


def efficiency(
    inputs: Inputs, profile: Profile, *, lead_time_days: Range | None = None, waits: Any = True
) -> Efficiency:
    """Share of the horizon's GPU time that becomes training progress (``productive_share``), from the
    option's assumptions read through ``inputs``. ``lead_time_days`` is the offer's own where its source
    gives one, else the option's."""
    lead = lead_time_days if lead_time_days is not None else inputs("lead_time_days")
    setup_minutes = inputs("setup_minutes_per_run")
    execution = inputs("execution_efficiency")
    run_hours = inputs("training_run_hours")
    productive = productive_share(
        lead, execution, setup_share(setup_minutes, run_hours), profile.horizon_years, waits=waits
    )
    return Efficiency(lead, setup_minutes, execution, productive, inputs.take_refs())


def stability(
    inputs: Inputs,
    profile: Profile,
    *,
    detection_key: str = "detection_hours",
    restart_key: str = "restart_hours",
    extra_rate: Range | None = None,
) -> Stability:
    """What failures cost a job that spans all of the profile's GPUs (``stability_of``), from the
    option's assumptions read through ``inputs``: ``gpu_failure_rate_per_gpu_year`` (plus
    ``extra_rate`` such as spot preemptions), the option's detection and restart times and the
    checkpoint write time."""
    rate = inputs("gpu_failure_rate_per_gpu_year")
    if extra_rate is not None:
        rate = rate + extra_rate
    detection = inputs(detection_key)
    restart = inputs(restart_key)
    write = inputs("checkpoint_write_minutes") * (1 / MINUTES_PER_HOUR)
    found = stability_of(profile.job_gpus, profile.useful_gpu_hours_per_year, rate, detection, restart, write)
    return dataclasses.replace(found, sources=inputs.take_refs())


def usability(
    inputs: Inputs, profile: Profile, infra_fte: Range, setup_steps: str, priced_work: Range | None = None
) -> Usability:
    """Share of the team's time left for models (``usability_of``), the ops team's coverage read
    through ``inputs``; ``priced_work``: the part of ``infra_fte`` that can fall on the engineers (the
    rest is done by staff the option prices)."""
    coverage = inputs(f"ops_coverage_{profile.ops_team}")
    found = usability_of(infra_fte, coverage, profile.team_size, setup_steps, engineers_work=priced_work)
    return dataclasses.replace(found, sources=inputs.take_refs())


def software_work(inputs: Inputs, servers: Any, *, share: Any = 1.0) -> Range:
    """Infrastructure work every option that hands the team machines needs (``software_work_of``),
    its two assumptions read through ``inputs``."""
    return software_work_of(inputs("infra_fte_base"), inputs("infra_fte_per_server"), servers, share)


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
    usab = usability(inputs, profile, infra_fte, setup_steps, priced_work)
    unmet = usab.infra_fte_unmet
    extras = _priced_extras(inputs, profile, unmet, region=region, waiting_days=waiting_days)
    useful_total = cost.useful_gpu_hours_total if cost.useful_gpu_hours_total is not None else 0.0
    effective = effective_cost(
        cost.total,
        [li.total or ZERO for li in extras],
        efficiency.execution_efficiency,
        stability.goodput,
        useful_total,
    )
    violations = (*violations, *stalls(stability))
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


def stalls(stability: Stability) -> tuple[Violation, ...]:
    """The ``stalled`` constraint as a violation, where it holds."""
    where_stalled = stalled(stability.goodput)
    if not holds_anywhere(where_stalled):
        return ()
    return (Violation(STALLED, where_stalled),)


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
        lines.append(work_line(yearly, ZERO, yearly * profile.horizon_years, (row.ref, *inputs.take_refs())))
    waiting = waiting_cost(waiting_days, profile.delay_cost_per_day)
    if waiting is not None:
        lines.append(waiting_line(ZERO, ZERO, waiting))
    return lines
