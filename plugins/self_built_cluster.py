"""Own GPU cluster (自建GPU集群): buy servers, build or rent the machine room, run it yourself.

Each server offer of the price books is a bill of materials: the servers, the network fabric and
storage per GPU, the machine room — colocation rent per kW, or an own facility built per kW — power
at the region's price × PUE, software licences, and the ops teams (one team runs up to
``nodes_per_ops_team`` servers). The source article's generic server comes with one lump for
"machine room and network". Capital is bought at the start, replaced at the end of its useful life
and sold at its residual value (``app.core.capital``); while the cluster is procured the team either
waits or bridges on the option that declares ``bridges_lead_time`` (rented instances on demand),
whichever costs less per useful GPU-hour. ``annual`` stays the article's accounting view
(straight-line over ``depreciation_years``). See docs/methodology.md, "Own cluster" and "Capital".

The kernel compiles each offer's bill once (``Bill``: every component's price in the currency, its
volume tiers and the sources each line will cite); a quote multiplies it by the profile's servers,
GPUs and kW.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core import (
    HOURS_PER_YEAR,
    ZERO,
    Assessment,
    Knowledge,
    LineItem,
    OptionPlugin,
    OptionSpec,
    Profile,
    Range,
    ceil_number,
    cluster,
    offers,
)
from app.core.capital import Bridge, where
from app.core.capital import own as capital_own
from app.core.cluster import Bill, CapitalItem, Component, Quantity, Reads, RunningItem, Size
from app.core.kernel import Candidate, Quote, candidate
from app.core.offer_kernel import OfferKernel
from app.core.offers import Offer
from app.core.pricing import quote_cost
from app.core.text import Msg, money, money_range, msg, num, span

KEY = "self_built_cluster"
VERSION = "2.0.0"
MONTHS_PER_YEAR = 12
DAYS_PER_YEAR = 365
#: the facility of an offer: the source article's lump, colocation rent, or an own machine room
QUOTED, COLOCATION, OWN_FACILITY = "quoted facility", "colocation", "own facility"
_AGE = re.compile(r"^age_(\d+(?:\.\d+)?)y$")


class OwnClusterKernel(OfferKernel):
    setup_steps = msg(
        "setup.self_built_cluster", "racking, network, drivers, scheduler and environments by your own ops team"
    )

    # ---- compile ------------------------------------------------------------------------------------

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        kb = self.knowledge
        found: list[Candidate] = []
        for row in offers.group_rows(kb, self.as_of, option=KEY, item="server_hardware", gpu_model=gpu_model):
            for variant in _facilities(kb, self.as_of, row):
                offer = offers.price_row(kb, row, self.currency, self.as_of, variant=variant)
                if offer is not None:
                    found.append(
                        candidate(offer, offers.per_machine(kb, offer.gpus_per_unit, gpu_model), self._bill(offer))
                    )
        return found

    def _bill(self, offer: Offer) -> Bill:
        row = offer.row
        server = self.knowledge.servers[row.subject]
        reads = Reads(self)

        def capital_item(
            key: str, label: Msg | None, basis: str, price: Component | Range, quantity: Quantity, offer_refs: Any = ()
        ) -> CapitalItem:
            life, decline = reads(f"life_years_{key}"), reads(f"residual_decline_{key}")
            resale = _resale_points(self.knowledge, self.as_of, offer) if key == "server_hardware" else ()
            return CapitalItem(key, label, basis, price, quantity, life, decline, reads.take(), resale, offer_refs)

        capital = [
            capital_item(
                "server_hardware",
                None,  # written when answered: it names the number of servers
                "servers × price",
                offer.price,
                cluster.servers,
                offer.refs,
            )
        ]
        running: list[RunningItem] = []
        if offer.variant == QUOTED:
            lump = reads.component(row, "facility_and_network", "per_server")
            assert lump is not None
            capital.append(
                capital_item(
                    "facility_and_network",
                    msg("line.facility_and_network", "Machine room and network"),
                    "servers × price",
                    lump,
                    cluster.servers,
                )
            )
        else:
            for item, label in (
                ("network_fabric", msg("line.network_fabric", "Network fabric")),
                ("storage", msg("line.storage", "Shared storage")),
            ):
                found = reads.component(row, item, "per_gpu")
                if found is not None:
                    capital.append(capital_item(item, label, "GPUs × price per GPU", found, cluster.gpus))
            if offer.variant == OWN_FACILITY:
                build = reads.component(row, "facility_build", "per_kw")
                assert build is not None
                capital.append(
                    capital_item(
                        "facility_build",
                        msg("line.facility_build", "Own machine room"),
                        "IT kW × build cost per kW",
                        build,
                        cluster.it_kw,
                    )
                )
            else:
                colo = reads.component(row, "colocation", "per_kw_month")
                assert colo is not None
                running.append(
                    RunningItem(
                        "colocation",
                        msg("line.colocation", "Colocation"),
                        "IT kW × rent per kW-month × 12",
                        colo,
                        cluster.kw_months,
                    )
                )
        reads("nodes_per_ops_team")
        team_fte = reads("ops_team_fte")
        ops = reads.component(row, "ops_team", "per_team_year")
        if ops is not None:
            running.append(
                RunningItem(
                    "ops_team",
                    msg("line.ops_team", "Operations team"),
                    "ops teams × team cost per year",
                    ops,
                    cluster.teams,
                )
            )
        elif (staff := reads.component(row, "ops_staff", "per_fte_year")) is not None:
            running.append(
                RunningItem(
                    "ops_team",
                    msg("line.ops_team", "Operations team"),
                    "ops teams × ops_team_fte × cost per FTE-year",
                    staff,
                    lambda size: size.teams * team_fte,
                )
            )
        power = reads.component(row, "power", "per_kwh")
        if power is not None and server.power_kw is not None:
            kw_share = reads("pue") * reads("power_draw_share")
            running.append(
                RunningItem(
                    "power",
                    msg("line.power", "Power (IT load × PUE)"),
                    "IT kW × draw share × 8760 × PUE × price per kWh",
                    power,
                    lambda size: kw_share * (size.it_kw * HOURS_PER_YEAR),
                    reads.take(),
                )
            )
        licence = reads.component(row, "software_licence", "per_gpu_year")
        if licence is not None and offer.variant != QUOTED:
            share = reads("licensed_gpu_share")
            running.append(
                RunningItem(
                    "software_licence",
                    msg("line.software_licence", "Software licences"),
                    "GPUs × licensed share × price per GPU-year",
                    licence,
                    lambda size: share * size.gpus,
                    reads.take(),
                )
            )
        return Bill(server.power_kw, tuple(capital), tuple(running), tuple(reads.pending))

    # ---- quotes ---------------------------------------------------------------------------------------

    def quotes(self, profile: Profile, candidates: Sequence[Candidate]) -> list[Quote]:
        memo: dict[Any, Any] = {}
        nodes_per_team = self.value("nodes_per_ops_team")
        team_fte = self.value("ops_team_fte")
        rate = self.value("discount_rate").expected
        depreciation = self.value("depreciation_years")
        bridge = self.bridge(profile)
        gpus = profile.gpus
        found = []
        for c in candidates:
            bill: Bill = c.data
            offer = c.offer
            servers = ceil_number(gpus / offer.gpus_per_unit)
            it_kw = servers * bill.power_kw if bill.power_kw is not None else None
            teams = (servers / nodes_per_team).ceil()
            size = Size(servers, gpus, it_kw, teams)
            capital, running = bill.lines(size)
            lead = self.lead(c)
            owned = capital_own(
                horizon=profile.horizon_years,
                lead_time_days=lead,
                capital=capital,
                running=running,
                rate=rate,
                depreciation_years=depreciation,
                bridge=bridge,
                delay_cost_per_day=profile.delay_cost_per_day,
            )
            cost = quote_cost(
                profile,
                annual=owned.annual,
                total=owned.total,
                upfront=owned.upfront,
                paid=Range.point(servers * offer.gpus_per_unit * HOURS_PER_YEAR),
                committed=True,
                npv=owned.npv,
                equivalent_annual=owned.equivalent_annual,
                operating_years=owned.operating_years,
            )
            violations = self.constraints(c, profile, lead)
            late = np.logical_and(
                ~np.asarray(owned.bridged), lead.expected / DAYS_PER_YEAR >= np.asarray(profile.horizon_years)
            )
            if np.any(late):
                violations.append(("horizon_before_install", late))
            if profile.capex_budget is not None:
                over = cost.upfront.expected > profile.capex_budget
                if np.any(over):
                    violations.append(("capex_budget", over))
            ops_team = profile.ops_team
            work = self.software_work(servers)
            found.append(
                self.finish(
                    profile,
                    c,
                    memo,
                    cost=cost,
                    efficiency=self.efficiency(profile, lead, memo, waits=~np.asarray(owned.bridged)),
                    stability=self.stability(
                        profile,
                        memo,
                        detection_key=f"detection_hours_{ops_team}_ops",
                        restart_key=f"restart_hours_{ops_team}_ops",
                    ),
                    infra_fte=work + teams * team_fte,
                    lines=owned.lines,
                    violations=violations,
                    waiting_days=where(owned.bridged, ZERO, lead),
                    priced_work=work,  # the ops teams are in the cost already
                    detail=(size, owned.bridged, bridge),
                )
            )
        return found

    def bridge(self, profile: Profile) -> Bridge | None:
        """Renting the cluster's GPUs until it is installed, on the option that bridges lead times."""
        bridging = self.roles("bridges_lead_time", self.knowledge, self.currency, self.as_of)
        if bridging is None or not hasattr(bridging, "bridge"):
            return None
        found: Bridge | None = bridging.bridge(profile)
        return found

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
        labels = bill.labels(size, self.knowledge.servers[c.offer.row.subject].name, bridge)
        breakdown = [
            LineItem(key, labels[key][0], annual, upfront, labels[key][1], labels[key][2], total=total)
            for key, annual, upfront, total in quote.lines
        ]
        cur = profile.currency
        cost = quote.cost
        bridged = bool(np.all(bridged_each))
        upfront, annual, total = (money_range(x, cur) for x in (cost.upfront, cost.annual, cost.total))
        notes = (
            msg(
                "note.self_built_bridged" if bridged else "note.self_built",
                f"Own cluster ({c.label}): {num(servers)} server(s) cost {upfront} upfront and "
                f"{annual} a year written off over depreciation_years; "
                f"{total} over the horizon after resale; {span(teams, 'ops team(s)')} run them."
                + (" Until it is installed the team rents on demand (cheaper than waiting)." if bridged else ""),
                offer=c.label,
                servers=num(servers),
                upfront=upfront,
                annual=annual,
                total=total,
                teams=span(teams, "ops team(s)").removesuffix(" ops team(s)"),
            ),
        )
        ops_team = profile.ops_team
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


