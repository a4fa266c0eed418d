"""Managed AI compute platform (智算平台, e.g. 天翼云息壤智算): pooled GPUs, scheduling, preset images,
automatic fault detection, job migration and checkpoint management.

Pay as you go, the platform bills the useful hours over its pooled utilization, never more than
every hour of the GPUs; a subscription holds a pool all the time for whole terms. A management fee
the same provider charges per GPU is added. See docs/methodology.md, "Platform".
"""

from __future__ import annotations

from collections.abc import Sequence

from app.core import (
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Inputs,
    Knowledge,
    LineItem,
    Offer,
    OptionPlugin,
    OptionSpec,
    Profile,
    Range,
    ceil_number,
    model,
    offers,
)
from app.core.capital import annuity
from app.core.text import money_range, msg, num, pct

KEY = "ai_compute_platform"
VERSION = "2.0.0"
#: how long each plan commits, in years; None: billed for the GPU-hours used
PLAN_TERM_YEARS: dict[str, float | None] = {
    "pay_as_you_go": None,
    "subscription_monthly": 1 / 12,
    "subscription_1y": 1.0,
}
#: hours in a day, for fees quoted per GPU-day
HOURS_PER_DAY = 24


class AiComputePlatform(OptionPlugin):
    spec = OptionSpec(
        key=KEY,
        name="AI compute platform",
        description="A managed platform with pooled GPUs and smart scheduling, preset images, automatic "
        "fault detection, job migration and checkpoint management: compute in minutes, billed for "
        "the GPU-hours jobs use.",
        version=VERSION,
    )

    def offers(self, profile: Profile, knowledge: Knowledge) -> Sequence[Offer]:
        rows = offers.anchors(knowledge, profile, option=KEY, item="gpu_hour")
        found = [o for r in rows if (o := offers.priced(knowledge, profile, r)) is not None]
        return [o for o in found if o.plan in PLAN_TERM_YEARS]

    def assess_offer(self, profile: Profile, knowledge: Knowledge, offer: Offer) -> Assessment:
        inputs = Inputs(knowledge, KEY, profile)
        useful = profile.useful_gpu_hours_per_year
        term = PLAN_TERM_YEARS[offer.plan]
        pooled = inputs("pooled_utilization")
        if term is None:
            billed = (useful / pooled).cap(profile.gpus * HOURS_PER_YEAR)
            years_paid = profile.horizon_years
            basis = "min(gpus × 8760, useful GPU-hours ÷ pooled_utilization) × price per GPU-hour × horizon_years"
        else:
            billed = Range.point(profile.gpus * HOURS_PER_YEAR)
            years_paid = ceil_number(profile.horizon_years / term - 1e-9) * term
            basis = "gpus × 8760 × price per GPU-hour × whole terms covering the horizon"
        annual = billed * offer.per_gpu
        lines = [
            LineItem(
                "gpu_hours",
                msg("line.gpu_hours", f"Platform GPU-hours ({offer.label})", offer=offer.label),
                annual,
                ZERO,
                basis,
                (*offer.refs, *inputs.take_refs()),
                total=annual * years_paid,
            )
        ]
        fee = inputs.money(
            "platform_fee",
            units=("per_gpu_day", "per_gpu_hour"),
            provider=offer.row.provider,
            region=offer.row.region,
            gpus=profile.gpus,
        )
        if fee is not None:
            price, row = fee
            per_hour = price * (1 / HOURS_PER_DAY) if row.unit == "per_gpu_day" else price
            fee_annual = billed * per_hour
            lines.append(
                LineItem(
                    "platform_fee",
                    msg("line.platform_fee", "Platform management fee"),
                    fee_annual,
                    ZERO,
                    "billed GPU-hours × fee per GPU-hour",
                    (row.ref, *inputs.take_refs()),
                    total=fee_annual * years_paid,
                )
            )
        annual = sum((li.annual for li in lines), ZERO)
        total = sum((li.total or ZERO for li in lines), ZERO)
        rate = inputs("discount_rate").expected
        npv = annual * annuity(years_paid, rate)
        cost = model.cost(
            profile,
            annual=annual,
            total=total,
            paid=billed,
            committed=term is not None,
            breakdown=lines,
            npv=npv,
            equivalent_annual=npv / annuity(profile.horizon_years, rate),
        )
        lead = offer.row.lead_time_days or inputs("lead_time_days")
        shown = money_range(annual, profile.currency)
        notes = (
            msg(
                "note.platform",
                f"Platform ({offer.label}): {shown} a year; pooling bills "
                f"{num(billed.expected)} GPU-hours for {num(useful)} useful ones "
                f"({pct(pooled.low)}–{pct(pooled.high)} pooled utilization).",
                offer=offer.label,
                annual=shown,
                billed=num(billed.expected),
                useful=num(useful),
                pooled_low=pct(pooled.low),
                pooled_high=pct(pooled.high),
            ),
        )
        machines = offers.machines(knowledge, profile, offer)
        return model.assessment(
            KEY,
            inputs,
            profile,
            cost=cost,
            efficiency=model.efficiency(inputs, profile, lead_time_days=lead),
            stability=model.stability(inputs, profile),
            infra_fte=model.software_work(inputs, machines, share=profile.utilization),
            setup_steps=msg("setup.ai_compute_platform", "preset images and a graphical job console"),
            notes=notes,
            offer=offer.info(),
            violations=offers.violations(offer, profile, knowledge, lead_time_days=lead),
            region=offer.row.region,
            waiting_days=lead,
        )


plugin = AiComputePlatform()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_assess = plugin.compute_advisor_assess
