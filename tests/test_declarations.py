"""One declaration per entity and per vocabulary, and a test that fails when the shapes drift.

An entity lives in up to four shapes: the ORM model (``app/kb/models.py``, the declaration: the table),
the seed record that validates it (``app/kb/seeds/records.py``), the snapshot object the core and
the plugins compute from (``app/core/records.py``, built field by field by name in
``app/kb/snapshot.py``) and the API struct that shows it (``app/domain/*/schemas.py``). Each shape
has the table's columns, but for the differences listed here, each with its reason. Every closed
vocabulary is a ``Literal`` of ``app/core/vocab.py``: each shape types an enumerated field with that
same Literal, the database checks it with a CHECK constraint listing its values, and the OpenAPI
document's enums are its values, in its order.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, get_args, get_origin

import msgspec
import pydantic
import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Mapped

from app.core import knowledge as k
from app.core import types, vocab
from app.domain.audit import schemas as audit_api
from app.domain.capacity import schemas as capacity_api
from app.domain.catalog import schemas as api
from app.domain.decisions import schemas as decisions_api
from app.domain.health import schemas as health_api
from app.domain.insights import schemas as insights_api
from app.domain.planning import schemas as planning_api
from app.domain.procurement import drift_schemas as drift_api
from app.domain.procurement import price_schemas as prices_api
from app.domain.procurement import watch_schemas as watches_api
from app.domain.shared import demand as demand_api
from app.domain.shared import schemas as shared_api
from app.engine import rules, scoring
from app.kb import models as m
from app.kb import seeds
from app.kb import service_records as sr

ROOT = Path(__file__).resolve().parent.parent

# ---- the shapes of one entity --------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """One shape of an entity, and how it deliberately differs from the entity's declaration.

    ``lacks`` and ``adds`` name fields (each with its reason) the shape does not have or has beyond
    the declaration; ``nullable`` names fields whose nullability differs (with its reason)."""

    cls: type
    lacks: dict[str, str] = field(default_factory=dict)
    adds: dict[str, str] = field(default_factory=dict)
    nullable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Entity:
    name: str
    #: the declaration: an ORM model (the table), or for a value without a table its core type
    declaration: type
    shapes: tuple[Shape, ...]


RANGE = {"low": "one Range, ``value``", "expected": "one Range, ``value``", "high": "one Range, ``value``"}
VALUE = {"value": "the low/expected/high columns as one Range (app.kb.snapshot._range)"}
ID_NOT_IN_SEEDS = {"id": "a surrogate key the database assigns; a seed names a row by its natural key"}
MODE = {"mode": "the stored expected column, the source's most-likely figure; expected is the triangular mean"}
MIDPOINT = {"expected": "never null once read: the snapshot fills a missing expected with the midpoint"}

#: a demand over time (app.domain.shared.demand): the core's profile is its peak phase's
DEMAND = {"demand": "phases or the growth shorthand, instead of gpus and utilization (their peak is the profile's)"}
#: the options' own fields: an object a request may leave out (its defaults), pairs in the profile
OPTION_FIELDS = {"option_fields": "optional in a request: each field's default; the profile holds the values"}
PLAIN_OR_DEMAND = {
    "gpus": "absent with a demand (exactly one of gpus or demand)",
    "utilization": "absent with a demand of phases",
}

ENTITIES = (
    Entity(
        "gpu models",
        m.GpuModel,
        (Shape(seeds.GpuModelSeed), Shape(k.GpuSpec), Shape(api.GpuRead)),
    ),
    Entity(
        "servers",
        m.ServerSku,
        (Shape(seeds.ServerSeed), Shape(k.Server), Shape(api.ServerRead)),
    ),
    Entity(
        "providers",
        m.Provider,
        (Shape(seeds.ProviderSeed), Shape(k.Provider), Shape(api.ProviderRead)),
    ),
    Entity(
        "prices",
        m.PriceItem,
        (
            Shape(
                seeds.PriceSeed,
                lacks=ID_NOT_IN_SEEDS,
                nullable={"region": "null on a row that lists its regions: one row per region once loaded"},
            ),
            Shape(
                k.Price,
                lacks={
                    **RANGE,
                    "lead_time_days_low": "one Range, ``lead_time_days``",
                    "lead_time_days_high": "one Range, ``lead_time_days``",
                },
                adds={
                    **VALUE,
                    **MODE,
                    "lead_time_days": "lead_time_days_low/_high as one Range, None without them",
                    "book": "which book the row is of: the list (price_items) or an organisation's (org_prices)",
                },
            ),
            # the API spells the ranges out as columns again (app.domain.catalog.service.flat)
            Shape(api.PriceRead, nullable=MIDPOINT, adds=MODE),
        ),
    ),
    Entity(
        "regions",
        m.Region,
        (Shape(seeds.RegionSeed), Shape(k.Region), Shape(api.RegionRead)),
    ),
    Entity(
        "availability rules",
        m.AvailabilityRule,
        (
            Shape(seeds.AvailabilityRuleSeed, lacks=ID_NOT_IN_SEEDS),
            Shape(k.AvailabilityRule),
            Shape(api.AvailabilityRuleRead),
        ),
    ),
    Entity(
        "exchange rates",
        m.ExchangeRate,
        (Shape(seeds.ExchangeRateSeed, lacks=ID_NOT_IN_SEEDS), Shape(k.ExchangeRate), Shape(api.ExchangeRateRead)),
    ),
    Entity(
        # no API struct: the levels are read through the recommendations they shape
        "data-security levels",
        m.DataSecurityLevel,
        (Shape(seeds.DataSecurityLevelSeed), Shape(k.DataSecurityLevel)),
    ),
    Entity(
        "assumptions",
        m.Assumption,
        (
            Shape(seeds.AssumptionSeed, lacks=ID_NOT_IN_SEEDS),
            Shape(k.Assumption, lacks=RANGE, adds={**VALUE, **MODE}),
            Shape(
                api.AssumptionRead,
                lacks={"id": "an assumption is named by option/key (how sources cite it: assumptions:<option>/<key>)"},
                adds=MODE,
                nullable=MIDPOINT,
            ),
        ),
    ),
    Entity(
        "rules",
        m.ScenarioRule,
        (Shape(seeds.RuleSeed), Shape(k.Rule), Shape(api.RuleRead)),
    ),
    Entity(
        # the JSON objects of a rule's ``conditions`` column: the snapshot's Condition declares them
        "rule conditions",
        k.Condition,
        (Shape(seeds.ConditionSeed), Shape(api.ConditionRead)),
    ),
    Entity(
        "knowledge versions",
        m.KnowledgeVersion,
        (
            Shape(
                api.KnowledgeVersionRead,
                lacks={"id": "shown within ``version``, the public label kv<id>-<hash>"},
                adds={"version": "the public label of id and content hash (KnowledgeVersion.label)"},
            ),
        ),
    ),
    Entity("audit events", sr.AuditEvent, (Shape(audit_api.AuditEventRead),)),
    Entity(
        # no API struct: keys are managed with the CLI, which prints the row's columns
        "api keys",
        sr.ApiKey,
        (),
    ),
    Entity(
        # no API struct: organisations are managed with the CLI, which prints the row's columns
        "organisations",
        sr.Organisation,
        (),
    ),
    Entity(
        "private prices",
        sr.OrgPrice,
        (
            Shape(
                prices_api.PrivatePriceRead,
                lacks={"org": "the key's organisation, said once by the list (PrivatePriceList.org)"},
                adds={"in_force": "whether it prices the organisation's answers today (valid and not closed)"},
            ),
        ),
    ),
    Entity(
        "watches",
        sr.Watch,
        (
            Shape(
                watches_api.WatchRead,
                lacks={
                    "secret": "kept to sign the events, never answered back",
                    "api_key_id": "who made it: the audit trail says it (watch.create)",
                    "deleted_at": "a deleted watch is not answered: 404",
                },
            ),
        ),
    ),
    Entity(
        "watch deliveries",
        sr.WatchDelivery,
        (
            Shape(
                watches_api.DeliveryRead,
                lacks={
                    "watch_id": "read through its watch: GET /v1/watches/{id}/deliveries",
                    "body": "the event as sent: the receiver has it; its drift is GET …/drift",
                    "claimed_by": "which process sends it now: the service's own bookkeeping",
                    "claimed_until": "the claim's lease: the service's own bookkeeping",
                },
            ),
        ),
    ),
    Entity(
        "profiles",
        types.Profile,
        (
            Shape(
                shared_api.ProfileCreate,
                adds={"weights": "how to rank, not what the team needs: the scoring's input, not the profile's"},
                nullable={"as_of": "optional in a request: the service fills in today", **OPTION_FIELDS},
            ),
            Shape(
                demand_api.ComparisonCreate,
                adds=DEMAND,
                nullable={
                    "as_of": "optional in a request: the service fills in today",
                    **PLAIN_OR_DEMAND,
                    **OPTION_FIELDS,
                },
            ),
            Shape(
                demand_api.RecommendationCreate,
                adds={**DEMAND, "weights": "how to rank, not what the team needs: the scoring's input"},
                nullable={
                    "as_of": "optional in a request: the service fills in today",
                    **PLAIN_OR_DEMAND,
                    **OPTION_FIELDS,
                },
            ),
            Shape(
                capacity_api.CapacityPlanCreate,
                adds={
                    **DEMAND,
                    "weights": "how to rank portfolios' options",
                    "owned": "GPUs already held",
                    "gpu_models": "GPU models to answer the plan on as well",
                },
                nullable={
                    "as_of": "optional in a request: the service fills in today",
                    **PLAIN_OR_DEMAND,
                    **OPTION_FIELDS,
                },
            ),
        ),
    ),
)

#: vocabulary-typed columns the database does not CHECK, with the reason
UNCHECKED_COLUMNS = {
    ("data_security_levels", "accepted_residencies"): "a JSON array: the seed record validates each element",
    ("api_keys", "scopes"): "a JSON array: app.kb.keys.check_scopes validates each element",
    ("audit_events", "action"): "app.kb.audit.record refuses any other action; a CHECK would need a migration",
}
#: enums of the OpenAPI document that are no vocabulary (a choice local to one request or answer)
LOCAL_ENUMS = {
    ("EvaluationCreate", "detail"): "how much of each evaluation to return",
    ("HealthRead", "status"): "the health check's own answer",
    ("OfferGoneRead", "why"): "why one offer of a drift is gone (app.domain.procurement.drift)",
}
#: words a local Literal shares with a vocabulary by coincidence (another concept), with the reason
HOMONYMS = {
    ("app/domain/health/schemas.py", "unavailable"): "the readiness check's status, not an availability rule's effect",
    ("app/domain/procurement/drift_schemas.py", "infeasible"): "why an offer is gone from a drift, not a rule's effect",
}
API_MODULES = (
    api,
    audit_api,
    capacity_api,
    decisions_api,
    demand_api,
    health_api,
    insights_api,
    planning_api,
    shared_api,
    drift_api,
    prices_api,
    watches_api,
)

# ---- reading a shape's fields and types ----------------------------------------------------------


def field_types(cls: type) -> dict[str, Any]:
    """A shape's fields with their types, whatever kind of class it is."""
    if isinstance(cls, type) and issubclass(cls, m.Base):
        hints = typing.get_type_hints(cls)
        columns = [c.key for c in sa.inspect(cls).columns]
        return {n: get_args(hints[n])[0] if get_origin(hints[n]) is Mapped else hints[n] for n in columns}
    if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
        return {name: f.annotation for name, f in cls.model_fields.items()}
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return {f.name: f.type for f in msgspec.structs.fields(cls)}
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        return {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    raise TypeError(f"not a shape: {cls}")


def nullable(tp: Any) -> bool:
    return tp is Any or (get_origin(tp) in (typing.Union, UnionType) and NoneType in get_args(tp))


VOCABULARIES = {name: obj for name, obj in vars(vocab).items() if get_origin(obj) is Literal}


def vocabulary(tp: Any) -> str | None:
    """The name of the vocabulary Literal ``tp`` is (or holds: optional, list, tuple), else None."""
    if get_origin(tp) is Literal:
        return next((name for name, v in VOCABULARIES.items() if v == tp), "<a Literal of no vocabulary>")
    found = {vocabulary(a) for a in get_args(tp) if a is not NoneType and a is not Ellipsis} - {None}
    return found.pop() if len(found) == 1 else None


def shape_id(entity: Entity, shape: Shape) -> str:
    return f"{entity.name}: {shape.cls.__module__}.{shape.cls.__qualname__}"


def pairs() -> Iterator[tuple[Entity, Shape]]:
    for entity in ENTITIES:
        for shape in entity.shapes:
            yield entity, shape


PAIRS = list(pairs())
IDS = [shape_id(e, s) for e, s in PAIRS]

# ---- field sets ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("entity", "shape"), PAIRS, ids=IDS)
def test_each_shape_has_the_declared_fields(entity: Entity, shape: Shape) -> None:
    declared, own = set(field_types(entity.declaration)), set(field_types(shape.cls))
    # the exceptions themselves must be current: a stale one would hide a drift
    assert set(shape.lacks) <= declared, f"lacks names no declared field: {set(shape.lacks) - declared}"
    assert not set(shape.adds) & declared, f"adds declared fields: {set(shape.adds) & declared}"
    expected = (declared - set(shape.lacks)) | set(shape.adds)
    assert own == expected, (
        f"{shape_id(entity, shape)} drifted from {entity.declaration.__name__}: "
        f"missing {sorted(expected - own)}, not declared {sorted(own - expected)}"
    )


@pytest.mark.parametrize(("entity", "shape"), PAIRS, ids=IDS)
def test_each_shape_agrees_on_what_may_be_null(entity: Entity, shape: Shape) -> None:
    declared, own = field_types(entity.declaration), field_types(shape.cls)
    assert set(shape.nullable) <= set(declared) & set(own)
    differ = {
        name
        for name in set(declared) & set(own)
        if name not in shape.nullable and nullable(declared[name]) != nullable(own[name])
    }
    assert not differ, f"{shape_id(entity, shape)}: nullability differs from the declaration for {sorted(differ)}"
    stale = {name for name in shape.nullable if nullable(declared[name]) == nullable(own[name])}
    assert not stale, f"{shape_id(entity, shape)}: listed as differing but agreeing: {sorted(stale)}"


def test_every_table_of_the_knowledge_base_is_an_entity_here() -> None:
    declared = {e.declaration for e in ENTITIES}
    tables = {mapper.class_ for mapper in m.Base.registry.mappers}
    # stored as answered, read back as it was written; an Idempotency-Key claim only points at one
    assert tables - declared == {sr.Recommendation, sr.IdempotencyKey}


def test_the_seed_loader_covers_every_seeded_table() -> None:
    assert set(seeds.SEED_MODELS) == set(seeds.ORM_MODELS) == set(seeds.NATURAL_KEYS) == set(seeds.SECTIONS)
    by_model = {e.declaration: e for e in ENTITIES}
    for section, orm in seeds.ORM_MODELS.items():
        assert seeds.SEED_MODELS[section] in {s.cls for s in by_model[orm].shapes}, section


@pytest.mark.parametrize("section", seeds.SECTIONS)
def test_natural_keys_are_the_tables_keys(section: str) -> None:
    """The loader's natural key of a section is the table's primary key or one of its unique constraints."""
    table = seeds.ORM_MODELS[section].__table__
    keys = [tuple(c.name for c in table.primary_key.columns)]
    keys += [tuple(c.name for c in u.columns) for u in table.constraints if isinstance(u, sa.UniqueConstraint)]
    assert seeds.NATURAL_KEYS[section] in keys


# ---- vocabularies ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("entity", "shape"), PAIRS, ids=IDS)
def test_each_shape_types_an_enumerated_field_with_the_declared_vocabulary(entity: Entity, shape: Shape) -> None:
    declared, own = field_types(entity.declaration), field_types(shape.cls)
    differ = {
        name: (vocabulary(declared[name]), vocabulary(own[name]))
        for name in set(declared) & set(own)
        if vocabulary(declared[name]) != vocabulary(own[name])
    }
    assert not differ, f"{shape_id(entity, shape)}: (declared, this shape's) vocabulary differ: {differ}"


def _checked_values(table: sa.Table, column: str) -> list[str] | None:
    """The values a CHECK constraint of ``table`` allows ``column``, if one lists them."""
    for c in table.constraints:
        if not isinstance(c, sa.CheckConstraint):
            continue
        text = str(c.sqltext)
        found = re.search(rf"\b{column} IN \(([^)]*)\)", text) or re.fullmatch(rf"{column} = ('[^']*')", text)
        if found:
            return re.findall(r"'([^']*)'", found.group(1))
    return None


@pytest.mark.parametrize("model", [e.declaration for e in ENTITIES if issubclass(e.declaration, m.Base)])
def test_the_database_checks_each_vocabulary_column_with_its_values(model: type[m.Base]) -> None:
    table = model.__table__
    for name, tp in field_types(model).items():
        vocab_name = vocabulary(tp)
        checked = _checked_values(table, name)  # type: ignore[arg-type]
        if vocab_name is None:
            assert checked is None, f"{table.name}.{name} is CHECKed against a list but typed with no vocabulary"
        elif (table.name, name) in UNCHECKED_COLUMNS:
            assert checked is None
        else:
            assert checked == list(get_args(VOCABULARIES[vocab_name])), f"{table.name}.{name} vs vocab.{vocab_name}"


def test_no_two_vocabularies_are_the_same() -> None:
    values = [tuple(get_args(v)) for v in VOCABULARIES.values()]
    assert len(set(values)) == len(values)


def test_the_tuples_of_vocab_are_its_literals() -> None:
    tuples = {
        "DIMENSIONS": "Dimension",
        "OPS_TEAMS": "OpsTeam",
        "DATA_SECURITY_LEVELS": "DataSecurity",
        "INTERCONNECTS": "Interconnect",
        "BILLINGS": "Billing",
        "REGION_KINDS": "RegionKind",
        "DATA_LOCATIONS": "DataLocation",
        "AVAILABILITY_SCOPES": "AvailabilityScope",
        "AVAILABILITY_KINDS": "AvailabilityKind",
        "AVAILABILITY_EFFECTS": "AvailabilityEffect",
        "RESIDENCIES": "Residency",
        "PROVIDER_KINDS": "ProviderKind",
        "CURRENCIES": "Currency",
        "LANGUAGES": "Language",
        "FIELD_KINDS": "FieldKind",
        "SOURCE_QUALITIES": "SourceQuality",
        "PRICE_UNITS": "PriceUnit",
        "ASSUMPTION_UNITS": "AssumptionUnit",
        "RULE_EFFECTS": "RuleEffect",
        "RULE_MATCHES": "RuleMatch",
        "RULE_OPERATORS": "RuleOperator",
        "AUDIT_ACTIONS": "AuditAction",
        "SCOPES": "Scope",
        "PRECISIONS": "Precision",
        "PRICE_BOOKS": "PriceBook",
        "DELIVERY_STATUSES": "DeliveryStatus",
    }
    for name, literal in tuples.items():
        assert tuple(getattr(vocab, name)) == get_args(VOCABULARIES[literal]), name
    assert get_args(vocab.Pivot) == (vocab.PIVOT,)
    # every vocabulary has its tuple here, so none is added without one
    assert set(tuples.values()) | {"Pivot"} == set(VOCABULARIES)


def test_mappings_over_a_vocabulary_cover_it() -> None:
    """Mappings keyed by a vocabulary's values (what each operator does, each dimension's score and
    weight) have every value, and only those."""
    assert tuple(rules.OPERATORS) == vocab.RULE_OPERATORS
    scores = scoring.dimension_scores(per_hour=1.0, cheapest=1.0, productive=1.0, goodput=1.0, focus=1.0)
    assert tuple(scores) == vocab.DIMENSIONS
    assert tuple(shared_api.Weights.model_fields) == vocab.DIMENSIONS
    assert tuple(f.name for f in msgspec.structs.fields(shared_api.DimensionScores)) == vocab.DIMENSIONS


# ---- the OpenAPI document --------------------------------------------------------------------------


_COMPONENTS: dict[str, Any] = json.loads((ROOT / "openapi" / "v1.json").read_text(encoding="utf-8"))["components"][
    "schemas"
]


def _enum(prop: dict[str, Any]) -> list[Any] | None:
    """The values a property of the document allows, if it lists them (enum, const, or in a oneOf or
    allOf, or in the shared component a ``$ref`` names)."""
    if "$ref" in prop:
        return _enum(_COMPONENTS[prop["$ref"].rsplit("/", 1)[-1]])
    if "enum" in prop:
        return [v for v in prop["enum"] if v is not None]
    if "const" in prop:
        return [prop["const"]]
    for key in ("items", "additionalProperties"):
        if isinstance(prop.get(key), dict) and (found := _enum(prop[key])) is not None:
            return found
    for key in ("oneOf", "anyOf", "allOf"):
        for option in prop.get(key, ()):
            if (found := _enum(option)) is not None:
                return found
    return None


def _api_types() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in API_MODULES:
        for name, obj in vars(module).items():
            api_type = isinstance(obj, type) and issubclass(obj, (pydantic.BaseModel, msgspec.Struct))
            if api_type and obj.__module__ == module.__name__:
                found[name] = obj
    return found


def test_the_openapi_documents_each_vocabulary_with_its_values() -> None:
    doc = json.loads((ROOT / "openapi" / "v1.json").read_text(encoding="utf-8"))
    schemas = doc["components"]["schemas"]
    types_by_name = _api_types()
    documented: set[tuple[str, str]] = set()
    for schema_name, schema in schemas.items():
        for prop_name, prop in schema.get("properties", {}).items():
            values = _enum(prop)
            if values is None:
                continue
            documented.add((schema_name, prop_name))
            if (schema_name, prop_name) in LOCAL_ENUMS:
                continue
            cls = types_by_name.get(schema_name)
            assert cls is not None, f"{schema_name}: no API type of that name"
            vocab_name = vocabulary(field_types(cls)[prop_name])
            assert vocab_name is not None, f"{schema_name}.{prop_name} lists values but is typed with no vocabulary"
            assert values == list(get_args(VOCABULARIES[vocab_name])), f"{schema_name}.{prop_name}"
    # and the other way round: every vocabulary-typed field of a documented type has its enum
    for schema_name in schemas:
        cls = types_by_name.get(schema_name)
        if cls is None:
            continue
        for name, tp in field_types(cls).items():
            if vocabulary(tp) is not None:
                assert (schema_name, name) in documented, f"{schema_name}.{name} has no enum in the document"
    assert set(LOCAL_ENUMS) <= documented


def test_a_parameter_of_the_document_lists_only_a_vocabulary() -> None:
    doc = json.loads((ROOT / "openapi" / "v1.json").read_text(encoding="utf-8"))
    known = [list(get_args(v)) for v in VOCABULARIES.values()]
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            for param in op.get("parameters", ()) if isinstance(op, dict) else ():
                values = _enum(param.get("schema", {}))
                assert values is None or values in known, f"{method.upper()} {path} {param['name']}: {values}"


# ---- no second spelling in the source --------------------------------------------------------------


def _sources() -> Iterator[Path]:
    for folder in ("app", "plugins"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_literal_outside_vocab_spells_a_vocabulary_value() -> None:
    """A ``Literal[...]`` elsewhere that names a vocabulary's value is a second spelling of it."""
    values = {v: name for name, lit in VOCABULARIES.items() for v in get_args(lit)}
    found = []
    for path in _sources():
        if path == ROOT / "app" / "core" / "vocab.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Subscript) and getattr(node.value, "id", getattr(node.value, "attr", "")) == (
                "Literal"
            ):
                for const in ast.walk(node.slice):
                    if not isinstance(const, ast.Constant) or (str(path.relative_to(ROOT)), const.value) in HOMONYMS:
                        continue
                    if const.value in values:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {const.value!r} ({values[const.value]})")
    assert not found, "use the vocabulary of app/core/vocab.py: " + "; ".join(found)


def test_no_sequence_outside_vocab_spells_a_whole_vocabulary() -> None:
    """A tuple, list or set of all of a vocabulary's values, written out, is a second spelling of it."""
    vocabularies = {frozenset(get_args(lit)): name for name, lit in VOCABULARIES.items() if len(get_args(lit)) > 1}
    found = []
    for path in _sources():
        if path == ROOT / "app" / "core" / "vocab.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or not node.elts:
                continue
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                spelled = frozenset(e.value for e in node.elts)  # type: ignore[attr-defined]
                if spelled in vocabularies:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} ({vocabularies[spelled]})")
    assert not found, "use the tuple of app/core/vocab.py: " + "; ".join(found)
