"""What the OpenAPI document must say that Litestar's schema generation leaves out, added once per app."""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from litestar.enums import ParamType
from litestar.openapi.spec import (
    Example,
    OpenAPI,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Parameter,
    Reference,
    RequestBody,
    Schema,
)
from pydantic import BaseModel

from app.settings import PROJECT_ROOT

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
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ALTERNATIVE_MEDIA = {
    "comparePrices": {
        "text/csv": "One row per option and per breakdown line (UTF-8 with a BOM, CRLF, an attachment).",
        XLSX: "A workbook: sheets summary, breakdown, offers, sources and request; headings in the request's language.",
    },
    "evaluateProfiles": {XLSX: "A workbook: sheets summary, ranking, reasons (with detail=full) and request."},
    "listOffers": {
        "text/csv": "One row per offer row, the columns of the JSON items (UTF-8 with a BOM, CRLF, an attachment).",
        XLSX: "A workbook: sheets offers and sources.",
    },
}


def _header(kind: OpenAPIType, description: str) -> OpenAPIHeader:
    return OpenAPIHeader(schema=Schema(type=kind), description=description)


RATE_LIMIT_HEADERS = {
    "Retry-After": _header(OpenAPIType.INTEGER, "Seconds until the window resets."),
    "RateLimit-Policy": _header(OpenAPIType.STRING, "`<limit>; w=<window seconds>`"),
    "RateLimit-Limit": _header(OpenAPIType.INTEGER, "Requests allowed per window (per API key, else per address)."),
    "RateLimit-Remaining": _header(OpenAPIType.INTEGER, "Requests left in the current window."),
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
    for item in (openapi.paths or {}).values():
        for op in (item.get, item.post):
            if not isinstance(op, Operation) or op.operation_id not in ALTERNATIVE_MEDIA or not op.responses:
                continue
            ok = op.responses.get("200")
            content = getattr(ok, "content", None)
            if isinstance(content, dict):
                for media, description in ALTERNATIVE_MEDIA[op.operation_id].items():
                    content[media] = OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING, description=description))


# ---- for client generators ------------------------------------------------------------------------
# Every response says its language and request id; rate-limited ones their budget; conditional ones
# their validators and a 304; a 201 its Location; enums are shared components; request bodies have
# an example; the problem types are listed.

#: a team of 20 training often, without an ops team (the article's platform scenario)
PROFILE_EXAMPLE: dict[str, Any] = {
    "gpus": 16,
    "utilization": 0.6,
    "horizon_years": 2,
    "team_size": 20,
    "ops_team": "none",
    "data_security": "standard",
    "start_within_days": 14,
}
REQUEST_EXAMPLES: dict[str, dict[str, Any]] = {
    "comparePrices": {"gpus": 64, "utilization": 0.5, "horizon_years": 3, "currency": "CNY"},
    "createRecommendation": PROFILE_EXAMPLE,
    "evaluateProfiles": {
        "profiles": [PROFILE_EXAMPLE, {**PROFILE_EXAMPLE, "gpus": 512, "utilization": 0.9, "ops_team": "professional"}],
        "detail": "scores",
    },
    "computeBreakEven": PROFILE_EXAMPLE,
    "computeSensitivity": PROFILE_EXAMPLE,
    "computeUncertainty": {**PROFILE_EXAMPLE, "draws": 2000, "seed": 7},
    "computeTrainingPlan": {"parameters": 7e9, "tokens": 2e12, "gpu_model": "h100_sxm", "gpus": 256},
}
#: answers to the request examples, made by ``app.openapi_examples`` (``make openapi``): operationId → status → body
EXAMPLES_PATH = PROJECT_ROOT / "openapi" / "examples.json"
COMMON_HEADERS = {
    "X-Request-ID": _header(OpenAPIType.STRING, "The request's id (the client's own when it sent a sane one)."),
    "Content-Language": OpenAPIHeader(
        schema=Schema(type=OpenAPIType.STRING, enum=["en", "zh-CN"]),
        description="The language of the answer's words (`Accept-Language`; a stored recommendation keeps its own).",
    ),
}
#: sent on every answer under /v1/ while rate limits are on (``RATE_LIMIT``; Litestar's headers)
RATE_BUDGET_HEADERS = {name: header for name, header in RATE_LIMIT_HEADERS.items() if name.startswith("RateLimit-")}
VALIDATOR_HEADERS = {
    "ETag": _header(OpenAPIType.STRING, "The answer's entity tag: send it back in `If-None-Match`."),
    "Cache-Control": _header(OpenAPIType.STRING, "`private, max-age=5, must-revalidate`"),
    "Vary": _header(OpenAPIType.STRING, "`Accept, Accept-Language, X-API-Key`"),
}
LOCATION_HEADER = {"Location": _header(OpenAPIType.STRING, "Where the stored recommendation is read back.")}
ACCEPT_LANGUAGE = Parameter(
    name="Accept-Language",
    param_in=ParamType.HEADER,
    required=False,
    description="`zh-CN` (or any `zh`) for Chinese, otherwise English: names, reasons, notes, problem titles, "
    "spreadsheet headings.",
    schema=Schema(type=OpenAPIType.STRING),
    examples={"zh": Example(value="zh-CN"), "en": Example(value="en")},
)
IF_NONE_MATCH = Parameter(
    name="If-None-Match",
    param_in=ParamType.HEADER,
    required=False,
    description="An `ETag` of an earlier answer: 304 without a body when it is still current.",
    schema=Schema(type=OpenAPIType.STRING),
)
#: operations whose answers are conditional (ETag and 304): the catalog's reads and price comparisons
CONDITIONAL_TAGS = frozenset({"catalog"})
CONDITIONAL_OPERATIONS = frozenset({"comparePrices"})


