"""Own GPU cluster (自建GPU集群): buy servers, build or rent the machine room, run it yourself.

Each server offer of the price books is a bill of materials (``app.core.bom``): for a named GPU the
servers, the network fabric, storage, installation, the machine room — colocation rent per kW in the
tier of the IT load, or an own facility built per kW — power at the region's price × PUE, hardware
support, software licences, and the ops teams at their loaded cost (one team runs up to
``nodes_per_ops_team`` servers); the source article's generic server comes with one lump for "machine
room and network". A buyer's jurisdiction (``buyer_country``) decides which server offers, and so
which wages, power and colocation, apply. Capital is bought at the start, replaced at the end of its useful life
and sold at its residual value (``app.core.capital``); while the cluster is procured the team either
waits or bridges on the option that declares ``bridges_lead_time`` (rented instances on demand),
whichever costs less per useful GPU-hour. ``annual`` stays the article's accounting view
(straight-line over ``depreciation_years``). See docs/methodology.md, "Own cluster" and "Capital".

The kernel compiles each offer's bill once (``Bill``: every component's price in the currency, its
volume tiers and the sources each line will cite); a quote multiplies it by the profile's servers,
GPUs and kW.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.sdk import (
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Bill,
    Bridge,
    Candidate,
    Columns,
    LineItem,
    NoOffer,
    OfferKernel,
    OptionPlugin,
    OptionSpec,
    Profile,
    Quote,
    Range,
    Size,
    money,
    money_range,
    msg,
    num,
    span,
    where,
)

KEY = "self_built_cluster"
VERSION = "3.0.0"
MONTHS_PER_YEAR = 12
DAYS_PER_YEAR = 365


class OwnClusterKernel(OfferKernel):
    setup_steps = msg(
        "setup.self_built_cluster", "racking, network, drivers, scheduler and environments by your own ops team"
    )
    #: besides these, each component's ``life_years_<component>``, ``residual_decline_<component>`` and
    #: ``resale_share_<component>`` where the bill has the component (``bom.bill``)
    requires = (
        "discount_rate",
        "depreciation_years",
        "nodes_per_ops_team",
        "ops_team_fte",
        "detection_hours_basic_ops",
        "detection_hours_professional_ops",
        "restart_hours_basic_ops",
        "restart_hours_professional_ops",
        "licensed_gpu_share",
        "life_extension_years",
        "power_draw_share",
        "pue",
        "resale_days_to_sell",
        "resale_haircut",
        "support_increase_past_life",
        "support_share_in_warranty",
        "warranty_years_server_hardware",
    )

    # ---- compile ------------------------------------------------------------------------------------

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        found: list[Candidate] = []
        for row in self.price_rows("server_hardware", gpu_model):
            for variant in self.facilities(row):  # one candidate per facility the servers can run in
                offer = self.price(row, variant)
                if offer is not None:
                    bill = self.bill(offer)
                    found.append(self.candidate(offer, data=bill, interconnect=bill.interconnect))
        return found

    def candidates(self, profile: Profile) -> list[Candidate]:
        """The server offers the profile allows; for a buyer in a jurisdiction, those bought there (its
        servers, and so its wages, power and colocation). Where none is, servers bought elsewhere would be
        imported: those an availability rule refuses there are answered, not procurable with the rule's
        source (none refused: no offer)."""
        found = super().candidates(profile)
        country = profile.buyer_country
        if country is None:
            return found
        local = [c for c in found if self.knowledge.within(c.offer.row.region, country)]
        if local:
            return local
        return [c for c in found if any(r.effect == "unavailable" for r in self.availability(c, profile))]

    def jurisdiction(self, c: Candidate, profile: Profile) -> str:
        """An own cluster is bought in the buyer's country (else where its offer is): rules of that
        location bind it, its import rules included."""
        return profile.buyer_country or c.offer.row.region

    def no_offer(self, profile: Profile) -> NoOffer:
        found = super().no_offer(profile)
        if profile.buyer_country is None:
            return found
        said, country = found.args[0], profile.buyer_country
        return NoOffer(msg("error.no_offer_buyer", f"{said} for a buyer in {country}", error=said, country=country))

    # ---- quotes ---------------------------------------------------------------------------------------

    def quotes(self, at: Columns, candidates: Sequence[Candidate]) -> list[Quote]:
        nodes_per_team = self.value("nodes_per_ops_team")
        team_fte = self.value("ops_team_fte")
        rate = self.value("discount_rate").expected
        depreciation = self.value("depreciation_years")
        bridge = self.bridge(at)
        gpus, ends = at.gpus, at.ends
        ops_team = hired_level(at.profile.ops_team)
        found = []
        for c in candidates:
            bill: Bill = c.data
            offer = c.offer
            servers = at.ceil(gpus / offer.gpus_per_unit)
            it_kw = servers * bill.power_kw if bill.power_kw is not None else None
            teams = Range.elementwise(*(at.ceil(servers / nodes_per_team[2 - e]) for e in range(3)))
            size = Size(servers, gpus, it_kw, teams)
            capital, running = bill.lines(size, at)
            lead = self.lead(c)
            owned = self.own(
                at,
                lead_time_days=lead,
                capital=capital,
                running=running,
                rate=rate,
                depreciation_years=depreciation,
                bridge=bridge,
            )
            violations = self.constraints(c, at)
            bridged = owned.bridged
            waits = ~bridged if isinstance(bridged, np.ndarray) else not bridged
            late = at.where(waits, lead.expected / DAYS_PER_YEAR >= at.horizon, False)
            if at.holds(late):
                violations.append(("horizon_before_install", late))
            if at.capex_budget is not None:
                over = owned.upfront.expected > at.capex_budget
                if at.holds(over):
                    violations.append(("capex_budget", over))
            work = self.software_work(servers, 1.0, ends)
            found.append(
                self.finish(
                    at,
                    c,
                    annual=owned.annual,
                    total=owned.total,
                    upfront=owned.upfront,
                    paid=Range.point(servers * offer.gpus_per_unit * HOURS_PER_YEAR),
                    committed=True,
                    npv=owned.npv,
                    equivalent_annual=owned.equivalent_annual,
                    operating_years=owned.operating_years,
                    efficiency=self.efficiency(at, lead, waits=waits),
                    stability=self.stability(
                        at, detection_key=f"detection_hours_{ops_team}_ops", restart_key=f"restart_hours_{ops_team}_ops"
                    ),
                    infra_fte=at.range([work[e] + teams[e] * team_fte[e] for e in ends]),
                    lines=owned.lines,
                    violations=violations,
                    waiting_days=where(bridged, ZERO, lead),
                    priced_work=work,  # the ops teams are in the cost already
                    detail=(size, owned.bridged, bridge),
                )
            )
        return found

    def bridge(self, at: Columns) -> Bridge | None:
        """Renting the cluster's GPUs until it is installed, on the option that bridges lead times."""
        bridging = self.roles("bridges_lead_time", self.knowledge, self.currency, self.as_of)
        if not isinstance(bridging, OfferKernel):  # no option bridges (or one that prices no offers)
            return None
        return bridging.bridge(at)

    def violation_reason(self, profile: Profile, quote: Quote, code: str) -> str:
        if code == "horizon_before_install":
            return msg("violation.horizon_before_install", "the horizon ends before the cluster is installed")
        if code == "capex_budget":
            budget: Any = profile.capex_budget
            shown, limit = (
                money_range(quote.cost.upfront, profile.currency),
                money(budget, profile.currency),
            )
            return msg(
                "violation.capex_budget",
                f"the upfront cost of {shown} exceeds the capex budget of {limit}",
                upfront=shown,
                budget=limit,
            )
        return super().violation_reason(profile, quote, code)

    # ---- words ------------------------------------------------------------------------------------------

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        c = quote.candidate
        assert c is not None
        bill: Bill = c.data
        size, bridged_each, bridge = quote.detail
        servers, teams = size.servers, size.teams
        labels = bill.labels(size, self.subject_name(c.offer.row.subject), bridge, hired=profile.ops_team == "none")
        breakdown = [
            LineItem(
                key=key,
                label=labels[key][0],
                annual=annual,
                upfront=upfront,
                basis=labels[key][1],
                sources=labels[key][2],
                total=total,
            )
            for key, annual, upfront, total in quote.lines
        ]

        def notes() -> tuple[str, ...]:  # composed where an answer reads them
            cur, cost = profile.currency, quote.cost
            bridged = bool(np.all(bridged_each))
            upfront, annual, total = (money_range(x, cur) for x in (cost.upfront, cost.annual, cost.total))
            note = msg(
                "note.self_built_bridged" if bridged else "note.self_built",
                f"Own cluster ({c.label}): {num(servers)} server(s) cost {upfront} upfront and "
                f"{annual} a year written off over the depreciation period; "
                f"{total} over the horizon after resale; {span(teams, 'ops team(s)')} run them."
                + (" Until it is installed the team rents on demand (cheaper than waiting)." if bridged else ""),
                offer=c.label,
                servers=num(servers),
                upfront=upfront,
                annual=annual,
                total=total,
                teams=span(teams, "ops team(s)").removesuffix(" ops team(s)"),
            )
            return (note,)

        ops_team = hired_level(profile.ops_team)
        return self.assessment_of(
            profile,
            quote,
            breakdown=breakdown,
            notes=notes,
            efficiency_refs=self.efficiency_refs(
                bill.pending,
                self.lead_refs(c),
                (self.ref("discount_rate"), self.ref("depreciation_years")),
            ),
            stability_refs=self.stability_refs(f"detection_hours_{ops_team}_ops", f"restart_hours_{ops_team}_ops"),
            usability_refs=self.usability_refs(profile),
        )


def hired_level(ops_team: str) -> str:
    """The ops function that runs the cluster: the team's own, or — for a team without one — the ops
    team the cluster's bill hires (the article's 运维团队 line), which works as a basic one. Its cost is
    priced once, as a hire; its work is not also taken from the engineers nor its lack scored."""
    return "basic" if ops_team == "none" else ops_team


class SelfBuiltCluster(OptionPlugin):
    sdk = ">=4,<5"
    spec = OptionSpec(
        key=KEY,
        name="Own GPU cluster",
        description="Buy GPU servers, build the machine room and network, and run them with your own "
        "ops team: the largest upfront investment and the longest lead time, the lowest cost per "
        "GPU-hour at sustained high load and scale.",
        version=VERSION,
        price_plans=(),  # bought, not sold on plans
        owns_hardware=True,
    )
    kernel = OwnClusterKernel
    messages = OptionPlugin.catalogs("plugins", "locales/self_built_cluster.{lang}.toml")


plugin = SelfBuiltCluster()
