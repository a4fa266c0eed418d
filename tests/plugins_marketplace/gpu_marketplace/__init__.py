"""A GPU marketplace: community and datacentre hosts renting single GPUs and 8-GPU nodes by the hour,
on demand or interruptible — a third-party option for compute-advisor, written on ``app.sdk`` alone.

Every hour a GPU is held is paid, as on rented instances: the hours held are the useful hours over the
utilization a team achieves on held GPUs, never more than every hour of the GPUs rented (``held_at``).
An interruptible GPU is cheaper, but its host may take it back at any time: it serves only a profile
whose every job tolerates preemption (``preemptible_plans``), and its interruptions count as failures
(the option's ``interruptions_per_gpu_year``). A row says how many GPUs one rental has
(``gpus_per_unit``): that is the node a job runs on, so a job larger than a single-GPU rental needs
8-GPU nodes joined by InfiniBand; on single GPUs it is refused. Each rental is a machine the team looks
after. Its sentences are messages whose words, in English and Chinese, the package ships.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.sdk import (
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Candidate,
    Columns,
    LineItem,
    OfferKernel,
    OptionPlugin,
    OptionSpec,
    Profile,
    Quote,
    held_at,
    money_range,
    msg,
    num,
)

KEY = "gpu_marketplace"
#: what the marketplace's price rows sell
ITEM = "gpu_hour"
#: the plan whose GPUs a host may take back at any time
INTERRUPTIBLE = "interruptible"
#: the option's own assumption: an interruptible GPU's interruptions, added to the failure rate
INTERRUPTIONS = "interruptions_per_gpu_year"


class MarketplaceKernel(OfferKernel):
    preemptible_plans = frozenset({INTERRUPTIBLE})
    # the assumptions it reads beyond the shared methodology's: `seeds check` refuses seeds that lack one
    requires = ("held_utilization", "detection_hours", "restart_hours", INTERRUPTIONS)
    setup_steps = msg("gpu_marketplace.setup", "a container image on every host, your own scheduling and checkpoints")

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        """Every rental the price books list for ``gpu_model``; one rental is one host's machine (the
        SDK would count a single GPU as a share of its GPU's 8-GPU server)."""
        return [self.candidate(o, per_machine=o.gpus_per_unit) for o in self.offers(ITEM, gpu_model)]

    def quotes(self, at: Columns, candidates: Sequence[Candidate]) -> list[Quote]:
        held = self.held_share(at.profile.held_share)  # the profile's, else held_utilization
        found = []
        for c in candidates:
            per_unit = c.offer.gpus_per_unit
            rented = at.ceil(at.gpus / per_unit) * per_unit  # whole rentals
            rows = []
            for e in at.ends:
                paid = held_at(e, at.useful, held, rented * float(HOURS_PER_YEAR))
                annual = paid * c.per_gpu[e]
                rows.append((paid, annual, annual * at.horizon))
            paid_range, annual_range, total_range = at.ranges(rows)
            lead = self.lead(c)
            interruptible = c.plan in self.preemptible_plans
            found.append(
                self.finish(
                    at,
                    c,
                    annual=annual_range,
                    total=total_range,
                    paid=paid_range,
                    committed=False,
                    efficiency=self.efficiency(at, lead, scaling=self.scaling(c, at)),
                    stability=self.stability(at, extra_rate=INTERRUPTIONS if interruptible else None),
                    infra_fte=self.machine_work(c, at, at.utilization),
                    lines=(("gpu_hours", annual_range, ZERO, total_range),),
                    violations=self.constraints(c, at),  # nodes, preemption, capacity, lead time, residency…
                    waiting_days=lead,
                    detail=rented,
                )
            )
        return found

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        c = quote.candidate
        assert c is not None
        key, annual, upfront, total = quote.lines[0]
        gpus = num(quote.detail)
        line = LineItem(
            key=key,
            label=msg("gpu_marketplace.line.gpu_hours", f"{c.label}: {gpus} GPUs", offer=c.label, gpus=gpus),
            annual=annual,
            upfront=upfront,
            basis=msg(
                "gpu_marketplace.basis",
                "min(GPUs rented × 8,760 hours, useful GPU-hours ÷ utilization of held GPUs) × price per GPU-hour "
                "× the horizon's years",
            ),
            sources=(*c.offer.refs, self.ref("held_utilization")),
            total=total,
        )
        shown = money_range(annual, profile.currency)
        note = f"GPU marketplace ({c.label}): {shown} a year."
        notes = [msg("gpu_marketplace.note", note, offer=c.label, annual=shown)]
        stability_refs = self.stability_refs("detection_hours", "restart_hours")
        if c.plan in self.preemptible_plans:
            text = "its host may take an interruptible GPU back at any time: interruptions count as failures"
            notes.append(msg("gpu_marketplace.interruptible", text))
            stability_refs = (*stability_refs, self.ref(INTERRUPTIONS))
        scaling = self.scaling(c, self.columns(profile))
        return self.assessment_of(
            profile,
            quote,
            breakdown=(line,),
            notes=tuple(notes),
            efficiency_refs=self.efficiency_refs(self.lead_refs(c), () if scaling is None else (self.ref(scaling[0]),)),
            stability_refs=stability_refs,
            usability_refs=self.usability_refs(profile),
        )


class GpuMarketplace(OptionPlugin):
    sdk = ">=4,<5"
    spec = OptionSpec(
        key=KEY,
        name="GPU marketplace",
        description="Rent single GPUs or 8-GPU nodes from community and datacentre hosts by the hour, on demand or "
        "interruptible: cheap and quick, but every held hour is paid and an interruptible GPU can be taken back.",
        version="0.1.0",
        price_plans=("on_demand", INTERRUPTIBLE),
        rental_plans=("on_demand", INTERRUPTIBLE),
    )
    kernel = MarketplaceKernel
    messages = OptionPlugin.catalogs(__name__, "locales/{lang}.toml")


plugin = GpuMarketplace()
