"""Training-run planner: how long a training run takes and what it costs on each option.

Pure computation on the knowledge snapshot and the option plugins' assessments (docs/training-plans.md).
Every figure comes from the knowledge base or the request; the only constants are the 6 FLOPs per
parameter and token of dense transformer training and the units of time (3600, 24, 365, 8760).

- training FLOPs ``= 6 × parameters × tokens`` (or the FLOPs given);
- GPU-hours ``= FLOPs ÷ (bf16_dense_tflops × 1e12 × MFU × 3600)``;
- per option, from its plugin's assessment of a full-load profile for the run:
  wall hours ``= GPU-hours ÷ gpus ÷ execution_efficiency``;
  interruptions ``= interruptions_per_year ÷ useful GPU-hours per year × GPU-hours``;
  lost hours ``= interruptions × hours lost per interruption`` (every GPU of the job waits);
  calendar days ``= lead_time_days + (setup_minutes_per_run ÷ 60 + wall hours + lost hours) ÷ 24``;
  GPU-hours billed ``= GPU-hours ÷ execution_efficiency + lost hours × gpus``;
  cost ``= cost per useful GPU-hour × GPU-hours billed``.

The run is one synchronous job on all its GPUs (the profile's ``largest_job_gpus`` is ``gpus``), and the
options apply the hard constraints a comparison applies (job shape, capacity, preemption…): a plan whose
offer breaks one says so (``PlanOutcome.refused``), with its figures, as a comparison does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.core.errors import ISOLATED, MissingKnowledge, failure
from app.core.kernel import Quote
from app.core.knowledge import Knowledge, Server
from app.core.offers import gpu_name, subject_name
from app.core.ranges import Range, holds_anywhere
from app.core.text import msg
from app.core.types import HOURS_PER_YEAR, Assessment, Profile
from app.core.vocab import OpsTeam

FLOPS_PER_PARAMETER_TOKEN = 6  # forward (2) + backward (4) FLOPs per parameter and token
TERA = 1e12
SECONDS_PER_HOUR = 3600
MINUTES_PER_HOUR = 60
HOURS_PER_DAY = 24
MFU_KEY = "mfu"


class PlanError(ValueError):
    """A computation left the range of numbers the plan can state (overflow, division by zero)."""


def training_flops(parameters: float, tokens: float) -> float:
    """``6 × parameters × tokens``: the compute of one pass over ``tokens`` for a dense model."""
    return FLOPS_PER_PARAMETER_TOKEN * parameters * tokens


def gpu_hours(flops: float, tflops: float, mfu: Range) -> Range:
    """GPU-hours of compute at the given MFU: the high MFU gives the low end."""
    if tflops <= 0:
        raise PlanError(f"the GPU's dense BF16 throughput is {tflops} TFLOPS")
    hours = Range.point(flops) / (mfu * (tflops * TERA * SECONDS_PER_HOUR))
    return _finite(hours, "GPU-hours")


def horizon_years(hours: Range, gpus: int) -> float:
    """The run's expected length on ``gpus`` GPUs at full speed, at least one day, in years."""
    return max(hours.expected / gpus, HOURS_PER_DAY) / HOURS_PER_YEAR


@dataclass(frozen=True, slots=True)
class Pricing:
    """Which server the options are priced on, and whether it carries the requested GPU."""

    #: the gpu_model the plugins see (None: the reference server)
    profile_gpu_model: str | None
    server: Server | None
    note: str | None


def pricing(knowledge: Knowledge, gpu_model: str, as_of: dt.date) -> Pricing:
    """Price on ``gpu_model``'s own offers when the price book has any valid on ``as_of`` (an option
    without one then reports it), else on the reference server's."""
    own = any(p.gpu_model == gpu_model and p.valid_on(as_of) for p in knowledge.prices)
    if own:
        server = next((s for s in knowledge.servers.values() if s.gpu_model_key == gpu_model), None)
        return Pricing(gpu_model, server, None)
    gpu = gpu_name(knowledge, gpu_model)
    try:
        server = knowledge.reference_server()
    except MissingKnowledge:
        text = f"Nothing for {gpu} is priced and the knowledge base has no reference server."
        return Pricing(None, None, msg("training.unpriced", text, gpu=gpu))
    name = subject_name(knowledge, server.key)
    return Pricing(
        None,
        server,
        msg(
            "training.reference_priced",
            f"Costs use the prices of the reference server ({name}) because nothing for {gpu} is priced on "
            f"{as_of}; compute time uses the {gpu}'s own throughput.",
            server=name,
            gpu=gpu,
            as_of=str(as_of),
        ),
    )


