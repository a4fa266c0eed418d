"""The read-only knowledge snapshot that option plugins compute from.

Built once per knowledge version from SQL (``app.kb.snapshot``) and shared by every request.
Plain frozen values: the decision core and the plugins never touch the database.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from app.core.errors import MissingKnowledge
from app.core.ranges import Range

ANY = "*"


class SourceRef(NamedTuple):
    """Which knowledge row a figure came from, and that row's own source."""

    table: str
    ref: str
    source: str
    quality: str


@dataclass(frozen=True, slots=True)
class GpuSpec:
    key: str
    vendor: str
    name: str
    memory_gb: float
    memory_bandwidth_gbps: float | None
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None
    interconnect: str
    interconnect_gbps: float | None
    tdp_w: int | None
    source: str
    source_quality: str
    notes: str | None


@dataclass(frozen=True, slots=True)
class Server:
    key: str
    name: str
    gpu_model_key: str | None
    gpus_per_server: int
    power_kw: float | None
    reference: bool
    source: str
    source_quality: str
    notes: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("server_skus", self.key, self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Price:
    id: int
    option: str
    provider: str
    item: str
    subject: str
    unit: str
    value: Range
    currency: str
    region: str
    valid_from: dt.date
    valid_to: dt.date | None
    source: str
    source_quality: str
    notes: str | None

    def valid_on(self, day: dt.date) -> bool:
        return self.valid_from <= day and (self.valid_to is None or day < self.valid_to)

    @property
    def ref(self) -> SourceRef:
        return SourceRef("price_items", str(self.id), self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Assumption:
    id: int
    option: str
    key: str
    unit: str
    value: Range
    source: str
    source_quality: str
    rationale: str | None

    @property
    def ref(self) -> SourceRef:
        return SourceRef("assumptions", f"{self.option}/{self.key}", self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: str
    value: Any


@dataclass(frozen=True, slots=True)
class Rule:
    key: str
    option: str
    description: str
    match: str
    conditions: tuple[Condition, ...]
    effect: str
    points: float | None
    reason: str
    rationale: str
    source: str
    source_quality: str

    @property
    def ref(self) -> SourceRef:
        return SourceRef("scenario_rules", self.key, self.source, self.source_quality)


@dataclass(frozen=True, slots=True)
class Knowledge:
    """One knowledge version, in memory. Lookups raise :class:`MissingKnowledge` naming the gap."""

    version: str
    created_at: dt.datetime
    gpus: Mapping[str, GpuSpec]
    servers: Mapping[str, Server]
    prices: tuple[Price, ...]
    assumptions: Mapping[tuple[str, str], Assumption]
    rules: tuple[Rule, ...]
    _price_index: Mapping[tuple[str, str, str, str], tuple[Price, ...]] = field(init=False, repr=False)
    #: values derived from this snapshot alone (e.g. Monte Carlo samples), kept while it is served
    derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[tuple[str, str, str, str], list[Price]] = {}
        for p in self.prices:
            index.setdefault((p.option, p.item, p.subject, p.currency), []).append(p)
        object.__setattr__(self, "_price_index", {k: tuple(v) for k, v in index.items()})

    @property
    def currencies(self) -> frozenset[str]:
        return frozenset(p.currency for p in self.prices)

    def assumption(self, option: str, key: str) -> Assumption:
        """The option's own value of ``key``, else the general (``*``) one."""
        found = self.assumptions.get((option, key)) or self.assumptions.get((ANY, key))
        if found is None:
            raise MissingKnowledge(f"no assumption '{key}' for option '{option}' (nor a general one)")
        return found

    def price(self, option: str, item: str, *, unit: str, currency: str, as_of: dt.date, subject: str = ANY) -> Price:
        """The price of ``item`` in ``unit`` valid on ``as_of``; a subject's own row wins over a general one."""
        found = self.find_price(option, item, currency=currency, as_of=as_of, subject=subject)
        if found is None:
            raise MissingKnowledge(
                f"no price '{item}' for option '{option}' (subject '{subject}') in {currency} valid on {as_of}"
            )
        if found.unit != unit:
            raise MissingKnowledge(f"price row {found.id} '{item}' is {found.unit}, expected {unit}")
        return found

    def find_price(self, option: str, item: str, *, currency: str, as_of: dt.date, subject: str = ANY) -> Price | None:
        for subj in (subject, ANY) if subject != ANY else (ANY,):
            for p in self._price_index.get((option, item, subj, currency), ()):
                if p.valid_on(as_of):
                    return p
        return None

    def server_for(self, gpu_model: str | None) -> Server:
        """The server SKU a profile runs on: the reference server, or the first of ``gpu_model``."""
        if gpu_model is None:
            refs = [s for s in self.servers.values() if s.reference]
            if not refs:
                raise MissingKnowledge("no reference server in the knowledge base")
            return sorted(refs, key=lambda s: s.key)[0]
        if gpu_model not in self.gpus:
            raise MissingKnowledge(f"unknown gpu_model '{gpu_model}'")
        matching = sorted((s for s in self.servers.values() if s.gpu_model_key == gpu_model), key=lambda s: s.key)
        if not matching:
            raise MissingKnowledge(f"no server SKU with gpu_model '{gpu_model}' in the knowledge base")
        return matching[0]
