"""What the OpenAPI document must say that Litestar's schema generation leaves out, added once per app."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.openapi.spec import (
    OpenAPI,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Reference,
    Schema,
)
from pydantic import BaseModel

from app.core.declarations import ProfileField
from app.web.spreadsheets import XLSX

_CONSTRAINTS = {
    "pattern": "pattern",
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_items",
    "maxItems": "max_items",
}
_COMBINATORS = {"anyOf": "any_of", "oneOf": "one_of", "allOf": "all_of"}
#: operationId -> media types its 200 answer may also come in (negotiated with Accept)
ALTERNATIVE_MEDIA = {
    "getRecommendationDrift": {
        "text/csv": "One row per option: option, stored/now recommended, stored/now rank, stored/now total cost "
        "low/expected/high (columns named with the currency), change, the offers gone and both knowledge versions "
        "(UTF-8 with a BOM, CRLF, an attachment)."
    },
    "comparePrices": {
        "text/csv": "One row per option (record total: NPV, effective cost, the chosen offer's provider, region, "
        "plan and GPU model), per breakdown line and, on a demand, per segment and phase; the request's fields on "
        "every row; money columns named with their currency (UTF-8 with a BOM, CRLF, an attachment).",
        XLSX: "A workbook in the capacity plans' layout: sheets summary, breakdown, (segments, phases), offers, "
        "sources and request; headings in the request's language, money headings with their currency.",
    },
    "evaluateProfiles": {
        XLSX: "A workbook: sheets summary, ranking, reasons (with detail=full) and request (a profile a row)."
    },
    "listOffers": {
        "text/csv": "One row per offer row, the columns of the JSON items (UTF-8 with a BOM, CRLF, an attachment).",
        XLSX: "A workbook: sheets offers and sources.",
    },
    "listPrivatePrices": {
        "text/csv": "One row per private price row: the columns an upload takes first (so the file can be edited and "
        "uploaded again), then id, added_in, closed_in, closed_on, created_at, created_by and in_force (UTF-8 with a "
        "BOM, CRLF, an attachment).",
    },
    "computeCostCurves": {
        "image/svg+xml": "A line chart 640 px wide: expected figure as a line, low–high range as a band, "
        "break-even points marked; words in the language of Accept-Language (en, zh)."
    },
    "computeSensitivity": {
        "image/svg+xml": "A tornado chart 640 px wide of the recommended option's cost per useful GPU-hour; "
        "words in the language of Accept-Language (en, zh)."
    },
    "computeCapacityPlan": {
        "image/svg+xml": "A chart 640 px wide of the GPUs per month of the recommended portfolio, stacked by "
        "segment, demand dashed; words in the language of Accept-Language (en, zh).",
        "text/csv": "One row per portfolio (record total), per segment and per segment and phase (the GPUs it "
        "holds), in the price comparisons' layout; the request's fields on every row (UTF-8 with a BOM, CRLF, an "
        "attachment).",
        XLSX: "A workbook in the price comparisons' layout: sheets summary, breakdown, segments, phases, offers, "
        "sources and request; headings in the request's language, money headings with their currency.",
    },
    "computeTrainingPlan": {
        "image/svg+xml": "A chart 640 px wide of the cost per million tokens against the calendar days to finish, a "
        "mark per GPU model × option with a plan (its low–high ranges as bars; infeasible ones hollow, the "
        "recommended highlighted, the deadline as a line); words in the language of Accept-Language (en, zh).",
        "text/csv": "One row per candidate (GPU model × option, in the answer's order) or, on one GPU model, per "
        "option; the request's fields on every row (UTF-8 with a BOM, CRLF, an attachment).",
        XLSX: "A workbook: sheets candidates, work (throughput per GPU model) and request, or options and request "
        "on one GPU model; headings in the request's language, money headings with their currency.",
    },
}


def answered_media(operation_id: str | None) -> tuple[str, ...] | None:
    """The media types an operation negotiates with ``Accept`` beyond JSON, or ``None`` for a JSON-only one."""
    more = ALTERNATIVE_MEDIA.get(operation_id or "")
    return ("application/json", *more) if more else None


def _header(kind: OpenAPIType, description: str) -> OpenAPIHeader:
    return OpenAPIHeader(schema=Schema(type=kind), description=description)


RATE_LIMIT_HEADERS = {
    "Retry-After": _header(OpenAPIType.INTEGER, "Seconds until the window resets."),
    "RateLimit-Policy": _header(OpenAPIType.STRING, "`<limit>; w=<window seconds>`"),
    "RateLimit-Limit": _header(
        OpenAPIType.INTEGER,
        "Cost units allowed per window (per API key, else per client address); a request costs its work "
        "(README, Rate limits).",
    ),
    "RateLimit-Remaining": _header(OpenAPIType.INTEGER, "Cost units left in the current window."),
    "RateLimit-Reset": _header(OpenAPIType.INTEGER, "Seconds until the window resets."),
}
UNAVAILABLE_HEADERS = {"Retry-After": _header(OpenAPIType.INTEGER, "Seconds after which to try again.")}
KNOWLEDGE_SOURCE_HEADERS = {
    "X-Knowledge-Source": _header(
        OpenAPIType.STRING,
        "Only while the database is unreachable: `cached; version=<knowledge version>; since=<RFC 3339 time of "
        "the last successful read>` — the answer comes from the knowledge snapshot in memory.",
    )
}


def _add_headers(response: object, headers: dict[str, OpenAPIHeader]) -> None:
    if isinstance(response, OpenAPIResponse):
        response.headers = {**(response.headers or {}), **headers}


def document_headers(openapi: OpenAPI) -> None:
    """Rate-limit headers on 429, ``Retry-After`` on 503, ``X-Knowledge-Source`` on the API's successes."""
    for path, item in (openapi.paths or {}).items():
        for op in (item.get, item.post, item.put, item.patch, item.delete):
            if not isinstance(op, Operation) or not op.responses:
                continue
            for code, response in op.responses.items():
                if code == "429":
                    _add_headers(response, RATE_LIMIT_HEADERS)
                elif code == "503":
                    _add_headers(response, UNAVAILABLE_HEADERS)
                elif code.startswith("2") and path.startswith("/v1/"):
                    _add_headers(response, KNOWLEDGE_SOURCE_HEADERS)


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


