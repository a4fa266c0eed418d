"""Demand that changes over the horizon (docs/methodology.md "Capacity plans"): consecutive phases of
GPUs at a utilization, the growth shorthand expanded into yearly phases, and GPUs already owned."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from app.core.types import HOURS_PER_YEAR

MONTHS_PER_YEAR = 12
#: at most this many phases (ten years of months)
MAX_PHASES = 120


@dataclass(frozen=True, slots=True)
class Phase:
    """A stretch of the horizon with one demand: ``gpus`` at ``utilization`` (the useful share of the
    phase), its largest job ``largest_job_gpus`` GPUs."""

    start_month: int
    months: int
    gpus: int
    utilization: float
    largest_job_gpus: int

    @property
    def start_years(self) -> float:
        return self.start_month / MONTHS_PER_YEAR

    @property
    def years(self) -> float:
        return self.months / MONTHS_PER_YEAR

    @property
    def end_years(self) -> float:
        return (self.start_month + self.months) / MONTHS_PER_YEAR

    @property
    def useful_gpu_hours(self) -> float:
        return self.gpus * self.utilization * HOURS_PER_YEAR * self.years


@dataclass(frozen=True, slots=True)
class Owned:
    """GPUs the team holds already: ``count`` of ``gpu_model``, ``age_years`` old at ``as_of``; each
    worth ``factor`` GPUs of the demand's model by sustained throughput
    (``app.engine.capacity.throughput``; 1 for the demand's own model)."""

    gpu_model: str
    count: int
    age_years: float
    factor: float = 1.0
    #: whether they are the demand's GPU model (they join a cluster bought for the demand: one job on both)
    same_model: bool = True

    @property
    def equivalent_gpus(self) -> float:
        """The GPUs of the demand's model they are worth."""
        return self.count * self.factor


def phases(items: Sequence[tuple[int, int, float, int | None]]) -> tuple[Phase, ...]:
    """Consecutive phases from ``(months, gpus, utilization, largest_job_gpus)``; the largest job is
    the phase's GPUs where it is not given (as ``largest_job_gpus`` defaults to ``gpus`` everywhere)."""
    found: list[Phase] = []
    start = 0
    for months, gpus, utilization, job in items:
        found.append(Phase(start, months, gpus, utilization, gpus if job is None else min(job, gpus)))
        start += months
    return tuple(found)


def growth(start_gpus: int, growth_per_year: float, utilization: float, horizon_years: float) -> tuple[Phase, ...]:
    """The shorthand ``{start_gpus, growth_per_year}`` as yearly phases: phase ``i`` has
    ``ceil(start_gpus × (1 + growth_per_year)^i)`` GPUs (a last phase shorter than a year where the
    horizon is not a whole number of years)."""
    total = round(horizon_years * MONTHS_PER_YEAR)
    items: list[tuple[int, int, float, int | None]] = []
    month, year = 0, 0
    while month < total:
        months = min(MONTHS_PER_YEAR, total - month)
        gpus = math.ceil(start_gpus * (1 + growth_per_year) ** year - 1e-9)
        items.append((months, gpus, utilization, None))
        month += months
        year += 1
    return phases(items)


def flat(gpus: int, utilization: float, horizon_years: float, largest_job_gpus: int | None = None) -> tuple[Phase, ...]:
    """A plain ``gpus`` / ``utilization`` profile (with its ``largest_job_gpus``): one phase over the horizon."""
    return phases([(round(horizon_years * MONTHS_PER_YEAR), gpus, utilization, largest_job_gpus)])


def useful_gpu_hours(demand: Sequence[Phase]) -> float:
    """Useful GPU-hours the demand asks for over the horizon."""
    return sum(p.useful_gpu_hours for p in demand)


__all__ = ["MAX_PHASES", "MONTHS_PER_YEAR", "Owned", "Phase", "flat", "growth", "phases", "useful_gpu_hours"]