def _operations(openapi: OpenAPI) -> list[tuple[str, str, Operation]]:
    found = []
    for path, item in (openapi.paths or {}).items():
        for method in ("get", "post", "put", "patch", "delete"):
            op = getattr(item, method)
            if isinstance(op, Operation):
                found.append((path, method, op))
    return found


def document_for_generators(openapi: OpenAPI, problem_types: list[str]) -> None:
    """Headers, 304s, examples, shared enums and problem types (see the comment above)."""
    answers = _response_examples()
    for path, _method, op in _operations(openapi):
        api = path.startswith("/v1/")
        conditional = op.operation_id in CONDITIONAL_OPERATIONS or bool(CONDITIONAL_TAGS & set(op.tags or ()))
        params = list(op.parameters or [])
        names = {getattr(p, "name", None) for p in params}
        if "Accept-Language" not in names:
            params.append(ACCEPT_LANGUAGE)
        if conditional and "If-None-Match" not in names:
            params.append(IF_NONE_MATCH)
        op.parameters = params
        for code, response in (op.responses or {}).items():
            _add_headers(response, COMMON_HEADERS)
            if api:
                _add_headers(response, RATE_BUDGET_HEADERS)
            if conditional and code == "200":
                _add_headers(response, VALIDATOR_HEADERS)
            if code == "201":
                _add_headers(response, LOCATION_HEADER)
        if conditional and op.responses is not None and "304" not in op.responses:
            op.responses["304"] = OpenAPIResponse(
                description="Not modified: the `If-None-Match` entity tag is still current; no body.",
                headers={**VALIDATOR_HEADERS, **COMMON_HEADERS, **(RATE_BUDGET_HEADERS if api else {})},
            )
        for code, answer in answers.get(op.operation_id or "", {}).items():
            documented = (op.responses or {}).get(code)
            media = getattr(documented, "content", None) or {}
            for name, content in media.items():
                if name.endswith("json") and isinstance(content, OpenAPIMediaType):
                    content.example = answer
        body = op.request_body
        example = REQUEST_EXAMPLES.get(op.operation_id or "")
        if example is not None and isinstance(body, RequestBody):
            for media in body.content.values():
                media.example = example
    _share_headers(openapi)
    schemas = openapi.components.schemas if openapi.components else None
    if schemas is None:
        return
    _share_enums(openapi, schemas)
    problem = schemas.get("Problem")
    if isinstance(problem, Schema) and problem.properties and isinstance(problem.properties.get("type"), Schema):
        kind = problem.properties["type"]
        assert isinstance(kind, Schema)
        kind.description = "What went wrong, as a URN; one of: " + ", ".join(f"`{t}`" for t in problem_types) + "."
        kind.examples = list(problem_types)


