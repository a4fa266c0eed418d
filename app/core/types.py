"""The decision core's public types: what a plugin receives (a profile) and returns (an assessment)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.core.knowledge import SourceRef
from app.core.ranges import Range
from app.core.vocab import DataSecurity, OpsTeam, Precision

#: hours in a year of compute held every hour: 365 × 24, the article's "24小时不间断运行" year
HOURS_PER_YEAR = 8760

#: the numeric fields of a profile: plain numbers, or NumPy arrays in batch evaluations (one element
#: per profile) — see ``app.host.hookspecs`` for the array contract
PROFILE_NUMBERS = (
    "gpus",
    "utilization",
    "horizon_years",
    "team_size",
    "start_within_days",
    "capex_budget",
    "delay_cost_per_day",
    "largest_job_gpus",
    "preemptible_share",
    "held_share",
)


@dataclass(frozen=True, slots=True)
class Profile:
    """A team's situation: what it needs, for how long, and what it can run itself.

    ``utilization`` is the team's useful share of the year: useful GPU-hours are
    ``gpus × utilization × 8760`` per year. In batch evaluations the fields named in
    ``PROFILE_NUMBERS`` are NumPy arrays, one element per profile.
    """

    gpus: int
    utilization: float
    horizon_years: float
    as_of: dt.date
    team_size: int = 10
    ops_team: OpsTeam = "none"
    data_security: DataSecurity = "standard"
    #: days within which the compute is needed (None: no deadline; NaN for a batch's profile without one)
    start_within_days: float | None = None
    #: the plan to rent on; None: the cheapest feasible one is chosen
    rental_plan: str | None = None
    currency: str = "CNY"
    gpu_model: str | None = None
    capex_budget: float | None = None
    #: what a day without the compute costs the team, in ``currency`` (prices waiting); None: unpriced
    delay_cost_per_day: float | None = None
    #: only offers of these providers and regions (None: any)
    providers: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    #: GPUs of the largest single job (None: ``gpus``): a job larger than an offer's unit needs
    #: several units joined by a training interconnect, and its failures are the whole job's
    largest_job_gpus: int | None = None
    #: share of the work that tolerates preemption, 0–1: preemptible (spot) capacity serves only a
    #: profile whose every job does (a mix within one option is a capacity plan's)
    preemptible_share: float = 0.0
    #: share of held on-demand instance and platform cluster hours the team turns into useful work,
    #: 0.05–1 (None: the knowledge base's ``held_utilization``, the article's 50 %; NaN in a batch)
    held_share: float | None = None
    #: ISO 3166-1 alpha-2 code of the buyer's jurisdiction: where an own cluster is bought, staffed and
    #: powered, and whose availability rules apply (None: none assumed)
    buyer_country: str | None = None
    #: the fields the options declare (``OptionSpec.profile_fields``), as ``(name, value)`` pairs sorted by
    #: name: those the request gave, and the others' defaults (``option``)
    option_fields: tuple[tuple[str, Any], ...] = ()
    #: the precision the team trains at: the chosen offer's GPU model's dense peak and MFU at it give the
    #: work an option delivers (its cost per useful PFLOP-hour); options are priced the same at either
    precision: Precision = "bf16"

    def option(self, name: str) -> Any:
        """The value of the profile field ``name`` an option declares (None where it has none)."""
        for key, value in self.option_fields:
            if key == name:
                return value
        return None

    @property
    def useful_gpu_hours_per_year(self) -> float:
        return self.gpus * self.utilization * HOURS_PER_YEAR

    @property
    def job_gpus(self) -> Any:
        """GPUs of the largest job: ``largest_job_gpus``, else ``gpus`` (per profile over a batch, where
        an absent value is NaN)."""
        job = self.largest_job_gpus
        if job is None:
            return self.gpus
        if isinstance(job, np.ndarray):
            return np.where(np.isnan(job), self.gpus, job)
        return job


@dataclass(frozen=True, slots=True, kw_only=True)
class LineItem:
    """One line of a cost breakdown, naming the knowledge rows it used (built by name: its fields are
    keyword-only)."""

    key: str
    label: str
    annual: Range
    upfront: Range
    basis: str
    sources: tuple[SourceRef, ...]
    #: cash over the horizon (capital lines: purchases less resale); None: ``annual × horizon_years``
    total: Range | None = None


@dataclass(frozen=True, slots=True)
class Cost:
    """What an option costs the profile (docs/methodology.md "Cost" and "Capital").

    ``annual`` is the accounting view (capital written off straight-line over ``depreciation_years``,
    plus running costs); ``total`` the cash over the horizon (purchases and replacements less resale,
    plus running costs); ``npv`` the same discounted at the cost of capital, and ``equivalent_annual``
    the level yearly payment with that present value."""

    annual: Range
    total: Range
    upfront: Range
    #: total ÷ useful GPU-hours over the horizon
    per_useful_gpu_hour: Range
    #: useful GPU-hours a year
    useful_gpu_hours: float
    paid_gpu_hours: Range
    committed: bool
    breakdown: tuple[LineItem, ...]
    npv: Range | None = None
    equivalent_annual: Range | None = None
    #: useful GPU-hours over the whole horizon (fewer than a year's × horizon while waiting for compute)
    useful_gpu_hours_total: Any = None
    #: (total + priced infrastructure work + priced waiting) ÷ (useful GPU-hours × execution efficiency ×
    #: goodput): the one money scale the cost score compares; set by ``app.core.model.assessment``
    per_effective_gpu_hour: Range | None = None
    #: the money the effective cost adds to ``total``: unmet infrastructure work and waiting, priced
    extras: tuple[LineItem, ...] = ()


@dataclass(frozen=True, slots=True)
class Efficiency:
    """How much of the compute bought does useful work: the wait for it (lead time), the set-up before
    each run, the execution efficiency and the productive share over the horizon that follow."""

    lead_time_days: Range
    setup_minutes_per_run: Range
    execution_efficiency: Range
    #: share of the horizon's GPU time that turns into training progress (the score's measure)
    productive_share: Range
    sources: tuple[SourceRef, ...]

    def sourced(self, sources: tuple[SourceRef, ...]) -> Efficiency:
        """The same figures citing ``sources`` (made field by field: ``dataclasses.replace`` reads the
        fields each time, and every materialised answer makes three of these)."""
        return Efficiency(
            self.lead_time_days, self.setup_minutes_per_run, self.execution_efficiency, self.productive_share, sources
        )


@dataclass(frozen=True, slots=True)
class Stability:
    """What failures cost a job spanning the profile's GPUs: interruptions a year, hours lost to each,
    and the goodput that remains."""

    interruptions_per_year: Range
    hours_lost_per_interruption: Range
    lost_gpu_hours_per_year: Range
    #: share of the job's time that turns into progress (the score's measure)
    goodput: Range
    sources: tuple[SourceRef, ...]
    #: the Young–Daly checkpoint interval, hours
    checkpoint_interval_hours: Range | None = None

    def sourced(self, sources: tuple[SourceRef, ...]) -> Stability:
        """The same figures citing ``sources``."""
        return Stability(
            self.interruptions_per_year,
            self.hours_lost_per_interruption,
            self.lost_gpu_hours_per_year,
            self.goodput,
            sources,
            self.checkpoint_interval_hours,
        )


@dataclass(frozen=True, slots=True)
class Usability:
    """The infrastructure work an option leaves to the team: FTE needed, the part its ops staff do not
    cover, the set-up steps in words and the engineers' focus that remains."""

    infra_fte_needed: Range
    infra_fte_unmet: Range
    setup_steps: str
    #: share of the team's time left for models after the infrastructure work it must do itself
    model_focus_share: Range
    sources: tuple[SourceRef, ...]

    def sourced(self, sources: tuple[SourceRef, ...]) -> Usability:
        """The same figures citing ``sources``."""
        return Usability(self.infra_fte_needed, self.infra_fte_unmet, self.setup_steps, self.model_focus_share, sources)


