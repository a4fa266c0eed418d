"""Managed AI compute platform (智算平台, e.g. 天翼云息壤智算): pooled GPUs, scheduling, preset images,
automatic fault detection, job migration and checkpoint management.

Billed GPU-hours are the useful hours over the platform's pooled utilization, never more than
every hour of the period. See docs/methodology.md, "Platform".
"""

from __future__ import annotations

from app.core import model
from app.core.knowledge import Knowledge
from app.core.ranges import Range, ceil_number
from app.core.text import money_range, num, pct
from app.core.types import HOURS_PER_YEAR, Assessment, Cost, LineItem, OptionSpec, Profile
from app.hookspecs import hookimpl

KEY = "ai_compute_platform"
VERSION = "1.0.0"
ZERO = Range.point(0)


@hookimpl
def compute_advisor_options() -> list[OptionSpec]:
    return [
        OptionSpec(
            key=KEY,
            name="AI compute platform",
            description="A managed platform with pooled GPUs and smart scheduling, preset images, automatic "
            "fault detection, job migration and checkpoint management: compute in minutes, billed for "
            "the GPU-hours jobs use.",
            version=VERSION,
        )
    ]


@hookimpl
def compute_advisor_assess(option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
    if option != KEY:
        return None
    inputs = model.Inputs(knowledge, KEY)
    server = knowledge.server_for(profile.gpu_model)
    servers = ceil_number(profile.gpus / server.gpus_per_server)
    price = knowledge.price(
        KEY,
        "gpu_hour",
        unit="per_gpu_hour",
        currency=profile.currency,
        as_of=profile.as_of,
        subject=server.key,
    )
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
    cost = Cost(
        annual=annual,
        total=annual * profile.horizon_years,
        upfront=ZERO,
        per_useful_gpu_hour=annual / useful,
        useful_gpu_hours=useful,
        paid_gpu_hours=billed,
        committed=False,
        breakdown=(line,),
    )
    infra_fte = inputs("infra_fte_base") + inputs("infra_fte_per_server") * servers
    notes = (
        f"Platform: {money_range(annual, profile.currency)} a year; pooling bills "
        f"{num(billed.expected)} GPU-hours for {num(useful)} useful ones "
        f"({pct(pooled.low)}–{pct(pooled.high)} pooled utilization).",
    )
    return Assessment(
        option=KEY,
        cost=cost,
        efficiency=model.efficiency(inputs, profile),
        stability=model.stability(inputs, profile),
        usability=model.usability(inputs, profile, infra_fte, "preset images and a graphical job console"),
        notes=notes,
    )