def _constrain(prop: Schema, variants: list[dict[str, Any]]) -> None:
    """Copy the first of each constraint the variants of a property declare onto its schema."""
    for key, attr in _CONSTRAINTS.items():
        value = next((v[key] for v in variants if key in v), None)
        if value is not None and getattr(prop, attr) is None:
            setattr(prop, attr, value)


def _document_model(target: Schema, model: type[BaseModel]) -> None:
    if model.model_config.get("extra") == "forbid":
        target.additional_properties = False
    declared: dict[str, Any] = model.model_json_schema().get("properties", {})
    for name, prop in (target.properties or {}).items():
        if not isinstance(prop, Schema) or name not in declared:
            continue
        variants = [declared[name], *declared[name].get("anyOf", [])]
        _constrain(prop, variants)
        items = next((v["items"] for v in variants if isinstance(v.get("items"), dict)), None)
        for branch in [prop, *(prop.one_of or []), *(prop.any_of or [])]:
            if items is not None and isinstance(branch, Schema) and isinstance(branch.items, Schema):
                _constrain(branch.items, [items])
    extra = model.model_config.get("json_schema_extra")
    if isinstance(extra, dict):
        for key, attr in _COMBINATORS.items():
            branches = extra.get(key)
            if isinstance(branches, list):
                setattr(target, attr, [_schema(x) for x in branches])
        if isinstance(extra.get("not"), dict):
            target.schema_not = _schema(extra["not"])


def _unwrap_single_variants(target: Schema) -> None:
    """An answer's field that may be absent (``X | UnsetType``) is rendered ``oneOf: [X]``: a one-member
    choice that linters flag and generators wrap; say ``X`` itself (with the field's description)."""
    for name, prop in (target.properties or {}).items():
        if isinstance(prop, Schema) and prop.one_of is not None and len(prop.one_of) == 1:
            (member,) = prop.one_of
            if isinstance(member, Schema) and member.description is None:
                member = dataclasses.replace(member, description=prop.description)
            if isinstance(member, Schema) or prop.description is None:
                target.properties[name] = member  # type: ignore[index]


