"""The region hierarchy of a knowledge snapshot (docs/methodology.md "Regions"): every region a price row
names lies on a chain of parents ending at ``global`` (a provider region in its country, a country on
its continent); filters match a region and every region under it, components are looked up along the
chain, and a buyer names a jurisdiction among the countries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.sdk.errors import MissingKnowledge
from app.sdk.records import ANY, Region
from app.sdk.vocab import GLOBAL


class RegionHierarchy:
    """What ``Knowledge`` answers about regions (a base of it: it holds ``regions`` and their chains)."""

    __slots__ = ()
    regions: Mapping[str, Region]
    _chains: Mapping[str, tuple[str, ...]]
    _memo: dict[Any, Any]

    def _memo_put(self, key: Any, value: Any) -> None:
        raise NotImplementedError

    @property
    def countries(self) -> frozenset[str]:
        """The jurisdictions a buyer may name: the countries of the region hierarchy (ISO 3166-1 alpha-2)."""
        found: frozenset[str] | None = self._memo.get("countries")
        if found is None:
            found = frozenset(key for key, r in self.regions.items() if r.kind == "country")
            self._memo_put("countries", found)
        return found

    # ---- the region hierarchy ------------------------------------------------------------------

    def region_chain(self, key: str) -> tuple[str, ...]:
        """``key``, its parent, its parent's parent … ``global``. Raises MissingKnowledge for a region
        the hierarchy does not hold."""
        found = self._chains.get(key)
        if found is None:
            raise MissingKnowledge(f"unknown region '{key}' (not in the region hierarchy)")
        return found

    def within(self, region: str, filter_region: str) -> bool:
        """Whether a row of ``region`` lies inside ``filter_region``: the filter is on the row's chain
        (``us-east-1`` is within ``US``, ``north_america`` and ``global``); a ``global`` row, or one tied
        to no region (``*``), matches every filter, and a filter of ``*`` matches every row."""
        if region in (GLOBAL, ANY) or filter_region == ANY:
            return True
        return filter_region in self.region_chain(region)

    def region_search(self, region: str) -> list[str]:
        """Where a regional price may come from, nearest first: the region's chain in the hierarchy, then
        rows tied to no region (``*``); a region the hierarchy lacks falls back to its country code and
        ``global``."""
        chain = self._chains.get(region)
        if chain is None:
            return _regions(region)
        return [*chain, ANY]


def chains(regions: Mapping[str, Region]) -> dict[str, tuple[str, ...]]:
    """Each region's chain: itself, its parent … ``global``."""
    return {key: _chain(regions, key) for key in regions}


def _chain(regions: Mapping[str, Region], key: str) -> tuple[str, ...]:
    """``key`` and its ancestors up to the root; a cycle or an unknown parent is refused (the seed loader
    refuses both first, naming the record)."""
    chain = [key]
    parent = regions[key].parent
    while parent is not None:
        if parent in chain or parent not in regions:
            shown = " → ".join([*chain, parent])
            raise ValueError(f"region '{key}': its chain of parents {shown} does not end at global")
        chain.append(parent)
        parent = regions[parent].parent
    if chain[-1] != GLOBAL:
        raise ValueError(f"region '{key}': its chain of parents {' → '.join(chain)} does not end at global")
    return tuple(chain)


def _regions(region: str) -> list[str]:
    """Where a regional price may come from, nearest first."""
    chain = [region]
    country = region.split("-", 1)[0].upper()  # "US-TX" and "us-east-1" are in the US
    if len(country) == 2 and country != region:
        chain.append(country)
    chain += [r for r in ("global", ANY) if r not in chain]
    return chain