def run_profile(
    *,
    gpus: int,
    hours: Range,
    as_of: dt.date,
    currency: str,
    rental_plan: str | None,
    ops_team: OpsTeam,
    gpu_model: str | None,
) -> Profile:
    """The profile an option is assessed for: the run's GPUs at full load over the run's length, in one
    synchronous job across all of them, which tolerates no preemption (a comparison's defaults)."""
    return Profile(
        gpus=gpus,
        largest_job_gpus=gpus,
        utilization=1.0,
        horizon_years=horizon_years(hours, gpus),
        as_of=as_of,
        ops_team=ops_team,
        rental_plan=rental_plan,
        currency=currency,
        gpu_model=gpu_model,
    )


@dataclass(frozen=True, slots=True)
class OptionPlan:
    option: str
    training_hours: Range
    interruptions: Range
    hours_lost: Range
    lead_time_days: Range
    calendar_days: Range
    training_days: Range
    gpu_hours_billed: Range
    cost_per_useful_gpu_hour: Range
    total_cost: Range
    upfront_cost: Range
    committed: bool


def plan_option(option: str, assessment: Assessment | Quote, profile: Profile, hours: Range) -> OptionPlan:
    """One option's time and cost for a run of ``hours`` GPU-hours on ``profile.gpus`` GPUs, from its
    assessment (or the numbers of its chosen quote)."""
    eff = assessment.efficiency
    stab = assessment.stability
    gpus = profile.gpus
    training_hours = hours / gpus / eff.execution_efficiency
    per_gpu_hour = stab.interruptions_per_year / profile.useful_gpu_hours_per_year
    interruptions = per_gpu_hour * hours
    lost = interruptions * stab.hours_lost_per_interruption
    setup_hours = eff.setup_minutes_per_run * (1 / MINUTES_PER_HOUR)
    calendar = eff.lead_time_days + (setup_hours + training_hours + lost) * (1 / HOURS_PER_DAY)
    billed = hours / eff.execution_efficiency + lost * gpus
    price = assessment.cost.per_useful_gpu_hour
    return OptionPlan(
        option=option,
        training_hours=_finite(training_hours, "training hours"),
        interruptions=_finite(interruptions, "interruptions"),
        hours_lost=_finite(lost, "hours lost"),
        lead_time_days=_finite(eff.lead_time_days, "lead time"),
        calendar_days=_finite(calendar, "calendar days"),
        training_days=_finite(training_hours * (1 / HOURS_PER_DAY), "training days"),
        gpu_hours_billed=_finite(billed, "GPU-hours billed"),
        cost_per_useful_gpu_hour=_finite(price, "cost per useful GPU-hour"),
        total_cost=_finite(price * billed, "total cost"),
        upfront_cost=_finite(assessment.cost.upfront, "upfront cost"),
        committed=assessment.cost.committed,
    )


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    """One option's plan, or why it could not be made."""

    option: str
    plan: OptionPlan | None
    assessment: Quote | None = None
    error: str | None = None
    error_code: str | None = None
    #: the hard constraints the chosen offer breaks (kebab-case codes: ``multi-node``, ``capacity``…);
    #: empty when it can serve the run
    refused: tuple[str, ...] = ()
    #: the profile the plan was priced for (the run's, or over the owned years)
    profile: Profile | None = None


def plan_all(
    options: Iterable[str],
    choose: Callable[[str, Profile], Quote],
    profile: Profile,
    hours: Range,
    owned_years: Callable[[str], float],
) -> list[PlanOutcome]:
    """Plan the run on every option, isolating failures: a plugin that raises marks only its own option.

    An option that buys capital (an upfront cost) outlives one run: it is assessed over
    ``owned_years(option)`` (at least the run) and the run is charged its cost per useful GPU-hour
    there — buying a cluster for two months and reselling it is not what owning means."""
    outcomes = []
    for option in options:
        try:
            quote = choose(option, profile)
            run_profile = profile
            if quote.cost.upfront.expected > 0:
                run_profile = dataclasses.replace(
                    profile, horizon_years=max(profile.horizon_years, owned_years(option))
                )
                quote = choose(option, run_profile)
            refused = tuple(
                dict.fromkeys(code.replace("_", "-") for code, where in quote.violations if holds_anywhere(where))
            )
            outcomes.append(
                PlanOutcome(
                    option, plan_option(option, quote, run_profile, hours), quote, refused=refused, profile=run_profile
                )
            )
        except ISOLATED as exc:  # a gap or a failed plugin marks only its own option
            code, error = failure(exc)
            outcomes.append(PlanOutcome(option, None, None, error, code))
    return outcomes


def _finite(r: Range, what: str) -> Range:
    if not all(math.isfinite(v) for v in (r.low, r.expected, r.high)):
        raise PlanError(f"{what} out of range: {r.low}–{r.high}")
    return r
