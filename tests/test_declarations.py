"""Each knowledge entity declared once, the table held to its declaration, and every vocabulary declared once.

A knowledge entity is declared once: its record in ``app/core/records.py``, its fields typed with the
vocabularies of ``app/core/vocab.py`` and stating their bounds (``app.core.entities``). The catalog's read
schema is that record, or that record with its Range spelled out (``app/domain/catalog/schemas.py``); the seed
record is derived from it (``app.kb.seeds.base.seed_of``); the ORM model (``app/kb/models.py``) stays the
table's declaration, and ``test_each_table_is_its_declaration`` holds the two together. The shapes still
written by hand (the API's shapes of the service's own records and of the profile a request makes) are
checked field by field against their declaration, each difference listed with its reason. Every closed
vocabulary is a ``Literal`` of ``app/core/vocab.py``: each shape types an enumerated field with that same
Literal, the database checks it with a CHECK constraint listing its values, and the OpenAPI document's enums
are its values, in its order.
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

from app.core import records, types, vocab
from app.core.entities import declared, stored
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
from app.kb.seeds.base import DerivedSeed

ROOT = Path(__file__).resolve().parent.parent

# ---- reading a declaration's fields and types --------------------------------------------------------


def field_types(cls: type) -> dict[str, Any]:
    """A shape's fields with their types (without their bounds), whatever kind of class it is."""
    if isinstance(cls, type) and issubclass(cls, m.Base):
        hints = typing.get_type_hints(cls)
        columns = [c.key for c in sa.inspect(cls).columns]
        return {n: get_args(hints[n])[0] if get_origin(hints[n]) is Mapped else hints[n] for n in columns}
    if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
        return {name: f.annotation for name, f in cls.model_fields.items()}
    if isinstance(cls, type) and (issubclass(cls, msgspec.Struct) or dataclasses.is_dataclass(cls)):
        return {f.name: f.type for f in declared(cls)}
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


# ---- each knowledge entity declared once --------------------------------------------------------------

#: each table of a knowledge entity, and its declaration (the record)
DECLARED: dict[type[m.Base], type] = {
    m.GpuModel: records.GpuSpec,
    m.ServerSku: records.Server,
    m.Provider: records.Provider,
    m.PriceItem: records.Price,
    m.Region: records.Region,
    m.AvailabilityRule: records.AvailabilityRule,
    m.ExchangeRate: records.ExchangeRate,
    m.DataSecurityLevel: records.DataSecurityLevel,
    m.Assumption: records.Assumption,
    m.ScenarioRule: records.Rule,
}
#: each declared entity's read schema in the catalog that is its record (the data-security levels have none:
#: they are read through the recommendations they shape)
READ = {
    records.GpuSpec: api.GpuRead,
    records.Server: api.ServerRead,
    records.Provider: api.ProviderRead,
    records.Region: api.RegionRead,
    records.AvailabilityRule: api.AvailabilityRuleRead,
    records.ExchangeRate: api.ExchangeRateRead,
    records.Rule: api.RuleRead,
    records.Condition: api.ConditionRead,
}
#: how a record's Python type is held in a column
COLUMN_KINDS: dict[str, tuple[type, ...]] = {
    "text": (sa.String, sa.Text),
    "number": (sa.Numeric,),
    "integer": (sa.Integer,),
    "boolean": (sa.Boolean,),
    "date": (sa.Date,),
    "list": (sa.JSON,),
}
#: text columns a record leaves unbounded, with the reason
UNBOUNDED = {
    ("server_skus", "gpu_model_key"): "a key of gpu_models: the seeds refuse one the GPU models lack",
}


def _kind(tp: Any) -> str:
    """What a record's field type is, as a column holds it."""
    inner = [a for a in get_args(tp) if a is not NoneType] if nullable(tp) and tp is not Any else [tp]
    tp = inner[0]
    if get_origin(tp) is Literal or tp is str:
        return "text"
    if get_origin(tp) is tuple:
        return "list"
    return {float: "number", int: "integer", bool: "boolean", records.dt.date: "date"}[tp]


def _longest(f: Any, column: sa.Column[Any]) -> int | None:
    """The longest text the declaration lets a field hold: its ``max_length``, its pattern's longest
    repetition, or its vocabulary's longest value; None when it says nothing."""
    if f.bounds.max_length is not None:
        return int(f.bounds.max_length)
    if f.bounds.pattern is not None:
        return max(int(n) for n in re.findall(r"\{(?:\d+,)?(\d+)\}", f.bounds.pattern))
    if (name := vocabulary(f.type)) is not None:
        return max(len(v) for v in get_args(VOCABULARIES[name]))
    return None


