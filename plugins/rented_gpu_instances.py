"""Rented cloud GPU instances (租用GPU实例), on demand or reserved for a year.

On demand, every held hour is paid: held hours are the useful hours over the utilization a
team achieves on held instances, never more than every hour of the period. A yearly
reservation holds whole servers all year at the reservation discount. See
docs/methodology.md, "Rented instances".
"""

from __future__ import annotations

from app.core import model
from app.core.knowledge import Knowledge, Price
from app.core.ranges import Range, ceil_number
from app.core.text import money_range, num, pct
from app.core.types import HOURS_PER_YEAR, Assessment, Cost, LineItem, OptionSpec, Profile
from app.hookspecs import hookimpl

KEY = "rented_gpu_instances"
VERSION = "1.0.0"
ZERO = Range.point(0)


@hookimpl
def compute_advisor_options() -> list[OptionSpec]:
    return [
        OptionSpec(
            key=KEY,
            name="Rented GPU instances",
            description="Rent GPU server instances from a cloud, on demand or reserved for a year: no upfront "
            "investment and resources in minutes, but every held hour is paid and the environment, "
            "scheduling and checkpoints are yours to manage.",
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

    def price(item: str, unit: str) -> Price:
        return knowledge.price(KEY, item, unit=unit, currency=profile.currency, as_of=profile.as_of, subject=server.key)

    hourly = price("instance_hour", "per_server_hour")
    per_gpu_hour = hourly.value / server.gpus_per_server
    useful = profile.useful_gpu_hours_per_year
    all_hours = profile.gpus * HOURS_PER_YEAR

    if profile.rental_plan == "reserved_1y":
        discount = price("reservation_discount", "fraction")
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

    cost = Cost(
        annual=annual,
        total=total,
        upfront=ZERO,
        per_useful_gpu_hour=annual / useful,
        useful_gpu_hours=useful,
        paid_gpu_hours=paid,
        committed=committed,
        breakdown=(line,),
    )
    infra_fte = inputs("infra_fte_base") + inputs("infra_fte_per_server") * servers
    notes = (f"Rented: {money_range(annual, profile.currency)} a year; {held_note}.",)
    return Assessment(
        option=KEY,
        cost=cost,
        efficiency=model.efficiency(inputs, profile),
        stability=model.stability(inputs, profile),
        usability=model.usability(
            inputs,
            profile,
            infra_fte,
            "environment set-up before each run, your own scheduling and checkpoints",
        ),
        notes=notes,
    )
