"""The bill of materials of an owned GPU cluster (a pricing block of the SDK, docs/methodology.md "Own
cluster"): which components an offer of servers comes with and how much of each it buys.

The source article's server comes with its quoted lump for "machine room and network". A named GPU's
server gets the complete bill: the network fabric and storage per GPU, installation (racks, PDUs,
optics, cabling) as a share of the hardware, the machine room — colocation rent per kW in the tier of
the cluster's IT load, or an own facility built per kW — power at the region's price × PUE, a
hardware support contract as a share of the hardware a year, software licences, and the ops teams at
their loaded cost. Every line is compiled once per offer (``app.core.cluster``) with the sources it
cites, in the order the methodology reads them.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from app.core import cluster
from app.core.ageing import Keeping, sunk
from app.core.cluster import Bill, CapitalItem, Component, Quantity, Reads, RunningItem
from app.core.kernel import Kernel
from app.core.knowledge import Knowledge, SourceRef
from app.core.offers import Offer, level
from app.core.ranges import Range
from app.core.text import Msg, msg

#: the facility of an offer: the source article's lump, colocation rent, or an own machine room
QUOTED, COLOCATION, OWN_FACILITY = "quoted facility", "colocation", "own facility"
ZERO = Range.point(0)
_AGE = re.compile(r"^age_(\d+(?:\.\d+)?)y$")


def bill(kernel: Kernel, offer: Offer) -> Bill:
    """The bill of ``offer``: its servers, and — for the source article's server — its quoted machine
    room and network, else the complete bill of a named GPU's cluster, each line's price and sources
    compiled."""
    row = offer.row
    server = kernel.knowledge.servers[row.subject]
    reads = Reads(kernel)
    # a named GPU's cluster: support by warranty, assets kept past their life where cheaper, resale as a
    # seller receives it, a built machine room sunk (docs/methodology.md "No double counts, no sunk resale")
    aging = _ageing(reads, row) if offer.variant != QUOTED else None

    def capital_item(
        key: str, label: Msg | None, basis: Msg, price: Component | Range, quantity: Quantity, offer_refs: Any = ()
    ) -> CapitalItem:
        life = reads(f"life_years_{key}")
        if aging is not None and key == "facility_build":  # sunk: nothing comes back at the horizon
            decline = reads("resale_share_facility_build")
            curves: Any = (sunk, sunk, sunk)
            return CapitalItem(key, label, basis, price, quantity, life, decline, reads.take(), (), offer_refs, curves)
        decline = reads(f"residual_decline_{key}")
        resale = resale_points(kernel.knowledge, kernel.as_of, offer) if key == "server_hardware" else ()
        market = aging.market if aging is not None else None
        curves = cluster.curves_of(kernel, decline, resale, market)
        keeping = None if aging is None else aging.server if key == "server_hardware" else aging.other
        more = aging.refs if aging is not None and key == "server_hardware" else ()
        return CapitalItem(
            key,
            label,
            basis,
            price,
            quantity,
            life,
            decline,
            (*reads.take(), *more),
            resale,
            offer_refs,
            curves,
            keeping,
            aging.support_refs if keeping is not None and keeping.supported and aging is not None else (),
        )

    capital = [
        capital_item(
            "server_hardware",
            None,  # written when answered: it names the number of servers
            msg("basis.servers", "servers × price per server"),
            offer.price,
            cluster.servers,
            offer.refs,
        )
    ]
    running: list[RunningItem] = []
    fabric: str | None = None
    if offer.variant == QUOTED:
        lump = reads.component(row, "facility_and_network", "per_server")
        assert lump is not None
        fabric = lump.rows[0].interconnect
        capital.append(
            capital_item(
                "facility_and_network",
                msg("line.facility_and_network", "Machine room and network"),
                msg("basis.servers", "servers × price per server"),
                lump,
                cluster.servers,
            )
        )
    else:  # a named GPU's server: the complete bill
        network = reads.component(row, "network_fabric", "per_gpu")
        if network is not None:
            fabric = network.rows[0].interconnect
            label = msg("line.network_fabric", "Network fabric")
            basis = msg("basis.per_gpu", "GPUs × price per GPU")
            capital.append(capital_item("network_fabric", label, basis, network, cluster.gpus))
        storage = reads.component(row, "storage", "per_tb")
        if storage is not None:
            tb = reads("storage_tb_per_gpu")
            capital.append(
                capital_item(
                    "storage",
                    msg("line.storage", "Shared storage"),
                    msg("basis.storage", "GPUs × TB of storage per GPU × price per TB"),
                    storage,
                    Quantity(cluster.GPUS, tb),
                )
            )
        installation = reads.component(row, "installation", "fraction")
        if installation is not None:
            hardware = offer.price
            capital.append(
                capital_item(
                    "installation",
                    msg("line.installation", "Installation: racks, PDUs, optics and cabling"),
                    msg("basis.installation", "share of the server hardware × servers × price per server"),
                    installation,
                    Quantity(cluster.SERVERS, hardware),
                )
            )
        if offer.variant == OWN_FACILITY:
            build = reads.component(row, "facility_build", "per_kw")
            assert build is not None
            capital.append(
                capital_item(
                    "facility_build",
                    msg("line.facility_build", "Own machine room"),
                    msg("basis.facility_build", "IT kW × build cost per kW"),
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
                    msg("basis.colocation", "IT kW × rent per kW-month × 12"),
                    colo,
                    cluster.kw_months,
                )
            )
    reads("nodes_per_ops_team")
    team_fte = reads("ops_team_fte")
    ops_item = staff_item(reads, row, offer.variant == QUOTED, team_fte)
    if ops_item is not None:
        running.append(ops_item)
    power = reads.component(row, "power", "per_kwh")
    if power is not None and server.power_kw is not None:
        kw_share = reads("pue") * reads("power_draw_share")
        running.append(
            RunningItem(
                "power",
                msg("line.power", "Power (IT load × PUE)"),
                msg("basis.power", "IT kW × share drawn × 8,760 hours × PUE × price per kWh"),
                power,
                Quantity(cluster.KWH_PER_YEAR, kw_share),
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
                msg("basis.software_licence", "GPUs × share licensed × price per GPU-year"),
                licence,
                Quantity(cluster.GPUS, share),
                reads.take(),
            )
        )
    return Bill(server.power_kw, tuple(capital), tuple(running), tuple(reads.pending), fabric)


class _Ageing(NamedTuple):
    """What a named GPU's bill reads about ageing: the servers' keeping (support by warranty), the other
    assets' (kept past their life, no support), the resale haircut and time to sell, and sources."""

    server: Keeping
    other: Keeping
    market: tuple[Range, Range]
    refs: tuple[SourceRef, ...]
    support_refs: tuple[SourceRef, ...]


