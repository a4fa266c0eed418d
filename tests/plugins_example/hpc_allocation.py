"""An HPC centre's GPU allocation: a third-party option for compute-advisor (docs/plugins.md).

Billed per GPU-hour used at the centre's price; the allocation starts after a queue, and the centre
has only so many GPUs. Everything comes from the knowledge base: the price row and the assumptions
of option ``hpc_allocation`` (loaded with the seeds), and general assumptions such as
``gpu_failure_rate_per_gpu_year``.
"""

from __future__ import annotations

from app.core import (
    ZERO,
    Assessment,
    Inputs,
    Knowledge,
    LineItem,
    MissingKnowledge,
    OptionPlugin,
    OptionSpec,
    Profile,
    Range,
    Violation,
    ceil_number,
    model,
    text,
)

KEY = "hpc_allocation"
REGION = "CN"
GPUS_PER_NODE = 8


class HpcAllocation(OptionPlugin):
    spec = OptionSpec(
        key=KEY,
        name="HPC centre allocation",
        description="GPU-hours on a regional HPC centre's shared cluster: billed per GPU-hour used, after a queue.",
        version="0.1.0",
    )

    def assess(self, profile: Profile, knowledge: Knowledge) -> Assessment:
        inputs = Inputs(knowledge, KEY, profile)
        found = inputs.money("gpu_hour", units=("per_gpu_hour",), region=REGION)
        if found is None:
            raise MissingKnowledge(f"no {KEY} gpu_hour price in {REGION} valid on {profile.as_of}")
        price, row = found  # the price in the profile's currency (a Range), and its row
        # a number, or one element per profile in a batch: only element-wise arithmetic from here on
        useful = profile.useful_gpu_hours_per_year
        annual = price * useful
        total = annual * profile.horizon_years
        line = LineItem(
            "gpu_hours",
            "Allocated GPU-hours",
            annual,
            ZERO,
            "useful GPU-hours × price per GPU-hour",
            (row.ref, *inputs.take_refs()),
            total=total,
        )
        cost = model.cost(
            profile, annual=annual, total=total, paid=Range.point(useful), committed=False, breakdown=[line]
        )
        queue = inputs("lead_time_days")
        violations: tuple[Violation, ...] = ()
        if row.capacity_gpus is not None:  # a column of the row, never an array: a plain branch is fine
            reason = f"the centre allocates at most {row.capacity_gpus} GPUs"
            violations = (Violation(reason, profile.gpus > row.capacity_gpus),)  # a bool, or an array of them
        return model.assessment(
            KEY,
            inputs,
            profile,
            cost=cost,
            efficiency=model.efficiency(inputs, profile, lead_time_days=queue),
            stability=model.stability(inputs, profile),
            infra_fte=model.software_work(inputs, ceil_number(profile.gpus / GPUS_PER_NODE), share=profile.utilization),
            setup_steps="the centre's batch scheduler and software modules",
            notes=(f"HPC allocation: {text.money_range(annual, profile.currency)} a year at {row.provider}.",),
            violations=violations,
            region=REGION,
            waiting_days=queue,
        )


plugin = HpcAllocation()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_assess = plugin.compute_advisor_assess
