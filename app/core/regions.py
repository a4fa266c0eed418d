"""The region hierarchy of a knowledge snapshot (docs/methodology.md "Regions"): every region a price row
names lies on a chain of parents ending at ``global`` (a provider region in its country, a country on
its continent); filters match a region and every region under it, components are looked up along the
chain, and a buyer names a jurisdiction among the countries.

A bloc (the EU/EEA) is a region of its own kind beside the chains: it lies in ``global`` and lists its
member countries, each of which keeps its one parent (its continent). A filter of a bloc matches every
region of its members; a jurisdiction's data may sit in the buyer's country or any bloc it belongs to
(``keeps_data_in``). A bloc is never on a chain, so never a fallback of a component's price.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.core.errors import MissingKnowledge
from app.core.records import ANY, Region
from app.core.vocab import GLOBAL


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
        (``us-east-1`` is within ``US``, ``north_america`` and ``global``), or is a bloc one of whose
        members is (``eu-frankfurt-1`` is within ``eea``); a ``global`` row, or one tied to no region
        (``*``), matches every filter, and a filter of ``*`` matches every row."""
        if region in (GLOBAL, ANY) or filter_region == ANY:
            return True
        chain = self.region_chain(region)
        if filter_region in chain:
            return True
        bloc = self.regions.get(filter_region)
        return bloc is not None and bloc.members is not None and not set(bloc.members).isdisjoint(chain)

    # ---- where data may sit ---------------------------------------------------------------------

    def country_of(self, region: str) -> str | None:
        """The country a region lies in (itself, for a country): None for ``global``, ``*``, a continent, a
        bloc or a region the hierarchy lacks — a place no single jurisdiction holds."""
        found: dict[str, str | None] | None = self._memo.get("country_of")
        if found is None:
            found = {
                key: next((k for k in chain if self.regions[k].kind == "country"), None)
                for key, chain in self._chains.items()
            }
            self._memo_put("country_of", found)
        return found.get(region)

    def blocs_of(self, country: str) -> tuple[str, ...]:
        """The blocs ``country`` belongs to (``("eea",)`` for Germany), in key order."""
        found: dict[str, tuple[str, ...]] | None = self._memo.get("blocs_of")
        if found is None:
            members: dict[str, list[str]] = {}
            for key in sorted(self.regions):
                for member in self.regions[key].members or ():
                    members.setdefault(member, []).append(key)
            found = {k: tuple(v) for k, v in members.items()}
            self._memo_put("blocs_of", found)
        return found.get(country, ())

    def keeps_data_in(self, region: str, country: str) -> bool:
        """Whether hardware in ``region`` keeps data in ``country``'s jurisdiction: in the country itself, or
        in another member of a bloc it belongs to. A region tied to no country (``global``, ``*``) does not:
        nothing says where its data sits."""
        place = self.country_of(region)
        if place is None:
            return False
        return place == country or any(place in (self.regions[b].members or ()) for b in self.blocs_of(country))

    def nearness(self, region: str, country: str | None) -> int:
        """How near ``region`` lies to a buyer in ``country``, for choosing among the regions one price holds
        in: 0 in the country, 1 in one of its blocs, 2 on its continent, 3 elsewhere (3 without a buyer)."""
        if country is None or country not in self._chains:
            return 3
        place = self.country_of(region)
        if place == country:
            return 0
        if place is not None and self.keeps_data_in(region, country):
            return 1
        continent = self._chains[country][1:2]
        return 2 if continent and continent[0] in self._chains.get(region, ()) else 3

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