@pytest.mark.parametrize(("model", "record"), DECLARED.items(), ids=[r.__name__ for r in DECLARED.values()])
def test_each_table_is_its_declaration(model: type[m.Base], record: type) -> None:
    """The table has the record's columns (``stored``: a Range as its ends) as its own, in their order, each
    nullable where the record's may be null, of the same kind, holding the vocabulary the record types it
    with, as long and with as many decimals as the record's bounds allow."""
    table = model.__table__
    columns = {c.key: c for c in sa.inspect(model).columns}
    fields = stored(record)
    assert [f.name for f in fields] == list(columns), f"{table.name}: the columns are not {record.__name__}'s"
    hints = field_types(model)
    for f in fields:
        column, where = columns[f.name], f"{table.name}.{f.name}"
        assert column.nullable == nullable(f.type), f"{where}: nullable {column.nullable}, the record says otherwise"
        assert isinstance(column.type, COLUMN_KINDS[_kind(f.type)]), f"{where}: {column.type} holds no {_kind(f.type)}"
        assert vocabulary(hints[f.name]) == vocabulary(f.type), f"{where}: another vocabulary than the record's"
        if isinstance(column.type, sa.String) and column.type.length is not None:
            longest = _longest(f, column)
            if (table.name, f.name) in UNBOUNDED:
                assert longest is None, f"{where} is bounded now: drop it from UNBOUNDED"
            else:
                assert longest is not None and longest <= column.type.length, f"{where}: {longest} > {column.type}"
        if isinstance(column.type, sa.Numeric) and f.bounds.decimal_places is not None:
            assert f.bounds.decimal_places == column.type.scale, f"{where}: the record's decimals are not the scale"


@pytest.mark.parametrize("record", READ, ids=[r.__name__ for r in READ])
def test_the_catalog_shows_each_declared_entity_as_its_record(record: type[msgspec.Struct]) -> None:
    read = READ[record]
    assert issubclass(read, record) and read.__struct_fields__ == record.__struct_fields__


@pytest.mark.parametrize(
    ("read", "record", "dropped"),
    [(api.PriceRead, records.Price, "book"), (api.AssumptionRead, records.Assumption, "id")],
)
def test_the_catalog_shows_a_record_of_a_range_with_the_range_spelled_out(
    read: type[msgspec.Struct], record: type, dropped: str
) -> None:
    """The record's fields, a Range as its ends' columns (as ``app.domain.catalog.service.flat`` fills them)."""
    spelled = [
        c
        for f in declared(record)
        if f.name != dropped
        for c in ([n for n, _ in f.ends.columns()] if f.ends else [f.name])
    ]
    assert list(read.__struct_fields__) == spelled


@pytest.mark.parametrize("section", [s for s, orm in seeds.ORM_MODELS.items() if orm in DECLARED])
def test_each_seed_record_of_a_declared_entity_is_derived_from_it(section: str) -> None:
    """Its fields are the record's (but the surrogate key), each with the record's bounds: what a seed file
    may leave out is all it says otherwise."""
    seed, record = seeds.SEED_MODELS[section], DECLARED[seeds.ORM_MODELS[section]]
    assert issubclass(seed, DerivedSeed)
    fields = [f for f in stored(record) if f.name != "id"]
    assert set(seed.model_fields) == {f.name for f in fields}  # a range's ends first (``_RangeSeed``)
    for f in fields:
        metadata = seed.model_fields[f.name].metadata
        said = {k: v for meta in metadata for k in f.bounds.stated() if (v := getattr(meta, k, None)) is not None}
        assert said == f.bounds.stated(), f"{section}.{f.name}"


# ---- the shapes still written by hand ----------------------------------------------------------------


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
    declared = {e.declaration for e in ENTITIES} | set(DECLARED)
    tables = {mapper.class_ for mapper in m.Base.registry.mappers}
    # stored as answered, read back as it was written; an Idempotency-Key claim only points at one
    assert tables - declared == {sr.Recommendation, sr.IdempotencyKey}


def test_the_seed_loader_covers_every_seeded_table() -> None:
    assert set(seeds.SEED_MODELS) == set(seeds.ORM_MODELS) == set(seeds.NATURAL_KEYS) == set(seeds.SECTIONS)
    by_model = {e.declaration: e for e in ENTITIES}
    for section, orm in seeds.ORM_MODELS.items():
        if orm not in DECLARED:  # a declared entity's seed record is derived (test_each_seed_record_…)
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


@pytest.mark.parametrize("model", [*DECLARED, *(e.declaration for e in ENTITIES if issubclass(e.declaration, m.Base))])
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