def complete_openapi(openapi: OpenAPI) -> None:
    """Add what the request models check but the generated schemas omit, and the negotiated media types.

    Omitted by Litestar: unknown fields are refused (``extra="forbid"``); some constraints (a ``pattern``,
    a ``minimum`` of 0 on an optional number); a model-level ``json_schema_extra`` with ``anyOf``/``oneOf``/
    ``allOf``/``not`` (how a model states what its validators check, e.g. Weights: not all zero); ``text/csv``.
    """
    document_headers(openapi)
    schemas = openapi.components.schemas if openapi.components else None
    models = _app_models()
    for name, target in (schemas or {}).items():
        if isinstance(target, Schema) and name in models:
            _document_model(target, models[name])
        if isinstance(target, Schema):
            _unwrap_single_variants(target)
    for item in (openapi.paths or {}).values():
        for op in (item.get, item.post):
            if not isinstance(op, Operation) or op.operation_id not in ALTERNATIVE_MEDIA or not op.responses:
                continue
            ok = op.responses.get("200")
            content = getattr(ok, "content", None)
            if isinstance(content, dict):
                for media, description in ALTERNATIVE_MEDIA[op.operation_id].items():
                    content[media] = OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING, description=description))


#: JSON Schema types of the kinds of profile fields the options declare
_FIELD_TYPES = {
    "number": OpenAPIType.NUMBER,
    "integer": OpenAPIType.INTEGER,
    "string": OpenAPIType.STRING,
    "boolean": OpenAPIType.BOOLEAN,
}


def document_option_fields(openapi: OpenAPI, fields: Mapping[str, ProfileField]) -> None:
    """``option_fields`` of every request model that has it, as the loaded options declare them
    (``OptionSpec.profile_fields``): one property per field with its kind, bounds, choices and default,
    no other name (an app without such options takes none)."""
    properties: dict[str, Schema | Reference] = {
        name: Schema(
            type=_FIELD_TYPES[f.kind],
            description=f.description,
            default=f.default,
            minimum=f.minimum,
            maximum=f.maximum,
            enum=list(f.choices) or None,
            max_length=64 if f.kind == "string" else None,
        )
        for name, f in fields.items()
    }
    for target in (openapi.components.schemas or {}).values() if openapi.components else ():
        if not isinstance(target, Schema) or not target.properties or "option_fields" not in target.properties:
            continue
        given = target.properties["option_fields"]
        described = given.description if isinstance(given, Schema) else None
        target.properties["option_fields"] = Schema(
            description=described,
            one_of=[
                Schema(
                    type=OpenAPIType.OBJECT,
                    properties=dict(properties),
                    additional_properties=False,
                    max_properties=64,
                ),
                Schema(type=OpenAPIType.NULL),
            ],
        )


class _FinishedWhenBuilt(OpenAPIPlugin):
    """Litestar's OpenAPI plugin, whose document the service finishes as it is built (``document_when_asked``)."""

    __slots__ = ()

    def _build_openapi(self) -> OpenAPI:
        document = super()._build_openapi()
        self.app.state[FINISH_DOCUMENT](document)
        return document


#: the app state's key of the function that finishes the app's OpenAPI document
FINISH_DOCUMENT = "finish_openapi_document"


def document_when_asked(app: Litestar, finish: Callable[[OpenAPI], None]) -> None:
    """Build the app's OpenAPI document when it is first read (``/docs/openapi.json``, ``app.openapi_schema``),
    then ``finish`` it (the service's completions), rather than at every start: a worker that never serves the
    document starts ~150 ms sooner. Litestar (2.25) builds it once, in its OpenAPI plugin's ``_build_openapi``:
    the plugin becomes one that finishes what it builds."""
    app.state[FINISH_DOCUMENT] = finish
    app.plugins.get(OpenAPIPlugin).__class__ = _FinishedWhenBuilt