class SelfBuiltCluster(OptionPlugin):
    spec = OptionSpec(
        key=KEY,
        name="Own GPU cluster",
        description="Buy GPU servers, build the machine room and network, and run them with your own "
        "ops team: the largest upfront investment and the longest lead time, the lowest cost per "
        "GPU-hour at sustained high load and scale.",
        version=VERSION,
        owns_hardware=True,
    )
    kernel = OwnClusterKernel


def _facilities(knowledge: Knowledge, as_of: Any, row: Any) -> list[str]:
    """The machine rooms a server offer can be priced with: the source's lump, else colocation and an
    own facility, where the knowledge base prices them for the offer's region."""

    def has(item: str) -> bool:
        found = knowledge.component(
            KEY, item, as_of=as_of, provider=row.provider, region=row.region, subject=row.subject
        )
        return bool(found)

    if has("facility_and_network"):
        return [QUOTED]
    return [v for v, item in ((COLOCATION, "colocation"), (OWN_FACILITY, "facility_build")) if has(item)]


def _resale_points(
    knowledge: Knowledge, as_of: Any, offer: Offer
) -> tuple[tuple[float, tuple[float, float, float]], ...]:
    """Market resale shares of the offer's GPU model by age (``resale_value`` rows ``age_<N>y``)."""
    if offer.row.gpu_model == "*":
        return ()
    points = []
    for r in knowledge.rows(KEY, "resale_value", as_of):
        match = _AGE.match(r.subject)
        if r.gpu_model == offer.row.gpu_model and match:
            # market points are read as they stand (a Monte Carlo run draws the assumptions, not the curve)
            low, expected, high = (offers.level(v) for v in r.value)
            points.append((float(match.group(1)), (low, expected, high)))
    return tuple(sorted(points))


plugin = SelfBuiltCluster()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_compile = plugin.compute_advisor_compile
