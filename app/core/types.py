"""The decision core's public types: what a plugin receives (a profile) and returns (an assessment)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from app.core.knowledge import SourceRef
from app.core.ranges import Range
from app.core.vocab import DataSecurity, OpsTeam, RentalPlan

HOURS_PER_YEAR = 8760  # 365 × 24: the article's "24小时不间断运行" year

#: the numeric fields of a profile: plain numbers, or NumPy arrays in batch evaluations (one element
#: per profile) — see ``app.hookspecs`` for the array contract
PROFILE_NUMBERS = ("gpus", "utilization", "horizon_years", "team_size", "start_within_days", "capex_budget")


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
    start_within_days: int = 30
    rental_plan: RentalPlan = "on_demand"
    currency: str = "CNY"
    gpu_model: str | None = None
    capex_budget: float | None = None

    @property
    def useful_gpu_hours_per_year(self) -> float:
        return self.gpus * self.utilization * HOURS_PER_YEAR


@dataclass(frozen=True, slots=True)
class LineItem:
    """One line of a cost breakdown, naming the knowledge rows it used."""

    key: str
    label: str
    annual: Range
    upfront: Range
    basis: str
    sources: tuple[SourceRef, ...]


@dataclass(frozen=True, slots=True)
class Cost:
    annual: Range
    total: Range
    upfront: Range
    per_useful_gpu_hour: Range
    useful_gpu_hours: float
    paid_gpu_hours: Range
    committed: bool
    breakdown: tuple[LineItem, ...]


@dataclass(frozen=True, slots=True)
class Efficiency:
    lead_time_days: Range
    setup_minutes_per_run: Range
    execution_efficiency: Range
    #: share of the horizon's GPU time that turns into training progress (the score's measure)
    productive_share: Range
    sources: tuple[SourceRef, ...]


@dataclass(frozen=True, slots=True)
class Stability:
    interruptions_per_year: Range
    hours_lost_per_interruption: Range
    lost_gpu_hours_per_year: Range
    #: useful ÷ (useful + lost) GPU-hours (the score's measure)
    goodput: Range
    sources: tuple[SourceRef, ...]


@dataclass(frozen=True, slots=True)
class Usability:
    infra_fte_needed: Range
    infra_fte_unmet: Range
    setup_steps: str
    #: share of the team's time left for models after the infrastructure work it must do itself
    model_focus_share: Range
    sources: tuple[SourceRef, ...]


@dataclass(frozen=True, slots=True)
class Assessment:
    """One option's answer for one profile, on all four dimensions."""

    option: str
    cost: Cost
    efficiency: Efficiency
    stability: Stability
    usability: Usability
    #: plain sentences with the figures behind them
    notes: tuple[str, ...] = field(default_factory=tuple)

    def metrics(self) -> dict[str, Range]:
        """Named figures that scenario rules may test (``assessment.<name>``)."""
        return {
            "annual_cost": self.cost.annual,
            "total_cost": self.cost.total,
            "upfront_cost": self.cost.upfront,
            "cost_per_useful_gpu_hour": self.cost.per_useful_gpu_hour,
            "lead_time_days": self.efficiency.lead_time_days,
            "setup_minutes_per_run": self.efficiency.setup_minutes_per_run,
            "execution_efficiency": self.efficiency.execution_efficiency,
            "goodput": self.stability.goodput,
            "infra_fte_unmet": self.usability.infra_fte_unmet,
        }


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """What a plugin says about the option it provides."""

    key: str
    name: str
    description: str
    version: str
    #: the option buys its hardware: break-even reports the cluster size from which it is the
    #: cheapest, and its payback against the other options
    owns_hardware: bool = False
    #: the plans (``rental_plan`` values) the option prices differently; break-even compares each
    plans: tuple[str, ...] = ()
