"""Own GPU cluster (自建GPU集群): buy servers, build or rent the machine room, run it yourself.

Each server offer of the price books is a bill of materials: the servers, the network fabric and
storage per GPU, the machine room — colocation rent per kW, or an own facility built per kW — power
at the region's price × PUE, software licences, and the ops teams (one team runs up to
``nodes_per_ops_team`` servers). The source article's generic server comes with one lump for
"machine room and network". Capital is bought at the start, replaced at the end of its useful life
and sold at its residual value (``app.core.capital``); while the cluster is procured the team either
waits or bridges on rented instances, whichever costs less per useful GPU-hour.
``annual`` stays the article's accounting view (straight-line over ``depreciation_years``).
See docs/methodology.md, "Own cluster" and "Capital".
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
    Inputs,
    Knowledge,
    Offer,
    OptionPlugin,
    OptionSpec,
    Profile,
    Range,
    Violation,
    ceil_number,
    model,
    offers,
)
from app.core.capital import Bridge, CapitalLine, RunningLine, where
from app.core.capital import own as capital_own
from app.core.text import money, money_range, msg, num, span

KEY = "self_built_cluster"
VERSION = "2.0.0"
RENTED = "rented_gpu_instances"
MONTHS_PER_YEAR = 12
DAYS_PER_YEAR = 365
#: the facility of an offer: the source article's lump, colocation rent, or an own machine room
QUOTED, COLOCATION, OWN_FACILITY = "quoted facility", "colocation", "own facility"
_AGE = re.compile(r"^age_(\d+(?:\.\d+)?)y$")


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

    def offers(self, profile: Profile, knowledge: Knowledge) -> Sequence[Offer]:
        found: list[Offer] = []
        for row in offers.anchors(knowledge, profile, option=KEY, item="server_hardware"):
            for variant in _facilities(knowledge, profile, row):
                offer = offers.priced(knowledge, profile, row, variant=variant)
                if offer is not None:
                    found.append(offer)
        return found

    def assess_offer(self, profile: Profile, knowledge: Knowledge, offer: Offer) -> Assessment:
        inputs = Inputs(knowledge, KEY, profile)
        row = offer.row
        server = knowledge.servers[row.subject]
        servers = ceil_number(profile.gpus / offer.gpus_per_unit)
        it_kw = servers * server.power_kw if server.power_kw is not None else None

        def money(item: str, *units: str) -> tuple[Range, tuple[Any, ...]] | None:
            """A component's price and the rows behind it (the price, its exchange rate, the assumptions
            read since the last component)."""
            found = inputs.money(
                item,
                units=units,
                provider=row.provider,
                region=row.region,
                subject=row.subject,
                gpu_model=row.gpu_model,
                gpus=profile.gpus,
            )
            return None if found is None else (found[0], (found[1].ref, *inputs.take_refs()))

        def capital_line(key: str, label: str, basis: str, price: Range, refs: tuple[Any, ...]) -> CapitalLine:
            life, decline = inputs(f"life_years_{key}"), inputs(f"residual_decline_{key}")
            resale = _resale_points(knowledge, profile, offer) if key == "server_hardware" else ()
            return CapitalLine(key, label, basis, (*refs, *inputs.take_refs()), price, life, decline, resale)

        capital = [
            capital_line(
                "server_hardware",
                msg("line.server_hardware", f"{servers} × {server.name}", servers=str(servers), server=server.name),
                "servers × price",
                offer.price * servers,
                offer.refs,
            )
        ]
        running: list[RunningLine] = []
        if offer.variant == QUOTED:
            lump = money("facility_and_network", "per_server")
            assert lump is not None
            capital.append(
                capital_line(
                    "facility_and_network",
                    msg("line.facility_and_network", "Machine room and network"),
                    "servers × price",
                    lump[0] * servers,
                    lump[1],
                )
            )
        else:
            for item, label in (
                ("network_fabric", msg("line.network_fabric", "Network fabric")),
                ("storage", msg("line.storage", "Shared storage")),
            ):
                found = money(item, "per_gpu")
                if found is not None:
                    capital.append(capital_line(item, label, "GPUs × price per GPU", found[0] * profile.gpus, found[1]))
            assert it_kw is not None
            if offer.variant == OWN_FACILITY:
                build = money("facility_build", "per_kw")
                assert build is not None
                capital.append(
                    capital_line(
                        "facility_build",
                        msg("line.facility_build", "Own machine room"),
                        "IT kW × build cost per kW",
                        build[0] * it_kw,
                        build[1],
                    )
                )
            else:
                colo = money("colocation", "per_kw_month")
                assert colo is not None
                basis = "IT kW × rent per kW-month × 12"
                running.append(
                    RunningLine(
                        "colocation",
                        msg("line.colocation", "Colocation"),
                        basis,
                        colo[1],
                        colo[0] * (it_kw * MONTHS_PER_YEAR),
                    )
                )
        nodes_per_team = inputs("nodes_per_ops_team")
        team_fte = inputs("ops_team_fte")
        teams = (servers / nodes_per_team).ceil()
        ops = money("ops_team", "per_team_year")
        if ops is not None:
            running.append(
                RunningLine(
                    "ops_team",
                    msg("line.ops_team", "Operations team"),
                    "ops teams × team cost per year",
                    ops[1],
                    ops[0] * teams,
                )
            )
        elif (staff := money("ops_staff", "per_fte_year")) is not None:
            basis = "ops teams × ops_team_fte × cost per FTE-year"
            running.append(
                RunningLine(
                    "ops_team", msg("line.ops_team", "Operations team"), basis, staff[1], staff[0] * (teams * team_fte)
                )
            )
        power = money("power", "per_kwh")
        if power is not None and it_kw is not None:
            kwh = inputs("pue") * inputs("power_draw_share") * (it_kw * HOURS_PER_YEAR)
            basis = "IT kW × draw share × 8760 × PUE × price per kWh"
            running.append(
                RunningLine(
                    "power",
                    msg("line.power", "Power (IT load × PUE)"),
                    basis,
                    (*power[1], *inputs.take_refs()),
                    power[0] * kwh,
                )
            )
        licence = money("software_licence", "per_gpu_year")
        if licence is not None and offer.variant != QUOTED:
            share = inputs("licensed_gpu_share")
            basis = "GPUs × licensed share × price per GPU-year"
            refs = (*licence[1], *inputs.take_refs())
            running.append(
                RunningLine(
                    "software_licence",
                    msg("line.software_licence", "Software licences"),
                    basis,
                    refs,
                    licence[0] * (share * profile.gpus),
                )
            )

        lead = row.lead_time_days or inputs("lead_time_days")
        rate = inputs("discount_rate").expected
        owned = capital_own(
            horizon=profile.horizon_years,
            lead_time_days=lead,
            capital=capital,
            running=running,
            rate=rate,
            depreciation_years=inputs("depreciation_years"),
            bridge=_bridge(knowledge, profile),
            delay_cost_per_day=profile.delay_cost_per_day,
        )
        cost = model.cost(
            profile,
            annual=owned.annual,
            total=owned.total,
            upfront=owned.upfront,
            paid=Range.point(servers * offer.gpus_per_unit * HOURS_PER_YEAR),
            committed=True,
            breakdown=owned.lines,
            npv=owned.npv,
            equivalent_annual=owned.equivalent_annual,
            operating_years=owned.operating_years,
        )
        violations = offers.violations(offer, profile, knowledge, lead_time_days=lead)
        late = np.logical_and(
            ~np.asarray(owned.bridged), lead.expected / DAYS_PER_YEAR >= np.asarray(profile.horizon_years)
        )
        if np.any(late):
            violations = (
                *violations,
                Violation(
                    msg("violation.horizon_before_install", "the horizon ends before the cluster is installed"), late
                ),
            )
        if profile.capex_budget is not None:
            violations = (*violations, _over_budget(cost.upfront, profile.capex_budget, profile.currency))
        cur = profile.currency
        bridged = bool(np.all(owned.bridged))
        upfront, annual, total = (money_range(x, cur) for x in (cost.upfront, cost.annual, cost.total))
        notes = (
            msg(
                "note.self_built_bridged" if bridged else "note.self_built",
                f"Own cluster ({offer.label}): {num(servers)} server(s) cost {upfront} upfront and "
                f"{annual} a year written off over depreciation_years; "
                f"{total} over the horizon after resale; {span(teams, 'ops team(s)')} run them."
                + (" Until it is installed the team rents on demand (cheaper than waiting)." if bridged else ""),
                offer=offer.label,
                servers=num(servers),
                upfront=upfront,
                annual=annual,
                total=total,
                teams=span(teams, "ops team(s)").removesuffix(" ops team(s)"),
            ),
        )
        ops_team = profile.ops_team
        return model.assessment(
            KEY,
            inputs,
            profile,
            cost=cost,
            efficiency=model.efficiency(inputs, profile, lead_time_days=lead, waits=~np.asarray(owned.bridged)),
            stability=model.stability(
                inputs,
                profile,
                detection_key=f"detection_hours_{ops_team}_ops",
                restart_key=f"restart_hours_{ops_team}_ops",
            ),
            infra_fte=model.software_work(inputs, servers) + teams * team_fte,
            setup_steps=msg(
                "setup.self_built_cluster", "racking, network, drivers, scheduler and environments by your own ops team"
            ),
            notes=notes,
            offer=offer.info(),
            violations=violations,
            region=row.region,
            waiting_days=where(owned.bridged, ZERO, lead),
            priced_work=model.software_work(inputs, servers),  # the ops teams are in the cost already
        )


def _facilities(knowledge: Knowledge, profile: Profile, row: Any) -> list[str]:
    """The machine rooms a server offer can be priced with: the source's lump, else colocation and an
    own facility, where the knowledge base prices them for the offer's region."""

    def has(item: str) -> bool:
        found = knowledge.component(
            KEY, item, as_of=profile.as_of, provider=row.provider, region=row.region, subject=row.subject
        )
        return bool(found)

    if has("facility_and_network"):
        return [QUOTED]
    return [v for v, item in ((COLOCATION, "colocation"), (OWN_FACILITY, "facility_build")) if has(item)]


