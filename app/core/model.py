"""Methodology v1: the formulas the option plugins share (docs/methodology.md explains each).

Every input comes from the knowledge snapshot; the only constant is the 8,760-hour year.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.core.knowledge import ANY, Knowledge, Price, Server, SourceRef
from app.core.ranges import Range, ceil_number
from app.core.types import HOURS_PER_YEAR, Assessment, Cost, Efficiency, LineItem, Profile, Stability, Usability

METHODOLOGY_VERSION = "1.0"
DAYS_PER_YEAR = 365


ZERO = Range.point(0)


class Inputs:
    """Reads one option's assumptions (and, given the profile, its prices) and remembers which
    assumption rows it used."""

    def __init__(self, knowledge: Knowledge, option: str, profile: Profile | None = None) -> None:
        self.knowledge = knowledge
        self.option = option
        self.profile = profile
        self.refs: list[SourceRef] = []

    def __call__(self, key: str) -> Range:
        row = self.knowledge.assumption(self.option, key)
        self.refs.append(row.ref)
        return row.value

    def price(self, item: str, unit: str, subject: str = ANY) -> Price:
        """The option's price of ``item`` in ``unit`` for ``subject``, in the profile's currency on its ``as_of``."""
        assert self.profile is not None, "Inputs(knowledge, option, profile) reads prices"
        return self.knowledge.price(
            self.option, item, unit=unit, currency=self.profile.currency, as_of=self.profile.as_of, subject=subject
        )

    def take_refs(self) -> tuple[SourceRef, ...]:
        refs, self.refs = tuple(dict.fromkeys(self.refs)), []
        return refs


def hardware(knowledge: Knowledge, profile: Profile) -> tuple[Server, float]:
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
) -> Cost:
    """An option's cost, with the cost per useful GPU-hour: ``annual ÷ useful GPU-hours``."""
    useful = profile.useful_gpu_hours_per_year
    return Cost(
        annual=annual,
        total=total,
        upfront=upfront,
        per_useful_gpu_hour=annual / useful,
        useful_gpu_hours=useful,
        paid_gpu_hours=paid,
        committed=committed,
        breakdown=tuple(breakdown),
    )


def assessment(
    option: str,
    inputs: Inputs,
    profile: Profile,
    *,
    cost: Cost,
    infra_fte: Range,
    setup_steps: str,
    notes: tuple[str, ...],
    recovery_key: str = "recovery_hours",
) -> Assessment:
    """The option's assessment: its cost, and efficiency, stability and usability by the shared formulas."""
    return Assessment(
        option=option,
        cost=cost,
        efficiency=efficiency(inputs, profile),
        stability=stability(inputs, profile, recovery_key=recovery_key),
        usability=usability(inputs, profile, infra_fte, setup_steps),
        notes=notes,
    )


def efficiency(inputs: Inputs, profile: Profile) -> Efficiency:
    """Share of the horizon's GPU time that becomes training progress.

    ``productive = execution_efficiency × (1 − wait) × (1 − setup)``, where
    ``wait = lead_time_days ÷ horizon days`` (capped at 1) and
    ``setup = setup_hours ÷ (setup_hours + training_run_hours)`` — set-up repeats every run.
    Article: procurement 1–3 months, instances in minutes to tens of minutes, set-up 10–30
    minutes before each run on rented instances, minutes on the platform.
    """
    lead = inputs("lead_time_days")
    setup_minutes = inputs("setup_minutes_per_run")
    execution = inputs("execution_efficiency")
    run_hours = inputs("training_run_hours")
    horizon_days = profile.horizon_years * DAYS_PER_YEAR
    wait = (lead / horizon_days).cap(1)
    setup_hours = setup_minutes * (1 / 60)
    setup_share = Range(
        setup_hours.low / (setup_hours.low + run_hours.high),
        setup_hours.expected / (setup_hours.expected + run_hours.expected),
        setup_hours.high / (setup_hours.high + run_hours.low),
    )
    productive = execution * wait.complement() * setup_share.complement()
    return Efficiency(lead, setup_minutes, execution, productive, inputs.take_refs())


def stability(inputs: Inputs, profile: Profile, *, recovery_key: str = "recovery_hours") -> Stability:
    """What failures cost a job that spans all of the profile's GPUs.

    ``interruptions = failure_rate_per_gpu_year × useful GPU-hours ÷ 8760``;
    ``hours lost each = detection + recovery + checkpoint_interval ÷ 2`` (work since the last
    checkpoint is lost, half an interval on average); every GPU of the job waits, so
    ``lost GPU-hours = interruptions × hours lost × gpus``;
    ``goodput = useful ÷ (useful + lost)``.
    """
    rate = inputs("gpu_failure_rate_per_gpu_year")
    detection = inputs("detection_hours")
    recovery = inputs(recovery_key)
    checkpoint = inputs("checkpoint_interval_hours")
    useful = profile.useful_gpu_hours_per_year
    interruptions = rate * (useful / HOURS_PER_YEAR)
    per_interruption = detection + recovery + checkpoint * 0.5
    lost = interruptions * per_interruption * profile.gpus
    goodput = Range(
        useful / (useful + lost.high),
        useful / (useful + lost.expected),
        useful / (useful + lost.low),
    )
    return Stability(interruptions, per_interruption, lost, goodput, inputs.take_refs())


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
