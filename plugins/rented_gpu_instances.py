"""Rented cloud GPU instances (租用GPU实例), on demand or reserved for a year.

On demand, every held hour is paid: held hours are the useful hours over the utilization a
team achieves on held instances, never more than every hour of the period. A yearly
reservation holds whole servers all year at the reservation discount. See
docs/methodology.md, "Rented instances".
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
    Range,
    ceil_number,
    model,
)
from app.core.text import money_range, num, pct

KEY = "rented_gpu_instances"
VERSION = "1.0.0"


class RentedGpuInstances(OptionPlugin):
    spec = OptionSpec(
        key=KEY,
        name="Rented GPU instances",
        description="Rent GPU server instances from a cloud, on demand or reserved for a year: no upfront "
        "investment and resources in minutes, but every held hour is paid and the environment, "
        "scheduling and checkpoints are yours to manage.",
        version=VERSION,
        plans=("on_demand", "reserved_1y"),
    )

    def assess(self, profile: Profile, knowledge: Knowledge) -> Assessment:
        inputs = Inputs(knowledge, KEY, profile)
        server, servers = model.hardware(knowledge, profile)
        hourly = inputs.price("instance_hour", "per_server_hour", server.key)
        per_gpu_hour = hourly.value / server.gpus_per_server
        useful = profile.useful_gpu_hours_per_year
        all_hours = profile.gpus * HOURS_PER_YEAR

        if profile.rental_plan == "reserved_1y":
            discount = inputs.price("reservation_discount", "fraction", server.key)
            paid = Range.point(servers * server.gpus_per_server * HOURS_PER_YEAR)
            annual = paid * per_gpu_hour * discount.value.complement()
            total = annual * ceil_number(profile.horizon_years)
            line = LineItem(
                "instance_hours",
                f"{servers} × {server.name}, reserved all year",
                annual,
                ZERO,
                "servers × 8760 h × hourly price × (1 − reservation discount)",
                (hourly.ref, discount.ref, server.ref),
            )
            held_note = (
                f"reserved for whole years, you pay for all {num(HOURS_PER_YEAR)} hours of each server "
                f"at {pct(discount.value.low)}–{pct(discount.value.high)} off"
            )
            committed = True
        else:
            held_utilization = inputs("held_utilization")
            paid = (useful / held_utilization).cap(all_hours)
            annual = paid * per_gpu_hour
            total = annual * profile.horizon_years
            line = LineItem(
                "instance_hours",
                f"{server.name} on demand",
                annual,
                ZERO,
                "min(gpus × 8760, useful GPU-hours ÷ held_utilization) × hourly price ÷ GPUs per server",
                (hourly.ref, server.ref, *inputs.take_refs()),
            )
            held_note = (
                f"at {pct(profile.utilization)} utilization you pay for "
                f"{num(paid.expected / profile.gpus)} hours of each GPU to use "
                f"{num(useful / profile.gpus)}"
            )
            committed = False

        cost = model.cost(profile, annual=annual, total=total, paid=paid, committed=committed, breakdown=(line,))
        return model.assessment(
            KEY,
            inputs,
            profile,
            cost=cost,
            infra_fte=inputs("infra_fte_base") + inputs("infra_fte_per_server") * servers,
            setup_steps="environment set-up before each run, your own scheduling and checkpoints",
            notes=(f"Rented: {money_range(annual, profile.currency)} a year; {held_note}.",),
        )


plugin = RentedGpuInstances()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_assess = plugin.compute_advisor_assess
