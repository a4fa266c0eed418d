"""The committed OpenAPI document is the one the app serves, and it documents every error as problem details."""

from __future__ import annotations

import difflib
import json
from typing import Any

import pytest

from app.openapi_export import openapi_document, render
from app.settings import PROJECT_ROOT

COMMITTED = PROJECT_ROOT / "openapi" / "v1.json"
PROBLEM_JSON = "application/problem+json"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return openapi_document()


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, item in sorted(document["paths"].items())
        for method, op in sorted(item.items())
        if method in METHODS
    ]


def test_committed_document_is_current():
    rendered = render()
    committed = COMMITTED.read_text(encoding="utf-8")
    if committed != rendered:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(keepends=True),
                    rendered.splitlines(keepends=True),
                    "openapi/v1.json (committed)",
                    "app.openapi_export.render() (the running app)",
                )
            )[:80]
        )
        pytest.fail(
            "openapi/v1.json differs from the app's OpenAPI document: run `make openapi` "
            f"(or `.venv/bin/python -m app.openapi_export openapi/v1.json`) and commit the result.\n{diff}"
        )


def test_committed_document_is_valid_json_with_the_app_version():
    doc = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert doc["openapi"].startswith("3.")
    assert doc["info"]["title"] == "compute-advisor"


def test_served_document_is_the_rendered_one(client):
    r = client.get("/docs/openapi.json")
    assert r.status_code == 200
    assert r.json() == json.loads(render())


def test_the_minimum_contract_is_documented(document):
    ops = {(m, p) for m, p, _ in operations(document)}
    for expected in [
        ("GET", "/v1/options"),
        ("POST", "/v1/price-comparisons"),
        ("POST", "/v1/recommendations"),
        ("GET", "/v1/recommendations/{rec_id}"),
        ("POST", "/v1/evaluations"),
        ("GET", "/v1/gpus"),
        ("GET", "/v1/gpus/{key}"),
        ("GET", "/v1/servers"),
        ("GET", "/v1/prices"),
        ("GET", "/v1/assumptions"),
        ("GET", "/v1/rules"),
        ("GET", "/v1/knowledge-version"),
        ("GET", "/health/live"),
        ("GET", "/health/ready"),
    ]:
        assert expected in ops, expected


def test_every_operation_has_an_operation_id_and_tags(document):
    seen: set[str] = set()
    for method, path, op in operations(document):
        op_id = op.get("operationId")
        assert op_id, f"{method} {path} has no operationId"
        assert op_id not in seen, f"operationId {op_id} is used twice"
        seen.add(op_id)
        assert op.get("tags"), f"{method} {path} has no tags"
        assert op.get("summary"), f"{method} {path} has no summary"


def test_every_v1_operation_documents_a_client_error_as_problem_json(document):
    for method, path, op in operations(document):
        if not path.startswith("/v1/"):
            continue
        client_errors = {code: r for code, r in op["responses"].items() if code.startswith("4")}
        assert "400" in client_errors or client_errors, f"{method} {path} documents no 4xx response"
        for code, response in client_errors.items():
            content = response.get("content", {})
            assert list(content) == [PROBLEM_JSON], f"{method} {path} {code} is documented as {list(content)}"
            assert content[PROBLEM_JSON]["schema"] == {"$ref": "#/components/schemas/Problem"}, (method, path, code)
        assert "400" in client_errors, f"{method} {path} does not document 400"


def test_every_v1_operation_documents_500_and_503_as_problem_json(document):
    for method, path, op in operations(document):
        if path.startswith("/v1/"):
            for code in ("500", "503"):
                assert list(op["responses"][code]["content"]) == [PROBLEM_JSON], (method, path, code)


def test_operations_with_a_body_document_413_415_and_422(document):
    for method, path, op in operations(document):
        if "requestBody" in op:
            assert list(op["requestBody"]["content"]) == ["application/json"], (method, path)
            for code in ("413", "415", "422"):
                assert code in op["responses"], f"{method} {path} does not document {code}"


