"""Own GPU cluster (自建GPU集群): buy servers, build the machine room and network, run it yourself.

Cost is what the cluster costs whatever it does: capital spread over its depreciation life,
ops teams (one team runs up to ``nodes_per_ops_team`` servers), and power where the knowledge
base prices it. See docs/methodology.md, "Own cluster".
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
    model,
)
from app.core.text import money_range, span

KEY = "self_built_cluster"
VERSION = "1.0.0"


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

    def assess(self, profile: Profile, knowledge: Knowledge) -> Assessment:
        inputs = Inputs(knowledge, KEY, profile)
        server, servers = model.hardware(knowledge, profile)
        hardware = inputs.price("server_hardware", "per_server", server.key)
        facility = inputs.price("facility_and_network", "per_server", server.key)
        ops = inputs.price("ops_team", "per_team_year", server.key)
        years = inputs("depreciation_years")
        nodes_per_team = inputs("nodes_per_ops_team")
        depreciation_refs = inputs.take_refs()

        teams = (servers / nodes_per_team).ceil()
        hw_upfront = hardware.value * servers
        fac_upfront = facility.value * servers
        lines = [
            LineItem(
                "server_hardware",
                f"{servers} × {server.name}: hardware",
                hw_upfront / years,
                hw_upfront,
                "servers × price ÷ depreciation_years",
                (hardware.ref, server.ref, *depreciation_refs),
            ),
            LineItem(
                "facility_and_network",
                "Machine room and network",
                fac_upfront / years,
                fac_upfront,
                "servers × price ÷ depreciation_years",
                (facility.ref, *depreciation_refs),
            ),
            LineItem(
                "ops_team",
                "Operations team",
                ops.value * teams,
                ZERO,
                "ceil(servers ÷ nodes_per_ops_team) × team cost per year",
                (ops.ref, *depreciation_refs),
            ),
        ]
        power = knowledge.find_price(KEY, "power", currency=profile.currency, as_of=profile.as_of, subject=server.key)
        if power is not None and server.power_kw is not None:
            pue = inputs("pue")
            kwh = pue * (servers * server.power_kw * HOURS_PER_YEAR)
            lines.append(
                LineItem(
                    "power",
                    "Power (IT load × PUE, all year)",
                    power.value * kwh,
                    ZERO,
                    "servers × power_kw × 8760 × pue × price per kWh",
                    (power.ref, server.ref, *inputs.take_refs()),
                )
            )

        annual = sum((li.annual for li in lines), ZERO)
        upfront = sum((li.upfront for li in lines), ZERO)
        cost = model.cost(
            profile,
            annual=annual,
            total=annual * profile.horizon_years,
            upfront=upfront,
            paid=Range.point(servers * server.gpus_per_server * HOURS_PER_YEAR),
            committed=True,
            breakdown=lines,
        )
        notes = (
            f"Own cluster: {servers} server(s) cost {money_range(upfront, profile.currency)} upfront and "
            f"{money_range(annual, profile.currency)} a year whatever they are used for; "
            f"{span(teams, 'ops team(s)')} run them.",
        )
        return model.assessment(
            KEY,
            inputs,
            profile,
            cost=cost,
            infra_fte=teams * inputs("ops_team_fte"),
            setup_steps="racking, network, drivers, scheduler and environments by your own ops team",
            notes=notes,
            recovery_key=f"recovery_hours_{profile.ops_team}_ops",
        )


plugin = SelfBuiltCluster()
compute_advisor_options = plugin.compute_advisor_options
compute_advisor_assess = plugin.compute_advisor_assess
