"""Rented cloud GPU instances (租用GPU实例): on demand, spot, reserved for one or three years, monthly, or
capacity blocks — every instance offer of the price books for the profile's GPU model.

On demand and spot, every held hour is paid: held hours are the useful hours over the utilization a
team achieves on held instances, never more than every hour of the instances (``held_hours``). A
reservation holds whole instances all the time for whole terms (``whole_terms``: a 2-year horizon on
a 3-year reservation pays three years). A reservation the source prices only as a discount off on
demand is derived from the on-demand offer. See docs/methodology.md, "Rented instances".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.sdk import (
    DAYS_PER_YEAR,
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Bridge,
    Candidate,
    Columns,
    Efficiency,
    LineItem,
    OfferKernel,
    OptionPlugin,
    OptionSpec,
    Profile,
    Quote,
    Range,
    SourceRef,
    Stability,
    annuity,
    held_at,
    money_range,
    msg,
    num,
    pct,
    plan_name,
)

KEY = "rented_gpu_instances"
VERSION = "3.0.0"
#: how long each plan commits, in years; None: billed for the hours held
PLAN_TERM_YEARS: dict[str, float | None] = {
    "on_demand": None,
    "spot": None,
    "reserved_6m": 0.5,
    "reserved_1y": 1.0,
    "reserved_3y": 3.0,
    "savings_plan_1y": 1.0,
    "savings_plan_3y": 3.0,
    "committed_use_1y": 1.0,
    "committed_use_3y": 3.0,
    "monthly": 1 / 12,
    # booked by the day for at most ``max_term_days`` (182): a longer horizon is renewals at the row's price
    "capacity_block": 1 / 365,
}
#: the plans whose capacity the provider may take back at any time
PREEMPTIBLE = frozenset({"spot"})


def _bill(paid: Any, price: Any, years: Any) -> tuple[Any, Any]:
    """A year of the GPU-hours ``paid`` at ``price`` per GPU-hour, and of the ``years`` paid: numbers for one
    offer's quote, arrays over offers in the choice's one pass (``RentedKernel.expected_choice``)."""
    annual = paid * price
    return annual, annual * years


class RentedKernel(OfferKernel):
    """Rented instances compiled: every instance offer of the price books, and the reservations the
    price books price as a discount off an on-demand offer."""

    preemptible_plans = PREEMPTIBLE
    requires = (
        "discount_rate",
        "held_utilization",
        "detection_hours",
        "restart_hours",
        "spot_interruptions_per_gpu_year",
        "spot_reliable_gpus",
        "storage_tb_per_gpu",
        "egress_share",
    )
    #: an answer lists the best offer of each other provider, not more regions of one
    one_per_provider = True
    setup_steps = msg(
        "setup.rented_gpu_instances", "environment set-up before each run, your own scheduling and checkpoints"
    )

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        found = self.offers("instance_hour", gpu_model)
        found += self.derived_offers(found, base_plan="on_demand")
        return [self.candidate(o) for o in found if o.plan in PLAN_TERM_YEARS]

    def bridge(self, at: Columns) -> Bridge | None:
        """Renting the profile's GPUs on demand while another option's capacity is procured: the cheapest
        on-demand offer the profile allows that can run its largest job (``held_hours`` at
        ``held_utilization``), a year of it (at the ends ``at.ends``)."""
        key = ("bridge", self.option)
        if key in at.memo:
            found: Bridge | None = at.memo[key]
            return found
        job = at.job_gpus
        p = at.profile
        narrowed = p.providers is not None or p.regions is not None
        on_demand = None if narrowed else self.compiled.get(("on_demand", p.gpu_model))
        if on_demand is None:  # whatever plan the profile rents on: the on-demand offers it allows
            allowed = self.candidates(dataclasses.replace(p, rental_plan=None))
            on_demand = [c for c in allowed if c.plan == "on_demand"]
            if not narrowed:  # one list per GPU model (a request's providers and regions are not kept)
                self.compiled[("on_demand", p.gpu_model)] = on_demand
        # the offers that can run the largest job: all of it, or per profile of a batch
        fits = [(c, True if c.multi_node else ~np.asarray(at.gt(job, c.node_gpus))) for c in on_demand]
        usable = [(c, where) for c, where in fits if at.holds(where)]
        found = None
        if usable:
            held = self.held_share(at.profile.held_share)
            ceiling = at.gpus * HOURS_PER_YEAR
            ceiling = ceiling if isinstance(ceiling, np.ndarray) else float(ceiling)
            # the cheapest that fits (the offers come cheapest per GPU first): per profile over a batch
            cheapest = min((c for c, _ in usable), key=lambda c: c.sort_key[0])
            if all(where is True or bool(np.all(where)) for _, where in usable) or not at.arrays:
                price = cheapest.per_gpu
                yearly = at.range([held_at(e, at.useful, held, ceiling) * price[e] for e in at.ends])
            else:
                masks = [np.broadcast_to(where, np.shape(at.gpus)) for _, where in usable]
                yearly = at.range(
                    [
                        np.select(
                            masks, [held_at(e, at.useful, held, ceiling) * c.per_gpu[e] for c, _ in usable], np.inf
                        )
                        for e in at.ends
                    ]
                )
            found = Bridge(yearly, (*cheapest.offer.refs, self.ref("held_utilization")))
        at.memo[key] = found
        return found

    def quotes(self, at: Columns, candidates: Sequence[Candidate]) -> list[Quote]:
        useful = at.useful
        held = self.held_share(at.profile.held_share)
        rate = self.value("discount_rate").expected
        horizon_annuity = annuity(at.horizon, rate)
        ends = at.ends
        found = []
        for c in candidates:
            offer = c.offer
            per_unit = offer.gpus_per_unit
            held_gpus = at.ceil(at.gpus / per_unit) * per_unit
            every_hour = held_gpus * float(HOURS_PER_YEAR)
            term = PLAN_TERM_YEARS[offer.plan]
            if term is None:  # every hour held is paid, for the horizon
                years, factor = at.horizon, horizon_annuity
            else:  # whole instances held all the time, for whole terms
                years, factor = self.terms(at, term, rate)
            per_gpu = c.per_gpu
            store = self.storage(offer.row)
            rows, kept = [], []
            for e in ends:
                paid = held_at(e, useful, held, every_hour) if term is None else every_hour
                annual, hours_total = _bill(paid, per_gpu[e], years)
                npv = annual * factor
                # the data's storage (and egress) for the horizon, whatever the plan's terms
                data = None if store is None else self.stored(at, store, e, rate)
                kept += [] if data is None else [data]
                cost = annual if data is None else annual + data.annual
                spent = hours_total if data is None else hours_total + data.total
                npv = npv if data is None else npv + data.npv
                rows.append((paid, annual, hours_total, cost, spent, npv, npv / horizon_annuity))
            paid_r, annual_r, hours_total_r, cost_r, total_r, npv_r, equivalent_r = at.ranges(rows)
            lines: tuple[tuple[str, Any, Any, Any], ...] = (("instance_hours", annual_r, ZERO, hours_total_r),)
            if store is not None:
                lines += self.storage_lines(at, kept, store.egress_per_tb is not None)
            _, efficiency, stability, infra_fte, lead, violations = self.parts(at, c)
            found.append(
                self.finish(
                    at,
                    c,
                    annual=cost_r,
                    total=total_r,
                    paid=paid_r,
                    committed=term is not None,
                    npv=npv_r,
                    equivalent_annual=equivalent_r,
                    efficiency=efficiency,
                    stability=stability,
                    infra_fte=infra_fte,
                    lines=lines,
                    violations=violations,
                    waiting_days=lead,
                    detail=(held_gpus, paid_r),
                )
            )
        return found

    def parts(
        self, at: Columns, c: Candidate
    ) -> tuple[Candidate, Efficiency, Stability, Range, Range, list[tuple[str, Any]]]:
        """What the offer's quote shares with other offers (``OfferKernel.expected_keys``): its efficiency
        for its lead time and nodes, its stability (spot adds the provider's interruptions), the team's work
        on its instances, its lead time and the hard constraints it breaks (a spot row without a stated
        capacity: beyond the GPUs spot reliably gives)."""
        offer = c.offer
        lead = self.lead(c)
        violations = self.constraints(c, at)
        spot = offer.plan == "spot"
        if spot and offer.row.capacity_gpus is None:  # a spot row states its capacity, else the assumption
            too_many = at.gt(at.gpus, self.value("spot_reliable_gpus").expected)
            if at.holds(too_many):
                violations.append(("spot_capacity", too_many))
        return (
            c,
            self.efficiency(at, lead, scaling=self.scaling(c, at)),
            self.stability(at, extra_rate="spot_interruptions_per_gpu_year" if spot else None),
            self.machine_work(c, at, at.utilization),
            lead,
            violations,
        )

    def expected_choice(self, at: Columns, candidates: Sequence[Candidate]) -> tuple[list[float], list[bool]]:
        """The offers' costs per effective GPU-hour at the expected end, in one pass over their columns:
        the GPUs held in whole instances, the hours paid (every hour on a commitment, else ``held_at``), a
        year of them at each price and the years paid, plus the data's storage and egress — ``quotes``'
        figures, bit for bit, with ``OfferKernel.expected_keys`` adding the shared parts."""
        useful = at.useful
        held = self.held_share(at.profile.held_share)
        rate = self.value("discount_rate").expected
        n = len(candidates)
        per_unit, price, years, data = np.empty(n), np.empty(n), np.empty(n), np.zeros(n)
        hourly = np.empty(n, dtype=bool)
        parts = []
        for i, c in enumerate(candidates):
            offer = c.offer
            per_unit[i] = offer.gpus_per_unit
            price[i] = c.per_gpu[1]
            term = PLAN_TERM_YEARS[offer.plan]
            hourly[i] = term is None
            years[i] = at.horizon if term is None else self.terms(at, term, rate)[0]
            store = self.storage(offer.row)
            if store is not None:
                data[i] = self.stored(at, store, 1, rate).total
            parts.append(self.parts(at, c))
        every_hour = np.ceil(at.gpus / per_unit) * per_unit * float(HOURS_PER_YEAR)
        paid = np.where(hourly, held_at(1, useful, held, every_hour), every_hour)
        return self.expected_keys(at, _bill(paid, price, years)[1] + data, parts)

    def violation_reason(self, profile: Profile, quote: Quote, code: str) -> str:
        if code == "spot_capacity":
            shown = num(self.value("spot_reliable_gpus").expected)
            text = f"spot capacity is not committed: a plan can count on about {shown} GPUs"
            return msg("violation.spot_capacity", text, gpus=shown)
        return super().violation_reason(profile, quote, code)

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        c = quote.candidate
        assert c is not None
        offer = c.offer
        held_gpus, paid = quote.detail
        useful = profile.useful_gpu_hours_per_year
        term = PLAN_TERM_YEARS[offer.plan]
        if term is None:
            basis = msg(
                "basis.rented_held",
                "min(GPUs held × 8,760 hours, useful GPU-hours ÷ utilization of held instances) × price per "
                "GPU-hour × the horizon's years",
            )

            def held_note() -> str:
                return msg(
                    "note.rented_held",
                    f"at {pct(profile.utilization)} utilization you pay for {num(paid.expected / profile.gpus)} "
                    f"hours of each GPU to use {num(useful / profile.gpus)}",
                    utilization=pct(profile.utilization),
                    paid_hours=num(paid.expected / profile.gpus),
                    useful_hours=num(useful / profile.gpus),
                )

            read: tuple[SourceRef, ...] = (self.ref("held_utilization"), self.ref("discount_rate"))
        else:
            basis = msg(
                "basis.rented_reserved",
                "GPUs held × 8,760 hours × price per GPU-hour × the whole terms that cover the horizon",
            )
            plan = plan_name(offer.plan)

            def held_note() -> str:
                return msg(
                    "note.rented_reserved",
                    f"reserved in whole terms ({plan}), you pay for every hour of {num(held_gpus)} GPUs",
                    plan=plan,
                    gpus=num(held_gpus),
                )

            read = (self.ref("discount_rate"),)
        _, annual, upfront, total = quote.lines[0]
        first = LineItem(
            key="instance_hours",
            label=msg("line.instance_hours", f"{c.label}: {num(held_gpus)} GPUs", offer=c.label, gpus=num(held_gpus)),
            annual=annual,
            upfront=upfront,
            basis=basis,
            sources=(*offer.refs, *self.refs(read)),
            total=total,
        )
        # a spot row that states its capacity is its own source; else the assumption caps it
        capped = () if offer.row.capacity_gpus else (self.ref("spot_reliable_gpus"),)
        spot_refs = (self.ref("spot_interruptions_per_gpu_year"), *capped) if offer.plan == "spot" else ()
        scaling = self.scaling(c, self.columns(profile))
        scaling_refs = () if scaling is None else (self.ref(scaling[0]),)

        def notes() -> tuple[str, ...]:  # composed where an answer reads them
            held, shown = held_note(), money_range(annual, profile.currency)
            said = msg(
                "note.rented", f"Rented ({c.label}): {shown} a year; {held}.", offer=c.label, annual=shown, held=held
            )
            return (said, *renewal_risk(c, profile))

        return self.assessment_of(
            profile,
            quote,
            breakdown=(first, *self.storage_items(offer.row, quote.lines[1:])),
            notes=notes,
            efficiency_refs=self.efficiency_refs(self.lead_refs(c), spot_refs, scaling_refs),
            stability_refs=self.stability_refs("detection_hours", "restart_hours"),
            usability_refs=self.usability_refs(profile),
        )


def renewal_risk(c: Candidate, profile: Profile) -> tuple[str, ...]:
    """A short reservation (``max_term_days``: Capacity Blocks) held beyond its longest term is priced as
    renewals at the row's price: the answer says so (``reason.renewal-risk``), a soft reason, not a refusal."""
    longest = c.offer.row.max_term_days
    horizon_days = profile.horizon_years * DAYS_PER_YEAR
    if longest is None or horizon_days <= longest:
        return ()
    terms = num(math.ceil(horizon_days / longest - 1e-9))
    return (
        msg(
            "reason.renewal-risk",
            f"Renewal risk: {c.label} is sold for at most {longest:,} days at a time, so the horizon is priced "
            f"as {terms} terms bought one after another at today's price; neither that price nor the capacity "
            "of a later term is committed.",
            offer=c.label,
            days=f"{longest:,}",
            terms=terms,
        ),
    )


class RentedGpuInstances(OptionPlugin):
    sdk = ">=4,<5"
    spec = OptionSpec(
        key=KEY,
        name="Rented GPU instances",
        description="Rent GPU server instances from a cloud, on demand, on spot or reserved: no upfront "
        "investment and resources in minutes, but every held hour is paid and the environment, "
        "scheduling and checkpoints are yours to manage.",
        version=VERSION,
        plans=("on_demand", "reserved_1y"),
        price_plans=tuple(PLAN_TERM_YEARS),
        rental_plans=tuple(PLAN_TERM_YEARS),
        bridges_lead_time=True,
        price_formats=("skypilot",),  # a cloud's catalog of VM instances (``prices import --format skypilot``)
    )
    kernel = RentedKernel
    messages = OptionPlugin.catalogs("plugins", "locales/rented_gpu_instances.{lang}.toml")


plugin = RentedGpuInstances()
