"""The catalog: the loaded options and the knowledge snapshot's rows, filtered and paged.

Rows are converted by name from the snapshot's objects (``msgspec.convert(..., from_attributes=True)``,
nested rows too); code spells out only what the snapshot holds differently (a range as its ends).
One declaration per entity: the table (``app.kb.models``); the seed records, the snapshot objects and
these rows carry its columns by name, their enumerated fields typed with the vocabularies of ``app.core.vocab``, and
``tests/test_declarations.py`` fails when a shape drifts (its exceptions listed there, with reasons)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import msgspec
from advanced_alchemy.filters import LimitOffset

from app.core.errors import KnowledgeUnavailable
from app.core.knowledge import Knowledge, Price
from app.core.offers import stale
from app.core.vocab import GLOBAL, OFFER_ITEMS
from app.domain.catalog import schemas as s
from app.domain.shared.advisor import Advisor
from app.i18n import DEFAULT_LANG, Lang, name_of
from app.kb.repositories import KnowledgeVersionRepository
from app.web.pagination import page

R = TypeVar("R", bound=msgspec.Struct)


def read(row: Any, schema: type[R]) -> R:
    """A snapshot row (or an ORM row) as its read schema: the fields of ``schema`` taken from the
    row's attributes of the same names, nested rows too, and checked against the schema's types."""
    return msgspec.convert(row, schema, from_attributes=True)


@cache
def _names(cls: Any) -> tuple[str, ...]:
    """A dataclass's field names, once per class."""
    return tuple(f.name for f in dataclasses.fields(cls))


def flat(row: Any, schema: type[R]) -> R:
    """A snapshot row with a range as ``schema``: its fields by name, the range spelled out as the
    columns the schema has instead (``value`` as ``low``, ``expected``, ``high``; a price's
    ``lead_time_days`` as ``lead_time_days_low`` and ``_high``, None without one)."""
    cls: type = type(row)
    values = {name: getattr(row, name) for name in _names(cls)}
    value = values["value"]
    values.update(low=value.low, expected=value.expected, high=value.high)
    if "lead_time_days" in values:
        lead = values["lead_time_days"]
        values.update(
            lead_time_days_low=None if lead is None else lead.low,
            lead_time_days_high=None if lead is None else lead.high,
        )
    return msgspec.convert(values, schema)  # the row's other fields (value, id…) are not the schema's: ignored


L = TypeVar("L", bound=s.Page)


def _listing(cls: type[L], kb: Knowledge, rows: Sequence[Any], window: LimitOffset) -> L:
    """A page of ``rows`` as the list type ``cls``, naming the knowledge version they come from."""
    return cls(
        knowledge_version=kb.version,
        total=len(rows),
        limit=window.limit,
        offset=window.offset,
        items=page(rows, window),
    )  # type: ignore[call-arg]


@dataclass(frozen=True, slots=True)
class OfferQuery:
    """The filters of ``GET /v1/offers``."""

    option: str | None = None
    gpu_model: str | None = None
    provider: str | None = None
    region: str | None = None
    plan: str | None = None
    as_of: dt.date | None = None
    stale_days: int | None = None
    today: dt.date = dt.date.min

    def matches(self, p: Price) -> bool:
        return (
            (self.option is None or p.option == self.option)
            and (self.gpu_model is None or p.gpu_model == self.gpu_model)
            and (self.provider is None or p.provider == self.provider)
            and (self.region is None or p.region == self.region)
            and (self.plan is None or p.plan == self.plan)
            and (self.as_of is None or p.valid_on(self.as_of))
        )


def _utc(value: dt.datetime) -> dt.datetime:
    # SQLite hands timestamps back naive; they are stored in UTC, and the document promises RFC 3339
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