@dataclass(frozen=True, slots=True)
class Violation:
    """A hard constraint an offer breaks: why, and where (a bool, or an array over a batch)."""

    reason: str
    violated: Any


@dataclass(frozen=True, slots=True)
class OfferInfo:
    """The offer an assessment priced: what procurement compares (``app.core.offers.Offer.info``)."""

    provider: str
    region: str
    gpu_model: str | None
    subject: str
    plan: str
    variant: str | None
    unit: str
    gpus_per_unit: int
    #: per ``unit`` in the profile's currency
    price: Range
    quoted_price: Range
    quoted_currency: str
    #: profile currency per quoted currency, when converted
    exchange_rate: float | None
    valid_from: dt.date
    residency: str | None
    source: str
    source_quality: str
    refs: tuple[SourceRef, ...]
    #: its name as people read it: "AWS p5.48xlarge, us-east-1, Capacity Block" (a message)
    name: str | None = None
    #: ``list``, or ``org`` where the organisation's private book priced it
    price_book: str = "list"


@dataclass(frozen=True, slots=True)
class Alternative:
    """Another offer the option could have bought, with its cost, and why it was not chosen if infeasible."""

    offer: OfferInfo
    cost: Cost
    feasible: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Assessment:
    """One option's answer for one profile, on all four dimensions."""

    option: str
    cost: Cost
    efficiency: Efficiency
    stability: Stability
    usability: Usability
    #: plain sentences with the figures behind them (a tuple, or ``app.core.text.Composed``: composed when read)
    notes: Sequence[str] = field(default_factory=tuple)
    #: the offer priced (None for an option without offers)
    offer: OfferInfo | None = None
    alternatives: tuple[Alternative, ...] = ()
    #: hard constraints the chosen offer breaks: the option is then infeasible
    violations: tuple[Violation, ...] = ()
    #: how many offers were assessed to choose this one
    offers_considered: int = 1

    @property
    def offer_label(self) -> str:
        o = self.offer
        return "" if o is None else f"{o.provider} {o.subject} {o.region} {o.plan} {o.variant or ''}"

    def answered(self, alternatives: tuple[Alternative, ...], offers_considered: int) -> Assessment:
        """The same assessment with its alternatives and the number of offers quoted."""
        return Assessment(
            self.option,
            self.cost,
            self.efficiency,
            self.stability,
            self.usability,
            self.notes,
            self.offer,
            alternatives,
            self.violations,
            offers_considered,
        )

    def metrics(self) -> dict[str, Range]:
        """Named figures that scenario rules may test (``assessment.<name>``; ``METRICS`` names them)."""
        return metrics_of(self)


