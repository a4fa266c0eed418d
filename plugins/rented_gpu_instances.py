"""Rented cloud GPU instances (租用GPU实例): on demand, spot, reserved for one or three years, monthly, or
capacity blocks — every instance offer of the price books for the profile's GPU model.

On demand and spot, every held hour is paid: held hours are the useful hours over the utilization a
team achieves on held instances, never more than every hour of the instances. A reservation holds
whole instances all the time for whole terms (a 2-year horizon on a 3-year reservation pays three
years). A reservation the source prices only as a discount off on demand is derived from the
on-demand offer. See docs/methodology.md, "Rented instances".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core import (
    ANY,
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Inputs,
    Knowledge,
    LineItem,
    Offer,
    OptionPlugin,
    OptionSpec,
    Price,
    Profile,
    Range,
    Violation,
    ceil_number,
    model,
    offers,
)
from app.core.capital import annuity
from app.core.text import money_range, msg, num, pct

KEY = "rented_gpu_instances"
VERSION = "2.0.0"
#: how long each plan commits, in years; None: billed for the hours held
PLAN_TERM_YEARS: dict[str, float | None] = {
    "on_demand": None,
    "spot": None,
    "reserved_1y": 1.0,
    "reserved_3y": 3.0,
    "monthly": 1 / 12,
    "capacity_block": 1 / 365,
}


class RentedGpuInstances(OptionPlugin):
    spec = OptionSpec(
        key=KEY,
        name="Rented GPU instances",
        description="Rent GPU server instances from a cloud, on demand, on spot or reserved: no upfront "
        "investment and resources in minutes, but every held hour is paid and the environment, "
        "scheduling and checkpoints are yours to manage.",
        version=VERSION,
        plans=("on_demand", "reserved_1y"),
    )

    def offers(self, profile: Profile, knowledge: Knowledge) -> Sequence[Offer]:
        rows = offers.anchors(knowledge, profile, option=KEY, item="instance_hour")
        found = [o for r in rows if (o := offers.priced(knowledge, profile, r)) is not None]
        quoted = {(o.row.provider, o.row.subject, o.row.region, o.plan) for o in found}
        for base in [o for o in found if o.plan == "on_demand"]:
            for d in _discounts(knowledge, profile, base):
                if (base.row.provider, base.row.subject, base.row.region, d.plan) in quoted:
                    continue  # the provider quotes that plan itself
                derived = offers.priced(
                    knowledge, profile, base.row, plan=d.plan, factor=d.value.complement(), extra_refs=(d.ref,)
                )
                if derived is not None:
                    found.append(derived)
        if profile.rental_plan is not None:
            found = [o for o in found if o.plan == profile.rental_plan]
        return [o for o in found if o.plan in PLAN_TERM_YEARS]

    def assess_offer(self, profile: Profile, knowledge: Knowledge, offer: Offer) -> Assessment:
        inputs = Inputs(knowledge, KEY, profile)
        instances = ceil_number(profile.gpus / offer.gpus_per_unit)
        held_gpus = instances * offer.gpus_per_unit
        useful = profile.useful_gpu_hours_per_year
        term = PLAN_TERM_YEARS[offer.plan]
        if term is None:
            held_utilization = inputs("held_utilization")
            paid = (useful / held_utilization).cap(held_gpus * HOURS_PER_YEAR)
            years_paid = profile.horizon_years
            basis = "min(GPUs held × 8760, useful GPU-hours ÷ held_utilization) × price per GPU-hour × horizon_years"
            held_note = msg(
                "note.rented_held",
                f"at {pct(profile.utilization)} utilization you pay for {num(paid.expected / profile.gpus)} "
                f"hours of each GPU to use {num(useful / profile.gpus)}",
                utilization=pct(profile.utilization),
                paid_hours=num(paid.expected / profile.gpus),
                useful_hours=num(useful / profile.gpus),
            )
        else:
            paid = Range.point(held_gpus * HOURS_PER_YEAR)
            years_paid = ceil_number(profile.horizon_years / term - 1e-9) * term
            basis = "GPUs held × 8760 × price per GPU-hour × whole terms covering the horizon"
            held_note = msg(
                "note.rented_reserved",
                f"reserved in whole terms ({offer.plan}), you pay for every hour of {num(held_gpus)} GPUs",
                plan=offer.plan,
                gpus=num(held_gpus),
            )
        annual = paid * offer.per_gpu
        total = annual * years_paid
        rate = inputs("discount_rate").expected
        npv = annual * annuity(years_paid, rate)
        line = LineItem(
            "instance_hours",
            msg("line.instance_hours", f"{offer.label}: {num(held_gpus)} GPUs", offer=offer.label, gpus=num(held_gpus)),
            annual,
            ZERO,
            basis,
            (*offer.refs, *inputs.take_refs()),
            total=total,
        )
        lead = offer.row.lead_time_days or inputs("lead_time_days")
        cost = model.cost(
            profile,
            annual=annual,
            total=total,
            paid=paid,
            committed=term is not None,
            breakdown=(line,),
            npv=npv,
            equivalent_annual=npv / annuity(profile.horizon_years, rate),
        )
        spot = inputs("spot_interruptions_per_gpu_year") if offer.plan == "spot" else None
        violations = offers.violations(offer, profile, knowledge, lead_time_days=lead)
        if offer.plan == "spot":
            reliable = inputs("spot_reliable_gpus").expected
            violations = (*violations, *_spot_capacity(profile.gpus, reliable))
        machines = offers.machines(knowledge, profile, offer)
        return model.assessment(
            KEY,
            inputs,
            profile,
            cost=cost,
            efficiency=model.efficiency(inputs, profile, lead_time_days=lead),
            stability=model.stability(inputs, profile, extra_rate=spot),
            infra_fte=model.software_work(inputs, machines, share=profile.utilization),
            setup_steps=msg(
                "setup.rented_gpu_instances", "environment set-up before each run, your own scheduling and checkpoints"
            ),
            notes=(
                msg(
                    "note.rented",
                    f"Rented ({offer.label}): {money_range(annual, profile.currency)} a year; {held_note}.",
                    offer=offer.label,
                    annual=money_range(annual, profile.currency),
                    held=held_note,
                ),
            ),
            offer=offer.info(),
            violations=violations,
            region=offer.row.region,
            waiting_days=lead,
        )


def _spot_capacity(gpus: Any, reliable: Any) -> tuple[Violation, ...]:
    """Spot commits no capacity: more GPUs than a plan can count on getting is infeasible.
    ``reliable`` is an array of draws in a Monte Carlo run (the array contract): formatted by
    ``app.core.text``, never by an f-string."""
    too_many = (
        np.asarray(gpus) > reliable
        if isinstance(gpus, np.ndarray) or isinstance(reliable, np.ndarray)
        else gpus > reliable
    )
    if not np.any(too_many):
        return ()
    shown = num(reliable)
    text = f"spot capacity is not committed: a plan can count on about {shown} GPUs"
    return (Violation(msg("violation.spot_capacity", text, gpus=shown), too_many),)


def _discounts(knowledge: Knowledge, profile: Profile, base: Offer) -> list[Price]:
    """The provider's reservation discounts that apply to an on-demand offer."""
    r = base.row
    return [
        d
        for d in knowledge.rows(KEY, "reservation_discount", profile.as_of)
        if d.provider == r.provider
        and d.subject in (r.subject, ANY)
        and d.gpu_model in (r.gpu_model, ANY)
        and d.region in (r.region, "global", ANY)
    ]


plugin = RentedGpuInstances()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_assess = plugin.compute_advisor_assess
