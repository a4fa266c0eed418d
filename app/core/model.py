"""The methodology's formulas the options share (docs/methodology.md explains each): cost per useful
GPU-hour, the productive share of the horizon, failures at scale, the team's focus, and the one money
scale. Kernels (``app.core.pricing``) and the deprecated SDK v2 helpers (``app.core.inputs``) feed them alike.

Every input comes from the knowledge snapshot; the only constants are the units of time (8,760
hours in the article's "24小时不间断运行" year, 365 days).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from app.core import reliability
from app.core.columns import ALL, NAN, Num, delay_per_day, maximum, minimum, where
from app.core.knowledge import ANY
from app.core.ranges import Range
from app.core.text import msg
from app.core.types import (
    HOURS_PER_YEAR,
    Assessment,
    Cost,
    LineItem,
    Profile,
    Stability,
    Usability,
)

METHODOLOGY_VERSION = "4.1"
#: days in a year, for lead times and terms given in days
DAYS_PER_YEAR = 365
MINUTES_PER_HOUR = 60
#: the range of nothing: a line with no upfront (or no yearly) part
ZERO = Range.point(0)
#: the general option of knowledge rows that belong to no single option (weights, engineer time)
GENERAL = ANY
#: below this goodput a job makes no real progress: the effective cost's denominator stops here
MIN_GOODPUT = 1e-3
#: which ends of a range a formula computes (``app.core.columns``)
Ends = tuple[int, ...]


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


def setup_share(setup_minutes: Range, run_hours: Range) -> Range:
    """Share of a run spent setting up: ``setup_hours ÷ (setup_hours + training_run_hours)`` — set-up
    repeats every run (its complement goes into ``productive_share``)."""
    setup_hours = setup_minutes * (1 / MINUTES_PER_HOUR)
    return Range(
        setup_hours.low / (setup_hours.low + run_hours.high),
        setup_hours.expected / (setup_hours.expected + run_hours.expected),
        setup_hours.high / (setup_hours.high + run_hours.low),
    )


# ---- each formula at one end of its ranges (``app.core.columns``: e = 0 low, 1 expected, 2 high; an input
# that lowers the figure is read at 2 − e). Kernels call these; the Range forms below are built on them.


def productive_at(e: int, lead: Range, execution: Range, setup: Range, horizon_days: Num, waits: Any = True) -> Num:
    """``productive_share`` at end ``e``: ``execution × (1 − wait) × (1 − setup)``."""
    wait = where(waits, minimum(lead[2 - e] / horizon_days, 1.0), 0.0)
    productive: Num = execution[e] * (1 - wait) * (1 - setup[2 - e])
    return productive


def job_at(gpus: Num, rate: Num, detection: Num, restart: Num, write: Num) -> tuple[Num, Num, Num]:
    """(checkpoint interval, MTBF, goodput) of a job on ``gpus`` GPUs at one end of every input."""
    if type(rate) is type(write) is type(detection) is type(restart) is float and not isinstance(gpus, np.ndarray):
        # ``app.core.reliability``'s formulas on plain numbers, in the same order, without its dispatch
        mtbf = reliability.HOURS_PER_YEAR / (rate * gpus)
        interval = (2.0 * mtbf * write) ** 0.5
        wasted = write / interval + (detection + restart + interval / 2.0) / mtbf
        return interval, mtbf, max(0.0, 1.0 - wasted)
    mtbf = reliability.mtbf_hours(rate, gpus)
    return (
        reliability.checkpoint_interval_hours(mtbf, write),
        mtbf,
        reliability.goodput(mtbf, write, detection, restart),
    )


def focus_at(e: int, unmet: Range, team_size: Num) -> Num:
    """``model_focus_share`` at end ``e``: ``max(0, 1 − min(1, unmet ÷ team_size))``."""
    focus: Num = maximum(1 - minimum(unmet[2 - e] / team_size, 1.0), 0.0)
    return focus


def effective_work(e: int, execution: Range, goodput: Range, useful_total: Num) -> Num:
    """The effective GPU-hours the money of end ``e`` buys: ``execution × max(goodput, MIN_GOODPUT) ×
    useful GPU-hours over the horizon``, at the other end of each (``effective_at`` divides by it)."""
    work: Num = execution[2 - e] * maximum(goodput[2 - e], MIN_GOODPUT) * useful_total
    if isinstance(work, np.ndarray) and np.any(work <= 0):
        raise ZeroDivisionError("division by a range that reaches zero")
    return work


def effective_at(e: int, total: Num, added: Num, execution: Range, goodput: Range, useful_total: Num) -> Num:
    """The cost per effective GPU-hour at end ``e``: ``(total + added) ÷ (execution × max(goodput,
    MIN_GOODPUT) × useful GPU-hours over the horizon)`` — ``total`` and ``added`` at that end."""
    return (total + added) / effective_work(e, execution, goodput, useful_total)


# ---- the Range forms -------------------------------------------------------------------------


def productive_share(
    lead: Range, execution: Range, setup: Range, horizon_years: Any, *, waits: Any = True, ends: Ends = ALL
) -> Range:
    """``productive = execution_efficiency × (1 − wait) × (1 − setup)``, where
    ``wait = lead_time_days ÷ horizon days`` (capped at 1; 0 when the team bridges the wait on other
    compute — per profile over a batch) and ``setup`` is ``setup_share``."""
    horizon_days = horizon_years * DAYS_PER_YEAR
    return _range([productive_at(e, lead, execution, setup, horizon_days, waits) for e in ends], ends)


def stability_of(
    gpus: Any, useful: Any, rate: Range, detection: Range, restart: Range, write: Range, ends: Ends = ALL
) -> Stability:
    """What failures cost a job on ``gpus`` GPUs (``app.core.reliability``), ``useful`` GPU-hours a year.

    Interruptions grow with the GPUs (``rate`` per GPU-year); each costs detection + restart + half the
    Young–Daly checkpoint interval, which follows from the job's MTBF and the checkpoint ``write``
    time (hours); automation (the option's and the ops team's) shortens detection and restart. The low
    end of every figure is the best case. ``sources`` are left to the caller."""
    # best case (low end): fewest failures, fastest recovery, quickest checkpoints; worst at the high end
    jobs: list[Any] = [None, None, None]
    for e in ends if len(ends) == 3 else sorted({*ends, *(2 - e for e in ends)}):
        jobs[e] = job_at(gpus, rate[e], detection[e], restart[e], write[e])
    per_year = useful / HOURS_PER_YEAR
    goodput = _range([jobs[2 - e][2] for e in ends], ends)
    interval = _range([jobs[e][0] for e in ends], ends)
    per_interruption = _range([detection[e] + restart[e] + jobs[e][0] * 0.5 for e in ends], ends)
    interruptions = _range([rate[e] * per_year for e in ends], ends)
    lost = _range([useful * (1.0 / maximum(jobs[e][2], MIN_GOODPUT) - 1.0) for e in ends], ends)
    return Stability(interruptions, per_interruption, lost, goodput, (), interval)


def usability_of(
    infra_fte: Range,
    coverage: Range,
    team_size: Any,
    setup_steps: str,
    ends: Ends = ALL,
    *,
    engineers_work: Range | None = None,
) -> Usability:
    """Share of the team's time left for models.

    The option needs ``infra_fte`` of infrastructure work; the team's own ops staff absorb
    ``coverage`` (``ops_coverage_<ops_team>``) of it; the rest falls on the algorithm engineers:
    ``focus = max(0, 1 − infra_fte × (1 − coverage) ÷ team_size)``. ``engineers_work``: the part of
    ``infra_fte`` that can fall on them where the rest is done by staff the option prices (an own
    cluster's hired ops teams: priced once, never also taken from the engineers). ``sources`` are left
    to the caller.
    """
    unmet = unmet_of(infra_fte if engineers_work is None else engineers_work, coverage, ends)
    focus = _range([focus_at(e, unmet, team_size) for e in ends], ends)
    return Usability(infra_fte, unmet, setup_steps, focus, ())


def unmet_of(work: Range, coverage: Range, ends: Ends = ALL) -> Range:
    """The part of ``work`` the team's ops staff do not absorb: ``work × (1 − coverage)``."""
    return _range([work[e] * (1 - coverage[2 - e]) for e in ends], ends)


def software_work_of(base: Range, per_server: Range, servers: Any, share: Any = 1.0, ends: Ends = ALL) -> Range:
    """Environments, scheduling, checkpoints, monitoring: ``(infra_fte_base + infra_fte_per_server ×
    servers) × share``, where ``share`` is the part of the year the machines are in use for options
    paid by use (the profile's utilization) and 1 for an own cluster, which runs all year."""
    return _range([(base[e] + per_server[e] * servers) * share for e in ends], ends)


def effective_cost(total: Range, extras: Iterable[Range], execution: Range, goodput: Range, useful_total: Any) -> Range:
    """The one money scale: ``(total + extras) ÷ (useful GPU-hours over the horizon ×
    execution_efficiency × goodput)``, goodput floored at ``MIN_GOODPUT``."""
    added = sum(extras, ZERO)
    return _range([effective_at(e, total[e], added[e], execution, goodput, useful_total) for e in ALL], ALL)


def waiting_cost(waiting_days: Range, delay_cost_per_day: Any) -> Range | None:
    """``lead_time_days × delay_cost_per_day`` (None where the profile prices no delay; an absent
    value of a batch's profile is NaN and costs nothing)."""
    per_day = delay_per_day(delay_cost_per_day)
    if per_day is None:
        return None
    waiting: Range = waiting_days * per_day
    return waiting


STALLED = msg("violation.stalled", "at this scale failures come faster than the job recovers: no progress")


def stalled(goodput: Range) -> Any:
    """Where a job's failures come faster than it recovers: it makes no progress (infeasible)."""
    return goodput.expected <= MIN_GOODPUT


def _range(values: list[Any], ends: Ends) -> Range:
    """Values at ``ends`` as a Range, NaN at the ends not computed (``Columns.range``)."""
    if len(values) == 3:
        return tuple.__new__(Range, tuple(values))
    found: list[Any] = [NAN, NAN, NAN]
    for e, v in zip(ends, values, strict=True):
        found[e] = v
    return tuple.__new__(Range, tuple(found))


def with_effective_cost(a: Assessment) -> Assessment:
    """An assessment from a plugin that prices no effective cost (written before methodology v2) gets
    the part it can: ``per useful GPU-hour ÷ (execution_efficiency × goodput)``, so that every option is
    scored on the same money scale."""
    if a.cost.per_effective_gpu_hour is not None:
        return a
    work = a.efficiency.execution_efficiency * a.stability.goodput.floor_at(MIN_GOODPUT)
    return dataclasses.replace(
        a, cost=dataclasses.replace(a.cost, per_effective_gpu_hour=a.cost.per_useful_gpu_hour / work)
    )