def test_problem_schema_matches_rfc_9457(document):
    problem = document["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "detail"} <= set(problem["required"])
    assert {"instance", "field", "errors", "request_id"} <= set(problem["properties"])


def test_price_comparison_documents_csv_and_406(document):
    responses = document["paths"]["/v1/price-comparisons"]["post"]["responses"]
    assert set(responses["200"]["content"]) == {
        "application/json",
        "text/csv",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    }
    assert "406" in responses


def test_recommendation_create_is_201_only(document):
    """``?store=false`` is deprecated and outside the documented contract (README, Deprecations)."""
    op = document["paths"]["/v1/recommendations"]["post"]
    assert [code for code in op["responses"] if code.startswith("2")] == ["201"]
    assert "store" not in {p["name"] for p in op["parameters"]}


def test_one_success_schema_per_operation(document):
    """Generators type an operation's success by its status and media type: one 2xx status each, one schema
    per media type (CSV, XLSX and SVG are strings of their own media type, next to the JSON)."""
    for method, path, op in operations(document):
        successes = [code for code in op["responses"] if code.startswith("2")]
        assert len(successes) == 1, f"{method} {path} documents {successes}"
        content = op["responses"][successes[0]].get("content", {})
        json_like = [media for media in content if media.endswith("json")]
        assert len(json_like) <= 1, (method, path, json_like)
        for media, body in content.items():
            if not media.endswith("json"):
                assert body["schema"]["type"] == "string", (method, path, media)


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def test_examples_validate_against_their_schemas(document):
    """Every example in the document (request bodies, the service's own answers, parameters) is an instance of
    its schema, by a JSON Schema 2020-12 validator (the dialect of OpenAPI 3.1)."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    registry = Registry().with_resource("urn:openapi", Resource.from_contents(document, DRAFT202012))
    checked = 0

    def check(example: Any, *where: str) -> None:
        nonlocal checked
        validator = Draft202012Validator(
            {"$ref": "urn:openapi" + _pointer(*where, "schema")},
            registry=registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        errors = sorted(validator.iter_errors(example), key=lambda e: list(e.absolute_path))
        assert not errors, f"{'/'.join(where)}: " + "; ".join(
            f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:5]
        )
        checked += 1

    for path, item in document["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            for media, body in op.get("requestBody", {}).get("content", {}).items():
                if "example" in body:
                    check(body["example"], "paths", path, method, "requestBody", "content", media)
            for code, response in op["responses"].items():
                for media, body in response.get("content", {}).items():
                    if "example" in body:
                        check(body["example"], "paths", path, method, "responses", code, "content", media)
            for i, parameter in enumerate(op.get("parameters", [])):
                for name, example in parameter.get("examples", {}).items():
                    del name
                    check(example["value"], "paths", path, method, "parameters", str(i))
    assert checked >= 20, checked


def test_examples_keep_the_null_fields_of_the_answers(document):
    """The service's answers name a field even when it is null; so do the examples made of them."""
    example = document["paths"]["/v1/price-comparisons"]["post"]["responses"]["200"]["content"]["application/json"]
    answers = json.loads((PROJECT_ROOT / "openapi" / "examples.json").read_text(encoding="utf-8"))
    assert example["example"] == answers["comparePrices"]["200"]
    assert "null" in json.dumps(example["example"])


def test_request_fields_with_a_default_are_optional_and_say_it(document):
    """openapi-typescript types a field with ``default`` as always present: request schemas state theirs in words."""
    schemas = document["components"]["schemas"]
    for name in ("ComparisonCreate", "ProfileCreate", "EvaluationCreate", "UncertaintyCreate", "Weights"):
        for field, prop in schemas[name]["properties"].items():
            assert "default" not in prop, (name, field)
    currency = schemas["ComparisonCreate"]["properties"]["currency"]
    assert "currency" not in schemas["ComparisonCreate"]["required"]
    assert 'Default: `"CNY"`.' in currency["description"]


def test_headers_are_required_only_when_always_sent(document):
    """Generators type a referenced header as present: only those every answer carries are shared; the
    rate-limit headers (absent with RATE_LIMIT=off), validators and the rest are inline and optional."""
    shared = document["components"]["headers"]
    assert set(shared) == {"X-Request-ID", "Content-Language", "Location"}
    assert all(header["required"] is True for header in shared.values())
    ok = document["paths"]["/v1/price-comparisons"]["post"]["responses"]["200"]["headers"]
    for name in ("RateLimit-Limit", "RateLimit-Remaining", "ETag", "X-Knowledge-Source"):
        assert ok[name]["required"] is False and "$ref" not in ok[name], name


# ---- what client generators need ------------------------------------------------------------------


def _operations(document):
    for path, item in document["paths"].items():
        for method, op in item.items():
            yield path, method, op


def test_operation_ids_say_what_operations_do(document):
    ids = {op["operationId"]: (method, path) for path, method, op in _operations(document)}
    creating = {i for i in ids if i.startswith("create")}
    assert creating == {"createRecommendation", "createWatch"}, "create… only where something is stored"
    assert {"comparePrices", "evaluateProfiles", "computeBreakEven", "computeSensitivity"} <= set(ids)
    for operation_id, (method, _path) in ids.items():
        if operation_id.startswith(("get", "list")):
            assert method == "get", operation_id


def test_headers_on_every_response_and_location_on_201(document):
    for path, _method, op in _operations(document):
        for code, response in op["responses"].items():
            headers = response.get("headers", {})
            assert {"X-Request-ID", "Content-Language"} <= set(headers), (path, code)
            if path.startswith("/v1/"):
                assert "RateLimit-Remaining" in headers, (path, code)
    created = document["paths"]["/v1/recommendations"]["post"]["responses"]
    assert created["201"]["headers"]["Location"] == {"$ref": "#/components/headers/Location"}
    assert created["201"]["content"]["application/json"]["schema"]["$ref"].endswith("/RecommendationRead")
    assert "Retry-After" in created["429"]["headers"]


def test_conditional_operations_document_validators_and_304(document):
    for path, method in (("/v1/price-comparisons", "post"), ("/v1/offers", "get"), ("/v1/gpus/{key}", "get")):
        op = document["paths"][path][method]
        assert {"ETag", "Cache-Control", "Vary"} <= set(op["responses"]["200"]["headers"]), path
        assert "304" in op["responses"] and "content" not in op["responses"]["304"], path
        assert "If-None-Match" in {p["name"] for p in op["parameters"]}, path
    assert "304" not in document["paths"]["/v1/recommendations"]["post"]["responses"]


def test_request_bodies_have_examples_and_enums_are_shared(document):
    for path, method, op in _operations(document):
        if "requestBody" in op:
            assert op["requestBody"]["content"]["application/json"].get("example"), (method, path)
    schemas = document["components"]["schemas"]
    assert schemas["OpsTeam"]["enum"] == ["none", "basic", "professional"]
    ops_team = schemas["ProfileCreate"]["properties"]["ops_team"]
    assert ops_team["allOf"] == [{"$ref": "#/components/schemas/OpsTeam"}]
    text = json.dumps(schemas)
    assert '"enum": ["none", "basic", "professional"]' not in text.replace(json.dumps(schemas["OpsTeam"]), "")


def test_problem_types_are_listed(document):
    kinds = document["components"]["schemas"]["Problem"]["properties"]["type"]["examples"]
    assert "urn:compute-advisor:problem:not-found" in kinds
    assert "urn:compute-advisor:problem:database-unavailable" in kinds


@pytest.mark.slow
def test_committed_response_examples_are_current():
    """openapi/examples.json holds the service's own answers to the request examples (make openapi)."""
    from app.openapi_examples import render as render_examples

    committed = (PROJECT_ROOT / "openapi" / "examples.json").read_text(encoding="utf-8")
    assert render_examples() == committed, "openapi/examples.json is stale: run `make openapi`"


def test_main_responses_have_examples(document):
    for path, method, code in (
        ("/v1/price-comparisons", "post", "200"),
        ("/v1/recommendations", "post", "201"),
        ("/v1/recommendations/{rec_id}", "get", "200"),
        ("/v1/recommendations/{rec_id}", "get", "404"),
        ("/v1/evaluations", "post", "200"),
        ("/v1/break-even", "post", "200"),
        ("/v1/options", "get", "200"),
    ):
        content = document["paths"][path][method]["responses"][code]["content"]
        media = next(m for m in content if m.endswith("json"))
        assert content[media].get("example"), (method, path, code)
    created = document["paths"]["/v1/recommendations"]["post"]["responses"]["201"]["content"]
    assert created["application/json"]["example"]["recommended_option"] == "ai_compute_platform"
