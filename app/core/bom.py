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
    server = kernel.knowledge.servers[offer.row.subject]
    lines = _Lines(kernel, offer)
    per_server = msg("basis.servers", "servers × price per server")
    # no label: it is written when answered, naming the number of servers
    lines.buy("server_hardware", None, per_server, offer.price, cluster.servers, offer.refs)
    fabric = lines.quoted_facility() if offer.variant == QUOTED else lines.named_gpu_cluster()
    lines.ops_team()
    lines.power(server.power_kw)
    lines.software_licence()
    return Bill(server.power_kw, tuple(lines.capital), tuple(lines.running), tuple(lines.reads.pending), fabric)


class _Lines:
    """A bill's lines as they are read, in the methodology's order: each reads the knowledge base through
    ``reads`` and takes the sources read since the line before it."""

    def __init__(self, kernel: Kernel, offer: Offer) -> None:
        self.kernel, self.offer, self.row = kernel, offer, offer.row
        self.reads = Reads(kernel)
        self.capital: list[CapitalItem] = []
        self.running: list[RunningItem] = []
        # a named GPU's cluster: support by warranty, assets kept past their life where cheaper, resale as a
        # seller receives it, a built machine room sunk (docs/methodology.md "No double counts, no sunk resale")
        self.aging = _ageing(self.reads, self.row, kernel) if offer.variant != QUOTED else None

    def buy(
        self,
        key: str,
        label: Msg | None,
        basis: Msg,
        price: Component | Range,
        quantity: Quantity,
        offer_refs: Any = (),
    ) -> None:
        """A capital line: its life and residual decline read, its resale curves made; a named GPU's built
        machine room is sunk (nothing comes back at the horizon)."""
        life = self.reads(f"life_years_{key}")
        sunk_room = self.aging is not None and key == "facility_build"
        decline = self.reads("resale_share_facility_build" if sunk_room else f"residual_decline_{key}")
        after = _SUNK if sunk_room else self._after_life(key, decline)
        self.capital.append(
            CapitalItem(
                key=key,
                label=label,
                basis=basis,
                price=price,
                quantity=quantity,
                life=life,
                decline=decline,
                life_refs=(*self.reads.take(), *after.refs),
                resale=after.resale,
                offer_refs=offer_refs,
                curves=after.curves,
                keeping=after.keeping,
                support_refs=after.support_refs,
            )
        )

    def _after_life(self, key: str, decline: Range) -> _AfterLife:
        """What a capital line that resells brings back: the servers at the market's resale points, a named
        GPU's assets kept past their life where cheaper (the servers supported by warranty)."""
        aging = self.aging
        resale = resale_points(self.kernel.knowledge, self.kernel.as_of, self.offer) if key == "server_hardware" else ()
        curves = cluster.curves_of(self.kernel, decline, resale, aging.market if aging is not None else None)
        keeping = None if aging is None else aging.server if key == "server_hardware" else aging.other
        more = aging.refs if aging is not None and key == "server_hardware" else ()
        support = aging.support_refs if keeping is not None and keeping.supported and aging is not None else ()
        return _AfterLife(resale, curves, keeping, more, support)

    def quoted_facility(self) -> str | None:
        """The source article's quoted lump for machine room and network, bought per server; its fabric."""
        lump = self.reads.component(self.row, "facility_and_network", "per_server")
        assert lump is not None
        label = msg("line.facility_and_network", "Machine room and network")
        self.buy(
            "facility_and_network", label, msg("basis.servers", "servers × price per server"), lump, cluster.servers
        )
        return lump.rows[0].interconnect

    def named_gpu_cluster(self) -> str | None:
        """A named GPU's server's complete bill before its running costs: network fabric, storage,
        installation and the machine room (built, or rented by colocation); the fabric's interconnect."""
        fabric = self.network_fabric()
        self.storage()
        self.installation()
        if self.offer.variant == OWN_FACILITY:
            self.facility_build()
        else:
            self.colocation()
        return fabric

    def network_fabric(self) -> str | None:
        """The network fabric, bought per GPU; its interconnect (None without a fabric)."""
        network = self.reads.component(self.row, "network_fabric", "per_gpu")
        if network is None:
            return None
        label = msg("line.network_fabric", "Network fabric")
        self.buy("network_fabric", label, msg("basis.per_gpu", "GPUs × price per GPU"), network, cluster.gpus)
        return network.rows[0].interconnect

    def storage(self) -> None:
        """Shared storage: TB per GPU, bought per TB."""
        storage = self.reads.component(self.row, "storage", "per_tb")
        if storage is not None:
            tb = self.reads("storage_tb_per_gpu")
            label = msg("line.storage", "Shared storage")
            basis = msg("basis.storage", "GPUs × TB of storage per GPU × price per TB")
            self.buy("storage", label, basis, storage, Quantity(cluster.GPUS, tb))

    def installation(self) -> None:
        """Installation (racks, PDUs, optics, cabling) as a share of the servers' hardware."""
        installation = self.reads.component(self.row, "installation", "fraction")
        if installation is not None:
            label = msg("line.installation", "Installation: racks, PDUs, optics and cabling")
            basis = msg("basis.installation", "share of the server hardware × servers × price per server")
            self.buy("installation", label, basis, installation, Quantity(cluster.SERVERS, self.offer.price))

    def facility_build(self) -> None:
        """An own machine room, built per kW of IT load."""
        build = self.reads.component(self.row, "facility_build", "per_kw")
        assert build is not None
        label = msg("line.facility_build", "Own machine room")
        self.buy(
            "facility_build", label, msg("basis.facility_build", "IT kW × build cost per kW"), build, cluster.it_kw
        )

    def colocation(self) -> None:
        """A machine room rented by colocation, per kW of IT load a month."""
        colo = self.reads.component(self.row, "colocation", "per_kw_month")
        assert colo is not None
        label = msg("line.colocation", "Colocation")
        basis = msg("basis.colocation", "IT kW × rent per kW-month × 12")
        self.running.append(RunningItem("colocation", label, basis, colo, cluster.kw_months))

    def ops_team(self) -> None:
        """The ops teams (``staff_item``), as many as the cluster's nodes need."""
        self.reads("nodes_per_ops_team")  # cited among the bill's sources: the teams are counted by it
        team_fte = self.reads("ops_team_fte")
        item = staff_item(self.reads, self.row, self.offer.variant == QUOTED, team_fte)
        if item is not None:
            self.running.append(item)

    def power(self, power_kw: float | None) -> None:
        """Power: the IT load's share drawn, all year, × PUE, at the region's price per kWh (where the
        server's power is known)."""
        power = self.reads.component(self.row, "power", "per_kwh")
        if power is not None and power_kw is not None:
            kw_share = self.reads("pue") * self.reads("power_draw_share")
            label = msg("line.power", "Power (IT load × PUE)")
            basis = msg("basis.power", "IT kW × share drawn × 8,760 hours × PUE × price per kWh")
            quantity = Quantity(cluster.KWH_PER_YEAR, kw_share)
            self.running.append(RunningItem("power", label, basis, power, quantity, self.reads.take()))

    def software_licence(self) -> None:
        """Software licences of a named GPU's cluster: the share of its GPUs licensed, per GPU-year."""
        licence = self.reads.component(self.row, "software_licence", "per_gpu_year")
        if licence is not None and self.offer.variant != QUOTED:
            share = self.reads("licensed_gpu_share")
            label = msg("line.software_licence", "Software licences")
            basis = msg("basis.software_licence", "GPUs × share licensed × price per GPU-year")
            quantity = Quantity(cluster.GPUS, share)
            self.running.append(RunningItem("software_licence", label, basis, licence, quantity, self.reads.take()))