def _ageing(reads: Reads, row: Any) -> _Ageing:
    """The ageing assumptions and the post-warranty support row (``hardware_support``: a share of the
    servers' price a year), read once per offer."""
    support = reads.component(row, "hardware_support", "fraction")
    warranty, in_warranty = reads("warranty_years_server_hardware"), reads("support_share_in_warranty")
    extension, increase = reads("life_extension_years"), reads("support_increase_past_life")
    refs = reads.take()
    haircut, days = reads("resale_haircut"), reads("resale_days_to_sell")
    market_refs = reads.take()
    after = support.values[0] if support is not None else ZERO
    support_refs = () if support is None else (support.rows[0].ref, *support.after, *refs)
    return _Ageing(
        Keeping(warranty, in_warranty if support is not None else ZERO, after, extension, increase),
        Keeping(warranty, ZERO, ZERO, extension, increase),
        (haircut, days),
        (*refs, *market_refs),
        support_refs,
    )


def staff_item(reads: Reads, row: Any, quoted: bool, team_fte: Range) -> RunningItem | None:
    """The ops teams' line: a named GPU's cluster is staffed at the jurisdiction's loaded cost per
    engineer (``ops_staff`` rows, US and CN alike) × engineers per team, else at a team's cost
    (``ops_team``); the source article's server keeps the article's team figure (30–50万 a year)."""
    label = msg("line.ops_team", "Operations team")
    for item in ("ops_team", "ops_staff") if quoted else ("ops_staff", "ops_team"):
        if item == "ops_staff" and (staff := reads.component(row, "ops_staff", "per_fte_year")) is not None:
            basis = msg("basis.ops_staff", "ops teams × engineers per team × cost per FTE-year")
            return RunningItem("ops_team", label, basis, staff, Quantity(cluster.TEAMS, team_fte))
        if item == "ops_team" and (team := reads.component(row, "ops_team", "per_team_year")) is not None:
            basis = msg("basis.ops_team", "ops teams × cost of a team per year")
            return RunningItem("ops_team", label, basis, team, cluster.teams)
    return None


def facilities(knowledge: Knowledge, as_of: Any, row: Any, *, option: str) -> list[str]:
    """The machine rooms a server offer can be priced with: the source's lump, else colocation and an
    own facility, where the knowledge base prices them for the offer's region."""

    def has(item: str) -> bool:
        found = knowledge.component(
            option, item, as_of=as_of, provider=row.provider, region=row.region, subject=row.subject
        )
        return bool(found)

    if has("facility_and_network"):
        return [QUOTED]
    return [v for v, item in ((COLOCATION, "colocation"), (OWN_FACILITY, "facility_build")) if has(item)]


def resale_points(
    knowledge: Knowledge, as_of: Any, offer: Offer
) -> tuple[tuple[float, tuple[float, float, float]], ...]:
    """Market resale shares of the offer's GPU model by age (``resale_value`` rows ``age_<N>y``)."""
    if offer.row.gpu_model == "*":
        return ()
    points = []
    for r in knowledge.rows(offer.option, "resale_value", as_of):
        match = _AGE.match(r.subject)
        if r.gpu_model == offer.row.gpu_model and match:
            # market points are read as they stand (a Monte Carlo run draws the assumptions, not the curve)
            low, expected, high = (level(v) for v in r.value)
            points.append((float(match.group(1)), (low, expected, high)))
    return tuple(sorted(points))