def _over_budget(upfront: Range, budget: Any, currency: str) -> Violation:
    shown, limit = money_range(upfront, currency), money(budget, currency)
    return Violation(
        msg(
            "violation.capex_budget",
            f"the upfront cost of {shown} exceeds the capex budget of {limit}",
            upfront=shown,
            budget=limit,
        ),
        upfront.expected > budget,
    )


def _bridge(knowledge: Knowledge, profile: Profile) -> Bridge | None:
    """Renting the cluster's GPUs on demand until it is installed, at the cheapest on-demand offer."""
    rows = offers.anchors(knowledge, profile, option=RENTED, item="instance_hour")
    priced = [o for r in rows if r.plan == "on_demand" and (o := offers.priced(knowledge, profile, r)) is not None]
    if not priced:
        return None
    cheapest = min(priced, key=lambda o: offers.level(o.per_gpu.expected))
    held = knowledge.assumption(RENTED, "held_utilization")
    yearly = (profile.useful_gpu_hours_per_year / held.value).cap(profile.gpus * HOURS_PER_YEAR) * cheapest.per_gpu
    return Bridge(yearly, (*cheapest.refs, held.ref))


def _resale_points(
    knowledge: Knowledge, profile: Profile, offer: Offer
) -> tuple[tuple[float, tuple[float, float, float]], ...]:
    """Market resale shares of the offer's GPU model by age (``resale_value`` rows ``age_<N>y``)."""
    if offer.row.gpu_model == "*":
        return ()
    points = []
    for r in knowledge.rows(KEY, "resale_value", profile.as_of):
        match = _AGE.match(r.subject)
        if r.gpu_model == offer.row.gpu_model and match:
            # market points are read as they stand (a Monte Carlo run draws the assumptions, not the curve)
            low, expected, high = (offers.level(v) for v in r.value)
            points.append((float(match.group(1)), (low, expected, high)))
    return tuple(sorted(points))


plugin = SelfBuiltCluster()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_assess = plugin.compute_advisor_assess