def metrics_of(figures: Any) -> dict[str, Range]:
    """The figures ``METRICS`` names, of an assessment or a kernel's quote (anything with ``cost``,
    ``efficiency``, ``stability`` and ``usability`` as an ``Assessment`` has them)."""
    c, e = figures.cost, figures.efficiency
    return {
        "annual_cost": c.annual,
        "total_cost": c.total,
        "upfront_cost": c.upfront,
        "cost_per_useful_gpu_hour": c.per_useful_gpu_hour,
        "cost_per_effective_gpu_hour": c.per_effective_gpu_hour or c.per_useful_gpu_hour,
        "lead_time_days": e.lead_time_days,
        "setup_minutes_per_run": e.setup_minutes_per_run,
        "execution_efficiency": e.execution_efficiency,
        "goodput": figures.stability.goodput,
        "infra_fte_unmet": figures.usability.infra_fte_unmet,
    }


#: the figures ``Assessment.metrics`` names, which scenario rules may test
METRICS = (
    "annual_cost",
    "total_cost",
    "upfront_cost",
    "cost_per_useful_gpu_hour",
    "cost_per_effective_gpu_hour",
    "lead_time_days",
    "setup_minutes_per_run",
    "execution_efficiency",
    "goodput",
    "infra_fte_unmet",
)
