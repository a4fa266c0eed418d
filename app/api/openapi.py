"""What the OpenAPI document must say that Litestar's schema generation leaves out, added once per app."""

from __future__ import annotations

from typing import Any

from litestar.openapi.spec import OpenAPI, OpenAPIMediaType, OpenAPIType, Operation, Schema
from pydantic import BaseModel

_CONSTRAINTS = {
    "pattern": "pattern",
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum",
    "minLength": "min_length",
    "maxLength": "max_length",
}
_COMBINATORS = {"anyOf": "any_of", "oneOf": "one_of", "allOf": "all_of"}
#: operationId -> media types its 200 answer may also come in (negotiated with Accept)
ALTERNATIVE_MEDIA = {"createPriceComparison": {"text/csv": "One row per option and per breakdown line."}}


def _app_models() -> dict[str, type[BaseModel]]:
    """The app's pydantic models (the request bodies), by the name Litestar gives their component schema."""
    found: dict[str, type[BaseModel]] = {}
    stack: list[type[BaseModel]] = list(BaseModel.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("app."):
            found.setdefault(cls.__name__, cls)
    return found


def _schema(d: Any) -> Schema:
    """A JSON Schema fragment (as pydantic's ``json_schema_extra`` holds it) as Litestar's Schema object."""
    kw: dict[str, Any] = {}
    for key, value in dict(d).items():
        if key == "type":
            kw["type"] = OpenAPIType(value)
        elif key == "properties":
            kw["properties"] = {name: _schema(p) for name, p in value.items()}
        elif key in ("anyOf", "oneOf", "allOf"):
            kw[_COMBINATORS[key]] = [_schema(x) for x in value]
        elif key == "not":
            kw["schema_not"] = _schema(value)
        elif key in _CONSTRAINTS:
            kw[_CONSTRAINTS[key]] = value
        elif key in ("required", "enum", "const", "description"):
            kw[key] = value
    return Schema(**kw)


def _document_model(target: Schema, model: type[BaseModel]) -> None:
    if model.model_config.get("extra") == "forbid":
        target.additional_properties = False
    declared: dict[str, Any] = model.model_json_schema().get("properties", {})
    for name, prop in (target.properties or {}).items():
        if not isinstance(prop, Schema) or name not in declared:
            continue
        variants = [declared[name], *declared[name].get("anyOf", [])]
        for key, attr in _CONSTRAINTS.items():
            value = next((v[key] for v in variants if key in v), None)
            if value is not None and getattr(prop, attr) is None:
                setattr(prop, attr, value)
    extra = model.model_config.get("json_schema_extra")
    if isinstance(extra, dict):
        for key, attr in _COMBINATORS.items():
            branches = extra.get(key)
            if isinstance(branches, list):
                setattr(target, attr, [_schema(x) for x in branches])
        if isinstance(extra.get("not"), dict):
            target.schema_not = _schema(extra["not"])


def complete_openapi(openapi: OpenAPI) -> None:
    """Add what the request models check but the generated schemas omit, and the negotiated media types.

    Omitted by Litestar: unknown fields are refused (``extra="forbid"``); some constraints (a ``pattern``,
    a ``minimum`` of 0 on an optional number); a model-level ``json_schema_extra`` with ``anyOf``/``oneOf``/
    ``allOf``/``not`` (how a model states what its validators check, e.g. Weights: not all zero); ``text/csv``.
    """
    schemas = openapi.components.schemas if openapi.components else None
    models = _app_models()
    for name, target in (schemas or {}).items():
        if isinstance(target, Schema) and name in models:
            _document_model(target, models[name])
    for item in (openapi.paths or {}).values():
        for op in (item.get, item.post):
            if not isinstance(op, Operation) or op.operation_id not in ALTERNATIVE_MEDIA or not op.responses:
                continue
            ok = op.responses.get("200")
            content = getattr(ok, "content", None)
            if isinstance(content, dict):
                for media, description in ALTERNATIVE_MEDIA[op.operation_id].items():
                    content[media] = OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING, description=description))