def _response_examples() -> dict[str, dict[str, Any]]:
    """The committed response examples (none before ``make openapi`` first wrote them)."""
    try:
        found: dict[str, dict[str, Any]] = json.loads(EXAMPLES_PATH.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return found


def _share_headers(openapi: OpenAPI) -> None:
    """Every header documented here once under ``components.headers``, referenced from the responses."""
    groups = (
        COMMON_HEADERS,
        RATE_BUDGET_HEADERS,
        VALIDATOR_HEADERS,
        LOCATION_HEADER,
        KNOWLEDGE_SOURCE_HEADERS,
        RATE_LIMIT_HEADERS,
        UNAVAILABLE_HEADERS,
    )
    names: dict[int, str] = {}
    shared: dict[str, OpenAPIHeader | Reference] = {}
    for group in groups:
        for name, header in group.items():
            if id(header) in names:
                continue
            key = name if name not in shared else f"{name}-{len(shared)}"
            if name == "Retry-After" and group is UNAVAILABLE_HEADERS:
                key = "Retry-After-Unavailable"
            names[id(header)] = key
            shared[key] = header
    for _path, _method, op in _operations(openapi):
        for response in (op.responses or {}).values():
            if isinstance(response, OpenAPIResponse) and response.headers:
                response.headers = {
                    n: Reference(ref=f"#/components/headers/{names[id(h)]}") if id(h) in names else h
                    for n, h in response.headers.items()
                }
    if openapi.components is not None:
        openapi.components.headers = {**(openapi.components.headers or {}), **shared}


def _enum_names() -> dict[frozenset[str], str]:
    """The vocabulary's enumerations (``app.core.vocab``'s Literal aliases, the answers' languages) by value."""
    from app.core import vocab

    names: dict[frozenset[str], str] = {}
    for name, value in sorted(vars(vocab).items()):
        if getattr(value, "__origin__", None) is Literal:
            names.setdefault(frozenset(_literal_values(value)), name)
    return names


def _literal_values(literal: Any) -> list[str]:
    out: list[str] = []
    for arg in get_args(literal):
        out += _literal_values(arg) if getattr(arg, "__origin__", None) is Literal else [arg]
    return out


def _share_enums(openapi: OpenAPI, schemas: dict[str, Schema]) -> None:
    """Replace every inline string enum with a ``$ref`` to one component per enumeration (named after
    the vocabulary's type, else after the property)."""
    known = _enum_names()
    shared: dict[frozenset[str], str] = {}

    def share(schema: Schema, prop: str) -> Schema | Reference:
        listed = [v for v in schema.enum or () if v is not None]
        nullable = len(listed) < len(schema.enum or ())
        values = frozenset(str(v) for v in listed)
        name = shared.get(values)
        if name is None:
            name = known.get(values) or "".join(part.capitalize() for part in prop.split("_"))
            while name in schemas and shared.get(values) != name:
                name += "Value"
            shared[values] = name
            schemas[name] = Schema(type=OpenAPIType.STRING, enum=sorted(values, key=listed.index))
        ref = Reference(ref=f"#/components/schemas/{name}")
        if nullable:
            return Schema(
                one_of=[ref, Schema(type=OpenAPIType.NULL)], default=schema.default, description=schema.description
            )
        if schema.default is None and schema.description is None:
            return ref
        return Schema(all_of=[ref], default=schema.default, description=schema.description)

    def walk(node: Any, prop: str, top: bool = False) -> Any:
        if isinstance(node, Schema):
            strings = node.enum and all(isinstance(v, str) or v is None for v in node.enum)
            kinds = set(node.type) if isinstance(node.type, list) else {node.type}
            if strings and not top and kinds <= {OpenAPIType.STRING, OpenAPIType.NULL, None}:
                return share(node, prop)
            if node.properties:
                node.properties = {k: walk(v, k) for k, v in node.properties.items()}
            for attr in ("one_of", "any_of", "all_of"):
                branches = getattr(node, attr)
                if branches:
                    setattr(node, attr, [walk(b, prop) for b in branches])
            if isinstance(node.items, Schema):
                node.items = walk(node.items, prop)
            if isinstance(node.additional_properties, Schema):
                node.additional_properties = walk(node.additional_properties, prop)
        return node

    for name in list(schemas):
        walk(schemas[name], name, top=True)
    for _path, _method, op in _operations(openapi):
        for p in op.parameters or []:
            if isinstance(p, Parameter) and isinstance(p.schema, Schema):
                p.schema = walk(p.schema, p.name)
