"""The OpenAPI document for client generators: what ``app.openapi.document`` completes, made pleasant
to generate from."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from litestar.enums import ParamType
from litestar.openapi.spec import (
    BaseSchemaObject,
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

from app.openapi.document import (
    KNOWLEDGE_SOURCE_HEADERS,
    RATE_LIMIT_HEADERS,
    UNAVAILABLE_HEADERS,
    _add_headers,
    _header,
)
from app.settings import PROJECT_ROOT

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
    "computeCostCurves": PROFILE_EXAMPLE,
    "computeUncertainty": {**PROFILE_EXAMPLE, "draws": 2000, "seed": 7},
    "computeTrainingPlan": {"parameters": 7e9, "tokens": 2e12, "gpu_model": "h100_sxm", "gpus": 256},
    # a stored recommendation's id (``app.openapi_examples`` stores one first and names it)
    "createWatch": {
        "recommendation_id": "0b8f3c1e-5d2a-4f6b-9a7c-2e4d6f8a1b3c",
        "url": "https://procurement.example.com/hooks/compute-advisor",
        "secret": "whsec-7d1f0c9a2b8e4f36",
        "min_cost_change": 0.05,
        "on_rank_change": True,
    },
    # a steady base of 256 GPUs, and three months a year of 1,024 more for a large run, over four years
    "computeCapacityPlan": {
        "horizon_years": 4,
        "team_size": 20,
        "ops_team": "professional",
        "start_within_days": 120,
        "demand": [
            {"months": 9, "gpus": 256, "utilization": 0.9, "largest_job_gpus": 256},
            {"months": 3, "gpus": 1280, "utilization": 0.9, "largest_job_gpus": 1024},
        ]
        * 4,
    },
}
#: answers to the request examples, made by ``app.openapi_examples`` (``make openapi``): operationId → status → body
EXAMPLES_PATH = PROJECT_ROOT / "openapi" / "examples.json"
#: sent on every answer (``required``: generators type them as always present)
COMMON_HEADERS = {
    "X-Request-ID": OpenAPIHeader(
        schema=Schema(type=OpenAPIType.STRING),
        description="The request's id (the client's own when it sent a sane one).",
        required=True,
    ),
    "Content-Language": OpenAPIHeader(
        schema=Schema(type=OpenAPIType.STRING, enum=["en", "zh-CN"]),
        description="The language of the answer's words (`Accept-Language`; a stored recommendation keeps its own).",
        required=True,
    ),
}
#: sent on every answer under /v1/ while rate limits are on (``RATE_LIMIT``; Litestar's headers)
RATE_BUDGET_HEADERS = {name: header for name, header in RATE_LIMIT_HEADERS.items() if name.startswith("RateLimit-")}
VALIDATOR_HEADERS = {
    "ETag": _header(OpenAPIType.STRING, "The answer's entity tag: send it back in `If-None-Match`."),
    "Cache-Control": _header(OpenAPIType.STRING, "`private, max-age=5, must-revalidate`"),
    "Vary": _header(OpenAPIType.STRING, "`Accept, Accept-Language, X-API-Key`"),
}
LOCATION_HEADER = {
    "Location": OpenAPIHeader(
        schema=Schema(type=OpenAPIType.STRING),
        description="Where the stored recommendation is read back.",
        required=True,
    )
}
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


@dataclass
class Verbatim(BaseSchemaObject):
    """A JSON value written into the document as it is (Litestar's serialisation drops every ``None`` it
    meets, which would take the null fields out of the service's own answers used as examples)."""

    value: Any

    def to_schema(self) -> dict[str, Any]:
        return cast("dict[str, Any]", self.value)


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
        if op.security is None:
            op.security = []  # open to all (health): said, not left to a default a linter cannot see
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
                    content.example = Verbatim(answer)
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
    _state_request_defaults(openapi, schemas)
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
    """Every header always sent documented here once under ``components.headers``, referenced from the
    responses; the others stay inline (generators take a referenced header for one always present)."""
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
            if id(header) in names or not header.required:
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


def _references(node: Any, found: set[str]) -> None:
    """The names of the component schemas ``node`` refers to (directly)."""
    if isinstance(node, Reference):
        found.add(node.ref.rsplit("/", 1)[-1])
    elif isinstance(node, Schema):
        for value in (node.properties or {}).values():
            _references(value, found)
        for attr in ("one_of", "any_of", "all_of"):
            for branch in getattr(node, attr) or ():
                _references(branch, found)
        for attr in ("items", "additional_properties", "schema_not"):
            _references(getattr(node, attr), found)


def _state_request_defaults(openapi: OpenAPI, schemas: dict[str, Schema]) -> None:
    """A request field's default goes into its description, not into ``default``.

    A request field with a default is optional; but generators read ``default`` as "always present" (it is
    so in an answer): openapi-typescript makes such a field required in the request's type, and the README's
    own bodies would not type-check. The request schemas share no component with the answers', so the
    answers keep their ``default``s.
    """
    pending: set[str] = set()
    for _path, _method, op in _operations(openapi):
        if isinstance(op.request_body, RequestBody):
            for media in op.request_body.content.values():
                _references(media.schema, pending)
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen or not isinstance(schemas.get(name), Schema):
            continue
        seen.add(name)
        schema = schemas[name]
        _references(schema, pending)
        for prop in (schema.properties or {}).values():
            if isinstance(prop, Schema) and prop.default is not None:
                stated = f"Default: `{json.dumps(prop.default)}`."
                prop.description = f"{prop.description.rstrip()} {stated}" if prop.description else stated
                prop.default = None
