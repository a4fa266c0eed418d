"""Managed AI compute platform (智算平台, e.g. 天翼云息壤智算): pooled GPUs, scheduling, preset images,
automatic fault detection, job migration and checkpoint management.

Billed GPU-hours are the useful hours over the platform's pooled utilization, never more than
every hour of the period. See docs/methodology.md, "Platform".
"""

from __future__ import annotations

from app.core import (
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Inputs,
    Knowledge,
    LineItem,
    OptionPlugin,
    OptionSpec,
    Profile,
    model,
)
from app.core.text import money_range, num, pct

KEY = "ai_compute_platform"
VERSION = "1.0.0"


class AiComputePlatform(OptionPlugin):
    spec = OptionSpec(
        key=KEY,
        name="AI compute platform",
        description="A managed platform with pooled GPUs and smart scheduling, preset images, automatic "
        "fault detection, job migration and checkpoint management: compute in minutes, billed for "
        "the GPU-hours jobs use.",
        version=VERSION,
    )

    def assess(self, profile: Profile, knowledge: Knowledge) -> Assessment:
        inputs = Inputs(knowledge, KEY, profile)
        server, servers = model.hardware(knowledge, profile)
        price = inputs.price("gpu_hour", "per_gpu_hour", server.key)
        pooled = inputs("pooled_utilization")
        useful = profile.useful_gpu_hours_per_year
        billed = (useful / pooled).cap(profile.gpus * HOURS_PER_YEAR)
        annual = billed * price.value
        line = LineItem(
            "gpu_hours",
            "Platform GPU-hours",
            annual,
            ZERO,
            "min(gpus × 8760, useful GPU-hours ÷ pooled_utilization) × price per GPU-hour",
            (price.ref, *inputs.take_refs()),
        )
        cost = model.cost(
            profile,
            annual=annual,
            total=annual * profile.horizon_years,
            paid=billed,
            committed=False,
            breakdown=(line,),
        )
        notes = (
            f"Platform: {money_range(annual, profile.currency)} a year; pooling bills "
            f"{num(billed.expected)} GPU-hours for {num(useful)} useful ones "
            f"({pct(pooled.low)}–{pct(pooled.high)} pooled utilization).",
        )
        return model.assessment(
            KEY,
            inputs,
            profile,
            cost=cost,
            infra_fte=inputs("infra_fte_base") + inputs("infra_fte_per_server") * servers,
            setup_steps="preset images and a graphical job console",
            notes=notes,
        )


plugin = AiComputePlatform()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_assess = plugin.compute_advisor_assess
