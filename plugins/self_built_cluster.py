"""Own GPU cluster (自建GPU集群): buy servers, build the machine room and network, run it yourself.

Cost is what the cluster costs whatever it does: capital spread over its depreciation life,
ops teams (one team runs up to ``nodes_per_ops_team`` servers), and power where the knowledge
base prices it. See docs/methodology.md, "Own cluster".
"""

from __future__ import annotations

from app.core import model
from app.core.knowledge import Knowledge, Price
from app.core.ranges import Range, ceil_number
from app.core.text import money_range, span
from app.core.types import HOURS_PER_YEAR, Assessment, Cost, LineItem, OptionSpec, Profile
from app.hookspecs import hookimpl

KEY = "self_built_cluster"
VERSION = "1.0.0"
ZERO = Range.point(0)


@hookimpl
def compute_advisor_options() -> list[OptionSpec]:
    return [
        OptionSpec(
            key=KEY,
            name="Own GPU cluster",
            description="Buy GPU servers, build the machine room and network, and run them with your own "
            "ops team: the largest upfront investment and the longest lead time, the lowest cost per "
            "GPU-hour at sustained high load and scale.",
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

    hardware = price("server_hardware", "per_server")
    facility = price("facility_and_network", "per_server")
    ops = price("ops_team", "per_team_year")
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
    useful = profile.useful_gpu_hours_per_year
    cost = Cost(
        annual=annual,
        total=annual * profile.horizon_years,
        upfront=upfront,
        per_useful_gpu_hour=annual / useful,
        useful_gpu_hours=useful,
        paid_gpu_hours=Range.point(servers * server.gpus_per_server * HOURS_PER_YEAR),
        committed=True,
        breakdown=tuple(lines),
    )
    infra_fte = teams * inputs("ops_team_fte")
    notes = (
        f"Own cluster: {servers} server(s) cost {money_range(upfront, profile.currency)} upfront and "
        f"{money_range(annual, profile.currency)} a year whatever they are used for; "
        f"{span(teams, 'ops team(s)')} run them.",
    )
    return Assessment(
        option=KEY,
        cost=cost,
        efficiency=model.efficiency(inputs, profile),
        stability=model.stability(inputs, profile, recovery_key=f"recovery_hours_{profile.ops_team}_ops"),
        usability=model.usability(
            inputs,
            profile,
            infra_fte,
            "racking, network, drivers, scheduler and environments by your own ops team",
        ),
        notes=notes,
    )
