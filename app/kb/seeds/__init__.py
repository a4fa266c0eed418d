"""Seed files: the knowledge base as reviewed YAML, validated with pydantic, applied atomically.

``read_seeds`` validates every file before anything touches the database (``records``: one model
per section; ``files``: reading and cross-record checks); ``plan`` diffs the files against the
database by natural key; ``apply`` writes the plan and records a new knowledge version in the same
transaction — or, when nothing changed, writes nothing at all (``loader``).
Price rows are append-only: a seed may close a price (``valid_to``) or fix its wording, but not
change its figures or drop it; a new price is a new row with a new ``valid_from``.
"""

from app.kb.seeds.base import SeedRecord
from app.kb.seeds.files import read_seeds, seed_files
from app.kb.seeds.loader import (
    APPEND_ONLY,
    ORM_MODELS,
    PRICE_FIGURES,
    Change,
    Plan,
    apply,
    describe,
    plan,
    record_version,
)
from app.kb.seeds.problems import FieldProblem, SeedError, SeedProblem, validation_problems
from app.kb.seeds.records import (
    NATURAL_KEYS,
    SECTIONS,
    SEED_MODELS,
    AssumptionSeed,
    AvailabilityRuleSeed,
    ConditionSeed,
    DataSecurityLevelSeed,
    ExchangeRateSeed,
    GpuModelSeed,
    PriceSeed,
    ProviderSeed,
    RuleSeed,
    SeedSet,
    ServerSeed,
    canonical,
    natural_key,
)
from app.kb.seeds.region_records import RegionSeed

__all__ = [
    "APPEND_ONLY",
    "NATURAL_KEYS",
    "ORM_MODELS",
    "PRICE_FIGURES",
    "SECTIONS",
    "SEED_MODELS",
    "AssumptionSeed",
    "AvailabilityRuleSeed",
    "Change",
    "ConditionSeed",
    "DataSecurityLevelSeed",
    "ExchangeRateSeed",
    "FieldProblem",
    "GpuModelSeed",
    "Plan",
    "PriceSeed",
    "ProviderSeed",
    "RegionSeed",
    "RuleSeed",
    "SeedError",
    "SeedProblem",
    "SeedRecord",
    "SeedSet",
    "ServerSeed",
    "apply",
    "canonical",
    "describe",
    "natural_key",
    "plan",
    "read_seeds",
    "record_version",
    "seed_files",
    "validation_problems",
]