class _AfterLife(NamedTuple):
    """What a capital line brings back after its life: resale points, residual curves, keeping past its
    life, and the sources these add to its life's and its support line's."""

    resale: tuple[tuple[float, tuple[float, float, float]], ...]
    curves: Any
    keeping: Keeping | None
    refs: tuple[SourceRef, ...]
    support_refs: tuple[SourceRef, ...]


#: a built machine room is sunk: nothing comes back at the horizon
_SUNK = _AfterLife((), (sunk, sunk, sunk), None, (), ())


class _Ageing(NamedTuple):
    """What a named GPU's bill reads about ageing: the servers' keeping (support by warranty), the other
    assets' (kept past their life, no support), the resale haircut and time to sell, and sources."""

    server: Keeping
    other: Keeping
    market: tuple[Range, Range]
    refs: tuple[SourceRef, ...]
    support_refs: tuple[SourceRef, ...]


def _ageing(reads: Reads, row: Any, kernel: Kernel) -> _Ageing:
    """The ageing assumptions and the post-warranty support row (``hardware_support``: a share of the
    servers' price a year), read once per offer; a keeping equal to another offer's is that one
    (``_shared``)."""
    support = reads.component(row, "hardware_support", "fraction")
    warranty, in_warranty = reads("warranty_years_server_hardware"), reads("support_share_in_warranty")
    extension, increase = reads("life_extension_years"), reads("support_increase_past_life")
    refs = reads.take()
    haircut, days = reads("resale_haircut"), reads("resale_days_to_sell")
    market_refs = reads.take()
    after = support.values[0] if support is not None else ZERO
    support_refs = () if support is None else (support.rows[0].ref, *support.after, *refs)
    return _Ageing(
        _shared(kernel, Keeping(warranty, in_warranty if support is not None else ZERO, after, extension, increase)),
        _shared(kernel, Keeping(warranty, ZERO, ZERO, extension, increase)),
        (haircut, days),
        (*refs, *market_refs),
        support_refs,
    )


def _shared(kernel: Kernel, keeping: Keeping) -> Keeping:
    """The kernel's one object for a keeping of these figures: the plans of an asset are kept per call by
    the identity of its keeping, curves and life (``ageing.priced``), so offers of one server in several
    machine rooms share them. A kernel over Monte Carlo draws (arrays, not hashable) keeps its own."""
    try:
        found: Keeping = kernel.compiled.setdefault(("keeping", keeping), keeping)
    except TypeError:  # its figures are arrays of draws
        return keeping
    return found


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