class CatalogService:
    def __init__(self, advisor: Advisor) -> None:
        self.advisor = advisor

    def options(self, lang: Lang = DEFAULT_LANG) -> s.OptionList:
        """The loaded options, named and described in ``lang`` (the plugin's words where the catalogs lack them)."""
        return s.OptionList(
            items=[
                s.OptionRead(
                    key=o.spec.key,
                    name=name_of(f"option.{o.spec.key}.name", lang, o.spec.name),
                    description=name_of(f"option.{o.spec.key}.description", lang, o.spec.description),
                    plugin=o.plugin_name,
                    plugin_version=o.plugin_version,
                    price_plans=None if o.spec.price_plans is None else list(o.spec.price_plans),
                    rental_plans=list(o.spec.rental_plans),
                    # each field's declaration as it stands, its choices a list
                    profile_fields=[
                        s.ProfileFieldRead(**dataclasses.asdict(f) | {"choices": list(f.choices)})
                        for f in o.spec.profile_fields
                    ],
                )
                for o in self.advisor.options.values()
            ]
        )

    def _kb(self) -> Knowledge:
        return self.advisor.list_knowledge()

    def gpus(self, window: LimitOffset) -> s.GpuList:
        kb = self._kb()
        rows = [read(g, s.GpuRead) for g in kb.gpus.values()]
        return _listing(s.GpuList, kb, rows, window)

    def gpu(self, key: str) -> s.GpuRead | None:
        found = self._kb().gpus.get(key)
        return None if found is None else read(found, s.GpuRead)

    def servers(self, window: LimitOffset) -> s.ServerList:
        kb = self._kb()
        rows = [read(x, s.ServerRead) for x in kb.servers.values()]
        return _listing(s.ServerList, kb, rows, window)

    def prices(
        self,
        window: LimitOffset,
        *,
        option: str | None,
        provider: str | None,
        region: str | None,
        item: str | None,
        as_of: dt.date | None,
    ) -> s.PriceList:
        kb = self._kb()
        rows = [
            flat(p, s.PriceRead)
            for p in kb.prices
            if (option is None or p.option == option)
            and (provider is None or p.provider == provider)
            and (region is None or p.region == region)
            and (item is None or p.item == item)
            and (as_of is None or p.valid_on(as_of))
        ]
        return _listing(s.PriceList, kb, rows, window)

    def offers(self, window: LimitOffset, query: OfferQuery) -> s.OfferList:
        """Offer rows (the items an option buys by itself), filtered; ``stale_days`` keeps the offers
        whose newest row was read (or, without a retrieval date, became valid) longer ago than that."""
        kb = self._kb()
        rows = [p for p in kb.prices if p.item in OFFER_ITEMS and query.matches(p)]
        if query.stale_days is not None:
            rows = stale(rows, query.stale_days, query.today)
        return _listing(s.OfferList, kb, [flat(p, s.PriceRead) for p in rows], window)

    def providers(self, window: LimitOffset, *, kind: str | None, lang: Lang = DEFAULT_LANG) -> s.ProviderList:
        """The providers, named in ``lang`` (``provider.<key>``; the knowledge base's name in English and
        for a provider the catalogs do not know)."""
        kb = self._kb()
        rows = [
            msgspec.structs.replace(read(p, s.ProviderRead), name=name_of(f"provider.{p.key}", lang, p.name))
            for p in kb.providers.values()
            if kind is None or p.kind == kind
        ]
        return _listing(s.ProviderList, kb, rows, window)

    def regions(self, window: LimitOffset, *, kind: str | None, parent: str | None) -> s.RegionList:
        """The region hierarchy, root first (by depth, then key); ``parent`` keeps the regions directly under it."""
        kb = self._kb()
        rows = [
            r
            for r in kb.regions.values()
            if (kind is None or r.kind == kind) and (parent is None or r.parent == parent)
        ]
        rows.sort(key=lambda r: (len(kb.region_chain(r.key)), r.key))
        return _listing(s.RegionList, kb, [read(r, s.RegionRead) for r in rows], window)

    def is_region(self, key: str) -> bool:
        """Whether ``key`` is a region of the hierarchy."""
        return key in self._kb().regions

    def availability_rules(
        self,
        window: LimitOffset,
        *,
        gpu_model: str | None,
        jurisdiction: str | None,
        as_of: dt.date | None,
        scope: str | None = None,
        kind: str | None = None,
    ) -> s.AvailabilityRuleList:
        """Availability rules, filtered: ``jurisdiction`` keeps the rules that apply there (a rule of that
        region, of any region it lies in or of a bloc it belongs to; none at ``global``, which lies in no
        jurisdiction), ``scope`` and ``kind`` whom they bind and whose law they are, ``as_of`` those in
        force that day."""
        kb = self._kb()
        rows = [
            a
            for a in kb.availability
            if (gpu_model is None or a.gpu_model == gpu_model)
            and (jurisdiction is None or (jurisdiction != GLOBAL and kb.within(jurisdiction, a.jurisdiction)))
            and (scope is None or a.scope == scope)
            and (kind is None or a.kind == kind)
            and (as_of is None or a.valid_on(as_of))
        ]
        rows.sort(key=lambda a: (a.jurisdiction, a.gpu_model, a.kind, a.valid_from))
        return _listing(s.AvailabilityRuleList, kb, [read(a, s.AvailabilityRuleRead) for a in rows], window)

    def exchange_rates(
        self, window: LimitOffset, *, as_of: dt.date | None, base: str | None, quote: str | None
    ) -> s.ExchangeRateList:
        """Every rate, newest first; with ``as_of``, the one in effect that day for each currency."""
        kb = self._kb()
        rates = [r for r in kb.rates if (base is None or r.base == base) and (quote is None or r.quote == quote)]
        if as_of is not None:
            current: dict[str, Any] = {}
            for r in sorted(rates, key=lambda r: r.valid_on):
                if r.valid_on <= as_of:
                    current[r.base] = r
            rates = list(current.values())
        rates.sort(key=lambda r: (r.base, r.valid_on), reverse=True)
        return _listing(s.ExchangeRateList, kb, [read(r, s.ExchangeRateRead) for r in rates], window)

    def assumptions(self, window: LimitOffset, *, option: str | None) -> s.AssumptionList:
        kb = self._kb()
        rows = [flat(a, s.AssumptionRead) for a in kb.assumptions.values() if option is None or a.option == option]
        return _listing(s.AssumptionList, kb, rows, window)

    def rules(self, window: LimitOffset, *, option: str | None) -> s.RuleList:
        kb = self._kb()
        rows = [read(r, s.RuleRead) for r in kb.rules if option is None or r.option == option]
        return _listing(s.RuleList, kb, rows, window)

    async def knowledge_version(self, versions: KnowledgeVersionRepository) -> s.KnowledgeVersionRead:
        kb = self._kb()
        row = await versions.by_label(kb.version)
        if row is None:
            raise KnowledgeUnavailable(f"knowledge version {kb.version} is not in the database")
        return s.KnowledgeVersionRead(
            version=row.label,
            content_hash=row.content_hash,
            created_at=_utc(row.created_at),
            note=row.note,
            summary=row.summary,
        )
