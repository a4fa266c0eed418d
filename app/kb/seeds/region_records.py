"""Seed records of the region hierarchy (``regions``): provider regions, subdivisions, countries, continents,
blocs and ``global``, each key shaped by its kind (docs/price-books.md "Regions")."""

from __future__ import annotations

import re

from pydantic import model_validator

from app.core.records import Region
from app.core.vocab import GLOBAL
from app.kb.seeds.base import DerivedSeed, seed_of
from app.kb.seeds.problems import FieldProblem

#: the key a region of each kind has: ISO 3166-1 alpha-2 countries, ISO 3166-2 subdivisions, lower-case
#: provider regions and continents (``us-east-1``, ``eastus``, ``north_america``)
REGION_KEYS: dict[str, str] = {
    "country": r"^[A-Z]{2}$",
    "subdivision": r"^[A-Z]{2}-[A-Z0-9]{1,3}$",
    "provider_region": r"^[a-z][a-z0-9-]{1,39}$",
    "continent": r"^[a-z][a-z_]{1,39}$",
    "bloc": r"^[a-z][a-z_]{1,39}$",
    "global": rf"^{GLOBAL}$",
}
#: the same, as a person reads it
REGION_KEY_WORDS: dict[str, str] = {
    "country": "two capital letters (ISO 3166-1), e.g. US or CN",
    "subdivision": "a country code, a hyphen and 1 to 3 capital letters or digits (ISO 3166-2), e.g. US-TX or CN-BJ",
    "provider_region": "the provider's code: a lower-case letter, then lower-case letters, digits or hyphens, "
    "e.g. us-east-1 or eastus",
    "continent": "lower-case letters and underscores, e.g. north_america",
    "bloc": "lower-case letters and underscores, e.g. eea",
    "global": GLOBAL,
}


@seed_of(Region)
class RegionSeed(DerivedSeed):
    """A region of the seed files (``regions``): its key shaped by its kind, a parent unless it is global,
    a provider only for a provider region, members only for a bloc (a country keeps its one parent, its
    continent)."""

    @model_validator(mode="after")
    def _shape(self) -> RegionSeed:
        if not re.fullmatch(REGION_KEYS[self.kind], self.key):
            shape = REGION_KEY_WORDS[self.kind]
            raise FieldProblem("key", f"'{self.key}' is not the key of a {self.kind}: a {self.kind}'s key is {shape}")
        if (self.parent is None) != (self.kind == "global"):
            raise FieldProblem("parent", "every region but global has a parent, global has none")
        if self.provider is not None and self.kind != "provider_region":
            raise FieldProblem("provider", "only a provider region belongs to a provider")
        if (self.members is not None) != (self.kind == "bloc"):
            raise FieldProblem("members", "a bloc lists its member countries, no other region has members")
        return self
