"""The read-only knowledge snapshot that option plugins compute from.

Built once per knowledge version from SQL (``app.kb.snapshot``) and shared by every request.
Plain frozen values: the decision core and the plugins never touch the database.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import MissingKnowledge
from app.core.ranges import Range
from app.core.records import (
    ANY,
    SAME,
    Assumption,
    AvailabilityRule,
    Condition,
    Conversion,
    DataSecurityLevel,
    ExchangeRate,
    GpuSpec,
    Price,
    Provider,
    Region,
    Rule,
    Server,
    SourceRef,
)
from app.core.regions import RegionHierarchy, chains
from app.core.vocab import PIVOT

#: the snapshot, and the rows it is made of (defined in ``app.core.records``)
__all__ = [
    "ANY",
    "MEMO_LIMIT",
    "SAME",
    "Assumption",
    "AvailabilityRule",
    "Condition",
    "Conversion",
    "DataSecurityLevel",
    "ExchangeRate",
    "GpuSpec",
    "Knowledge",
    "Price",
    "Provider",
    "Region",
    "Rule",
    "Server",
    "SourceRef",
]

#: lookups a snapshot remembers before it starts over (``Knowledge._memo_put``)
MEMO_LIMIT = 20_000


@dataclass(frozen=True, slots=True, eq=False)
class Knowledge(RegionHierarchy):
    """One knowledge version, in memory. Lookups raise :class:`MissingKnowledge` naming the gap."""

    version: str
    created_at: dt.datetime
    gpus: Mapping[str, GpuSpec]
    servers: Mapping[str, Server]
    prices: tuple[Price, ...]
    assumptions: Mapping[tuple[str, str], Assumption]
    rules: tuple[Rule, ...]
    providers: Mapping[str, Provider] = field(default_factory=dict)
    rates: tuple[ExchangeRate, ...] = ()
    security_levels: Mapping[str, DataSecurityLevel] = field(default_factory=dict)
    #: the region hierarchy, by key (every chain of parents ends at ``global``)
    regions: Mapping[str, Region] = field(default_factory=dict)
    #: export controls: GPU models unavailable, or only with a licence, for a jurisdiction over a period
    availability: tuple[AvailabilityRule, ...] = ()
    #: Monte Carlo draws its ranged rows hold (``app.engine.insights.uncertainty.sample_knowledge``): each
    #: such row's value is a Range whose ends are one array of draws; 0 for a snapshot as loaded
    draws: int = 0
    _by_item: Mapping[tuple[str, str], tuple[Price, ...]] = field(init=False, repr=False)
    _rates: Mapping[str, tuple[ExchangeRate, ...]] = field(init=False, repr=False)
    #: each region's chain: the key, its parent … ``global`` (``region_chain``)
    _chains: Mapping[str, tuple[str, ...]] = field(init=False, repr=False)
    #: per (option, item): the days on which some row starts or stops being valid, sorted (``rows``)
    _edges: Mapping[tuple[str, str], tuple[dt.date, ...]] = field(init=False, repr=False)
    #: lookups memoised for this snapshot (pure functions of it and their arguments; see ``_memo_put``)
    _memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    #: values derived from this snapshot alone (e.g. Monte Carlo samples), kept while it is served
    derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_item: dict[tuple[str, str], list[Price]] = {}
        for p in self.prices:
            by_item.setdefault((p.option, p.item), []).append(p)
        object.__setattr__(self, "_by_item", {k: tuple(v) for k, v in by_item.items()})
        edges = {
            k: tuple(sorted({p.valid_from for p in v} | {p.valid_to for p in v if p.valid_to is not None}))
            for k, v in by_item.items()
        }
        object.__setattr__(self, "_edges", edges)
        rates: dict[str, list[ExchangeRate]] = {}
        for r in sorted(self.rates, key=lambda r: r.valid_on):
            rates.setdefault(r.base, []).append(r)
        object.__setattr__(self, "_rates", {k: tuple(v) for k, v in rates.items()})
        object.__setattr__(self, "_chains", chains(self.regions))

    # ---- currencies ---------------------------------------------------------------------------

    @property
    def currencies(self) -> frozenset[str]:
        """The currencies an answer can be given in: the pivot and every one with a rate to it (memoised)."""
        found: frozenset[str] | None = self._memo.get("currencies")
        if found is None:
            found = frozenset({PIVOT, *self._rates})
            self._memo_put("currencies", found)
        return found

    def rate(self, currency: str, as_of: dt.date) -> ExchangeRate | None:
        """The newest rate of ``currency`` to CNY fixed on or before ``as_of`` (None for CNY itself).
        Raises MissingKnowledge when there is none that early."""
        if currency == PIVOT:
            return None
        found = None
        for r in self._rates.get(currency, ()):
            if r.valid_on > as_of:
                break
            found = r
        if found is None:
            raise MissingKnowledge(f"no exchange rate of {currency} to {PIVOT} on or before {as_of}")
        return found

    def conversion(self, source: str, target: str, as_of: dt.date) -> Conversion:
        """How to convert amounts from ``source`` to ``target`` currency on ``as_of``, through CNY: every
        amount is multiplied by the same factor for one target, so converting never reorders offers."""
        if source == target:
            return SAME
        key = ("conversion", source, target, as_of)
        found: Conversion | None = self._memo.get(key)
        if found is None:
            found = self._conversion(source, target, as_of)
            self._memo_put(key, found)
        return found

    def _conversion(self, source: str, target: str, as_of: dt.date) -> Conversion:
        into, out = self.rate(source, as_of), self.rate(target, as_of)
        factor = (into.rate if into else 1.0) / (out.rate if out else 1.0)
        return Conversion(factor, tuple(r.ref for r in (into, out) if r is not None))

    @property
    def priced_regions(self) -> frozenset[str]:
        """Every region a price row names (memoised: a request checks its ``regions`` against it)."""
        found: frozenset[str] | None = self._memo.get("priced_regions")
        if found is None:
            found = frozenset(p.region for p in self.prices)
            self._memo_put("priced_regions", found)
        return found

    def accepts(self, data_security: str, residency: str | None) -> bool:
        """Whether a profile of this ``data_security`` level may use an offer of this residency
        (a level the knowledge base does not define accepts everything)."""
        level = self.security_levels.get(data_security)
        return level is None or residency is None or residency in level.accepted_residencies

    # ---- assumptions and prices ---------------------------------------------------------------

    def assumption(self, option: str, key: str) -> Assumption:
        """The option's own value of ``key``, else the general (``*``) one."""
        found = self.assumptions.get((option, key)) or self.assumptions.get((ANY, key))
        if found is None:
            raise MissingKnowledge(f"no assumption '{key}' for option '{option}' (nor a general one)")
        return found

    def assumption_value(self, option: str, key: str) -> tuple[Range, SourceRef]:
        """``assumption(option, key)``'s value and source reference (memoised: the model reads dozens
        of assumptions per assessment)."""
        memo_key = ("assumption", option, key)
        found: tuple[Range, SourceRef] | None = self._memo.get(memo_key)
        if found is None:
            row = self.assumption(option, key)
            found = (row.value, row.ref)
            self._memo_put(memo_key, found)
        return found

    def rows(self, option: str, item: str, as_of: dt.date) -> tuple[Price, ...]:
        """Every price row of ``option``'s ``item`` valid on ``as_of``.

        Which rows are valid changes only on the days some row starts or stops being valid, so the
        answer is memoised per interval between those days (a bounded number per snapshot)."""
        key = ("rows", option, item, self._period(option, item, as_of))
        found: tuple[Price, ...] | None = self._memo.get(key)
        if found is None:
            found = tuple(p for p in self._by_item.get((option, item), ()) if p.valid_on(as_of))
            self._memo_put(key, found)
        return found

    def period(self, as_of: dt.date) -> int:
        """Which of the snapshot's validity periods ``as_of`` falls in: every day between two dates on
        which some price row or exchange rate starts or stops holding sees the same rows and rates, so a
        compiled kernel serves all of them (``app.host.options``)."""
        edges: tuple[dt.date, ...] | None = self._memo.get("period_edges")
        if edges is None:
            days = {p.valid_from for p in self.prices} | {p.valid_to for p in self.prices if p.valid_to is not None}
            edges = tuple(sorted(days | {r.valid_on for r in self.rates}))
            self._memo_put("period_edges", edges)
        return bisect.bisect_right(edges, as_of)

    def _period(self, option: str, item: str, as_of: dt.date) -> int:
        """Which interval between the validity edges of ``(option, item)`` ``as_of`` falls in."""
        return bisect.bisect_right(self._edges.get((option, item), ()), as_of)

    def _memo_put(self, key: Any, value: Any) -> None:
        """Remember a lookup; the memo is emptied when it grows past ``MEMO_LIMIT`` entries (arguments
        such as ``as_of`` come from requests, so it must not grow without bound)."""
        if len(self._memo) >= MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = value

    def component(
        self,
        option: str,
        item: str,
        *,
        as_of: dt.date,
        provider: str | None = None,
        region: str | None = ANY,
        subject: str = ANY,
        gpu_model: str = ANY,
        plan: str | None = ANY,
        units: tuple[str, ...] | None = None,
    ) -> list[Price]:
        """The rows of ``item`` that go with an offer, best match first: the same subject, GPU model,
        plan and region before a general (``*``) one; a region falls back along its chain of the region
        hierarchy (``us-east-1`` → ``US`` → ``north_america`` → ``global``); ``None`` takes any region (and
        any plan for ``plan=None``). Only rows priced in ``units`` compete, when given. Volume tiers
        (``min_gpus``) and kW tiers (``min_kw``) are all returned, in order."""
        key = (
            "component",
            option,
            item,
            self._period(option, item, as_of),
            provider,
            region,
            subject,
            gpu_model,
            plan,
            units,
        )
        found: list[Price] | None = self._memo.get(key)
        if found is None:
            found = self._component(option, item, as_of, provider, region, subject, gpu_model, plan, units)
            self._memo_put(key, found)
        return list(found)

    def _component(
        self,
        option: str,
        item: str,
        as_of: dt.date,
        provider: str | None,
        region: str | None,
        subject: str,
        gpu_model: str,
        plan: str | None,
        units: tuple[str, ...] | None,
    ) -> list[Price]:
        rows = self.rows(option, item, as_of)
        if units is not None:
            rows = tuple(p for p in rows if p.unit in units)
        regions = self.region_search(region) if region is not None else sorted({p.region for p in rows})
        found = [
            p
            for p in rows
            if (provider is None or p.provider == provider)
            and (p.subject in (subject, ANY) or p.subject not in self.servers)
            and p.gpu_model in (gpu_model, ANY)
            and (plan is None or p.plan in (plan, ANY))
            and p.region in regions
        ]
        if not found:
            return []

        def rank(p: Price) -> tuple[int, int, bool, bool, int]:
            # the offer's own server first, then a general row, then a named variant (a tier, a tariff)
            fit = 0 if p.subject == subject else 1 if p.subject == ANY else 2
            return (
                regions.index(p.region),
                fit,
                p.gpu_model != gpu_model,
                plan is not None and p.plan != plan,
                p.min_gpus or 0,
            )

        found.sort(key=rank)
        best = found[0]
        if best.min_kw is not None:  # kW tiers (retail, wholesale): every tier of the region, GPU model and plan
            tiers = [
                p
                for p in found
                if p.min_kw is not None and (p.region, p.gpu_model, p.plan) == (best.region, best.gpu_model, best.plan)
            ]
            return sorted(tiers, key=lambda p: p.min_kw or 0.0)
        if best.min_gpus is not None:  # volume tiers: every tier of the same region, GPU model and plan
            return [
                p
                for p in found
                if p.min_gpus is not None
                and (p.region, p.gpu_model, p.plan) == (best.region, best.gpu_model, best.plan)
            ]
        same = (best.region, best.subject, best.gpu_model, best.plan)
        return [p for p in found if (p.region, p.subject, p.gpu_model, p.plan) == same]

    def price(
        self,
        option: str,
        item: str,
        *,
        unit: str,
        currency: str,
        as_of: dt.date,
        subject: str = ANY,
        plan: str | None = None,
    ) -> Price:
        """The row of ``item`` in ``unit`` and ``currency`` valid on ``as_of``, in any region and (unless
        ``plan`` is given) any plan; a subject's own row wins over a general one."""
        found = self.component(option, item, as_of=as_of, region=None, subject=subject, plan=plan)
        rows = [p for p in found if p.currency == currency]
        if not rows:
            raise MissingKnowledge(
                f"no price '{item}' for option '{option}' (subject '{subject}') in {currency} valid on {as_of}"
            )
        if rows[0].unit != unit:
            raise MissingKnowledge(f"price row {rows[0].id} '{item}' is {rows[0].unit}, expected {unit}")
        return rows[0]

    # ---- hardware -------------------------------------------------------------------------------

    def reference_server(self) -> Server:
        found: Server | None = self._memo.get("reference_server")
        if found is None:
            found = self._reference_server()
            self._memo_put("reference_server", found)
        return found

    def _reference_server(self) -> Server:
        refs = sorted((s for s in self.servers.values() if s.reference), key=lambda s: s.key)
        if not refs:
            raise MissingKnowledge("no reference server in the knowledge base")
        return refs[0]

    def server_for(self, gpu_model: str | None) -> Server:
        """The server SKU a profile runs on: the reference server, or the first of ``gpu_model``."""
        if gpu_model is None:
            return self.reference_server()
        key = ("server_for", gpu_model)
        found: Server | None = self._memo.get(key)
        if found is None:
            found = self._server_for(gpu_model)
            self._memo_put(key, found)
        return found

    def _server_for(self, gpu_model: str) -> Server:
        if gpu_model not in self.gpus:
            raise MissingKnowledge(f"unknown gpu_model '{gpu_model}'")
        matching = sorted((s for s in self.servers.values() if s.gpu_model_key == gpu_model), key=lambda s: s.key)
        if not matching:
            raise MissingKnowledge(f"no server SKU with gpu_model '{gpu_model}' in the knowledge base")
        return matching[0]
