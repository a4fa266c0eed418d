"""What an option that buys offers reads of the knowledge, as methods of its kernel (SDK v4).

Each method is one of the pricing helpers a plugin used to call with the knowledge, the currency,
``as_of`` and its own option key in hand; here the kernel passes them, and the defaults are the safe
ones: a candidate's machine is its row's unit or its GPU's server, a group of ``None`` is the
reference server (``offers.group_rows``), storage is the option's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from app.core import bom, offers, pricing, storage
from app.core.capital import Bridge, Ownership
from app.core.cluster import Bill
from app.core.columns import Columns
from app.core.knowledge import Price
from app.core.offers import Offer
from app.core.owning import own
from app.core.quotes import Candidate, candidate
from app.core.ranges import Range
from app.core.storage import Storage, Stored
from app.core.types import LineItem

if TYPE_CHECKING:
    from app.core.knowledge import Knowledge

    Line = pricing.Line


class OfferReads:
    """The reads of an ``OfferKernel``; each names the module function it calls."""

    knowledge: Knowledge
    currency: str
    option: str
    as_of: Any

    if TYPE_CHECKING:

        def value(self, key: str) -> Range: ...  # Kernel's

    # ---- offers ----------------------------------------------------------------------------------

    def offers(self, item: str, gpu_model: str | None) -> list[Offer]:
        """The option's offers of ``item`` for ``gpu_model`` (None: the reference server) valid on the
        kernel's day, priced in its currency; rows no exchange rate converts are left out."""
        kb = self.knowledge
        rows = offers.group_rows(kb, self.as_of, option=self.option, item=item, gpu_model=gpu_model)
        return [o for r in rows if (o := offers.price_row(kb, r, self.currency, self.as_of)) is not None]

    def price_rows(self, item: str, gpu_model: str | None) -> list[Price]:
        """The rows ``offers`` prices, for an option that prices one row several ways (``price``)."""
        return offers.group_rows(self.knowledge, self.as_of, option=self.option, item=item, gpu_model=gpu_model)

    def price(self, row: Price, variant: str | None = None) -> Offer | None:
        """``row`` priced in the kernel's currency (a ``variant`` of it, e.g. a facility), or None where
        no exchange rate converts it."""
        return offers.price_row(self.knowledge, row, self.currency, self.as_of, variant=variant)

    def derived_offers(self, found: Sequence[Offer], base_plan: str) -> list[Offer]:
        """The offers the price books price only as a discount off ``base_plan`` of ``found``
        (``pricing.discounted``)."""
        return pricing.discounted(
            self.knowledge,
            list(found),
            option=self.option,
            base_plan=base_plan,
            currency=self.currency,
            as_of=self.as_of,
        )

    def candidate(
        self,
        offer: Offer,
        per_machine: int | None = None,
        data: Any = None,
        *,
        node_gpus: int | None = None,
        interconnect: Any = ...,
    ) -> Candidate:
        """A compiled candidate of ``offer``. ``per_machine`` (GPUs a team looks after as one machine)
        defaults to the row's unit, or for a row of one GPU its GPU's server (the reference server's for
        a row of the reference server); the node a job runs on is the row's instance or server where it
        says how many GPUs it has, else that machine (``quotes.candidate``)."""
        if per_machine is None:
            row = offer.row
            reference = row.subject == self.knowledge.reference_server().key
            per_machine = offers.per_machine(self.knowledge, offer.gpus_per_unit, None if reference else row.gpu_model)
        return candidate(offer, per_machine, data, node_gpus=node_gpus, interconnect=interconnect)

    def subject_name(self, subject: str) -> str:
        """What the answer calls a server SKU or instance type."""
        return offers.subject_name(self.knowledge, subject)

    def provider_name(self, provider: str) -> str:
        """A provider by name, in the answer's language."""
        return offers.provider_name(self.knowledge, provider)

    # ---- an own cluster's bill -------------------------------------------------------------------

    def facilities(self, row: Price) -> list[str]:
        """The facilities a server row can be run in (``bom.facilities``): one candidate each."""
        return bom.facilities(self.knowledge, self.as_of, row, option=self.option)

    def bill(self, offer: Offer) -> Bill:
        """The offer's bill of materials, compiled once (``bom.bill``)."""
        return bom.bill(self, offer)  # type: ignore[arg-type]

    def own(
        self,
        at: Columns,
        *,
        lead_time_days: Range,
        capital: Any,
        running: Any,
        rate: float,
        depreciation_years: Range,
        bridge: Bridge | None,
    ) -> Ownership:
        """Owning hardware over the horizon: capital, running costs, resale and the bridge while it is
        installed (``owning.own``)."""
        return own(
            at,
            lead_time_days=lead_time_days,
            capital=capital,
            running=running,
            rate=rate,
            depreciation_years=depreciation_years,
            bridge=bridge,
        )

    # ---- held hours ------------------------------------------------------------------------------

    def held_share(self, given: Any, assumption: str = "held_utilization") -> Range:
        """The utilization a team achieves on held capacity: ``given`` (the profile's ``held_share``)
        where it is one, else the option's ``assumption``."""
        return pricing.held_share(self.value(assumption), given)

    # ---- data storage and egress -----------------------------------------------------------------

    def storage(self, row: Price) -> Storage | None:
        """The storage (and egress) price for the offer ``row``'s provider and region, or None where the
        profile's data needs none priced (``storage.storage_of``)."""
        return storage.storage_of(self, self.option, row)  # type: ignore[arg-type]

    def stored(self, at: Columns, store: Storage, e: int, rate: float) -> Stored:
        """The data's storage and egress at end ``e`` for the horizon: the same for every offer of a
        provider and region, computed once per call."""
        key = ("stored", id(store), e, id(rate) if isinstance(rate, np.ndarray) else rate)
        found = at.memo.get(key)
        if found is None:  # the memo keeps what its key names alive
            found = at.memo[key] = (storage.stored(self, at, store, e, rate), store, rate)  # type: ignore[arg-type]
        result: Stored = found[0]
        return result

    def storage_lines(self, at: Columns, kept: list[Stored], with_egress: bool) -> tuple[Line, ...]:
        """The quote's storage line and, where egress is billed, its egress line: once per call for
        the same figures (``stored`` gives offers of one provider and region the same ones)."""
        key = ("storage_lines", with_egress, *map(id, kept))
        found = at.memo.get(key)
        if found is None:
            found = at.memo[key] = (storage.lines(at, kept, with_egress), kept)
        result: tuple[Line, ...] = found[0]
        return result

    def storage_items(self, row: Price, lines: Sequence[Line]) -> tuple[LineItem, ...]:
        """The breakdown's storage and egress lines of the offer ``row`` from its quote's lines (the
        other lines are left out)."""
        found = tuple(line for line in lines if line[0] in (storage.STORAGE, storage.EGRESS))
        return storage.line_items(self, self.option, row, found)  # type: ignore[arg-type]
