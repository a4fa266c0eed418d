"""Every error is RFC 9457 problem details (``application/problem+json``) naming what is wrong.

The last section holds the regression tests for what the schemathesis run (test_schemathesis.py) found.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import make_client
from litestar import Litestar
from litestar.testing import TestClient

from app.domain.decisions.schemas import MAX_BATCH_PROFILES
from app.domain.decisions.service import DecisionService
from app.settings import Settings

PROBLEM_JSON = "application/problem+json"
COMPARE = "/v1/price-comparisons"
RECOMMEND = "/v1/recommendations"
EVALUATE = "/v1/evaluations"
BASE: dict[str, Any] = {"gpus": 8, "utilization": 0.6, "horizon_years": 3}


@pytest.fixture(scope="module")
def client(seeded_db: str) -> Iterator[TestClient[Litestar]]:
    """One client per backend for the whole module (conftest's is per test): these tests only read, or add
    recommendations nobody else counts."""
    with make_client(seeded_db) as c:
        yield c


def assert_problem(r: Any, status: int, field: str | None = None) -> dict[str, Any]:
    """The response is a problem document with this status, naming ``field`` when given."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON, r.headers
    body = r.json()
    for key in ("type", "title", "status", "detail"):
        assert key in body, f"problem without {key}: {body}"
    assert body["status"] == status
    assert body["type"].startswith("urn:compute-advisor:problem:")
    assert body["title"] and body["detail"]
    if field is not None:
        assert body["field"] == field, body
        assert field in [e["field"] for e in body["errors"]], body
        if status == 400:
            assert field in body["detail"], body
    return body


# ---- invalid input: 400 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"utilization": False}, "utilization"),
        ({"utilization": True}, "utilization"),
        ({"utilization": "0.5"}, "utilization"),
        ({"gpus": "8"}, "gpus"),
        ({"gpus": 1.5}, "gpus"),
        ({"gpus": True}, "gpus"),
        ({"gpus": None}, "gpus"),
        ({"horizon_years": [3]}, "horizon_years"),
        ({"rental_plan": 7}, "rental_plan"),
        ({"rental_plan": "Weekly"}, "rental_plan"),  # not a plan's spelling (a plan no option sells: 422)
        ({"currency": "usd"}, "currency"),
        ({"gpu_model": ""}, "gpu_model"),
    ],
)
def test_strict_types_are_400_naming_the_field(client, patch, field):
    assert_problem(client.post(COMPARE, json={**BASE, **patch}), 400, field)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"utilization": 0}, "utilization"),
        ({"utilization": 1.5}, "utilization"),
        ({"utilization": -0.1}, "utilization"),
        ({"horizon_years": 11}, "horizon_years"),
        ({"horizon_years": 0}, "horizon_years"),
        ({"gpus": 0}, "gpus"),
        ({"gpus": -8}, "gpus"),
        ({"gpus": 1_000_001}, "gpus"),
    ],
)
def test_out_of_range_values_are_400_naming_the_field(client, patch, field):
    assert_problem(client.post(COMPARE, json={**BASE, **patch}), 400, field)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"team_size": 0}, "team_size"),
        ({"start_within_days": -1}, "start_within_days"),
        ({"ops_team": "outsourced"}, "ops_team"),
        ({"data_security": "low"}, "data_security"),
        ({"capex_budget": -1}, "capex_budget"),
        ({"weights": {"cost": -1}}, "weights.cost"),
        ({"weights": {"cost": "high"}}, "weights.cost"),
    ],
)
def test_profile_fields_are_validated(client, patch, field):
    assert_problem(client.post(RECOMMEND, json={**BASE, **patch}), 400, field)


def test_unknown_fields_are_400_naming_them(client):
    assert_problem(client.post(COMPARE, json={**BASE, "gpu": 8}), 400, "gpu")
    assert_problem(client.post(RECOMMEND, json={**BASE, "weights": {"cost": 1, "price": 2}}), 400, "weights.price")


@pytest.mark.parametrize("missing", ["gpus", "utilization", "horizon_years"])
def test_missing_required_fields_are_400_naming_them(client, missing):
    body = {k: v for k, v in BASE.items() if k != missing}
    problem = assert_problem(client.post(COMPARE, json=body), 400, missing)
    assert "required" in problem["detail"].lower()


def test_every_missing_field_is_listed(client):
    problem = assert_problem(client.post(COMPARE, json={"gpus": 8}), 400)
    assert {e["field"] for e in problem["errors"]} == {"utilization", "horizon_years"}


@pytest.mark.parametrize("as_of", ["yesterday", "2025-13-01", "2025/01/01", "", 20250101])
def test_bad_as_of_is_400(client, as_of):
    assert_problem(client.post(COMPARE, json={**BASE, "as_of": as_of}), 400, "as_of")


def test_bad_as_of_query_is_400(client):
    assert_problem(client.get("/v1/prices", params={"as_of": "soon"}), 400, "as_of")


def test_weights_all_zero_are_400(client):
    zero = {"cost": 0, "efficiency": 0, "stability": 0, "usability": 0}
    assert_problem(client.post(RECOMMEND, json={**BASE, "weights": zero}), 400, "weights")
    problem = assert_problem(client.post(EVALUATE, json={"profiles": [{**BASE, "weights": zero}]}), 400)
    assert problem["field"] == "profiles.0.weights"


def test_evaluations_need_at_least_one_profile(client):
    assert_problem(client.post(EVALUATE, json={"profiles": []}), 400, "profiles")


def test_malformed_json_is_400(client):
    r = client.post(COMPARE, content=b'{"gpus": 8,', headers={"content-type": "application/json"})
    problem = assert_problem(r, 400)
    assert "JSON" in problem["detail"]


def test_a_missing_body_is_400(client):
    assert_problem(client.post(COMPARE, headers={"content-type": "application/json"}), 400, "body")


@pytest.mark.parametrize("body", [[BASE], "gpus", 8, None])
def test_a_body_that_is_not_an_object_is_400(client, body):
    assert_problem(client.post(COMPARE, content=json.dumps(body), headers={"content-type": "application/json"}), 400)


# ---- valid input the knowledge base cannot serve: 422 ------------------------------------------------------


def test_unknown_gpu_model_is_422_naming_it(client):
    problem = assert_problem(client.post(COMPARE, json={**BASE, "gpu_model": "tpu_v9"}), 422, "gpu_model")
    assert "tpu_v9" in problem["detail"]
    assert_problem(client.post(RECOMMEND, json={**BASE, "gpu_model": "tpu_v9"}), 422, "gpu_model")


def test_unknown_currency_is_422_naming_it(client):
    problem = assert_problem(client.post(COMPARE, json={**BASE, "currency": "GBP"}), 422, "currency")
    assert "CNY" in problem["detail"]  # says what it has


def test_known_gpu_model_without_a_priced_server_is_422(client):
    assert client.get("/v1/gpus/rtx_4090").status_code == 200  # the model is known...
    problem = assert_problem(client.post(COMPARE, json={**BASE, "gpu_model": "rtx_4090"}), 422, "gpu_model")
    assert "GeForce RTX 4090" in problem["detail"]  # ...but no option can price it (named as people name it)


def test_as_of_before_any_price_is_422(client):
    assert_problem(client.post(COMPARE, json={**BASE, "as_of": "2000-01-01"}), 422)


# ---- protocol errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("media", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_body_that_is_not_json_is_415(client, media):
    r = client.post(COMPARE, content=json.dumps(BASE), headers={"content-type": media})
    problem = assert_problem(r, 415)
    assert media in problem["detail"]
    r = client.post(COMPARE, content=b"gpus=8", headers={"content-type": media})
    assert_problem(r, 415)


def test_json_with_a_suffix_or_charset_is_accepted(client):
    for media in ("application/json; charset=utf-8", "application/merge-patch+json"):
        r = client.post(COMPARE, content=json.dumps(BASE), headers={"content-type": media})
        assert r.status_code == 200, (media, r.text)


@pytest.mark.parametrize("path", [COMPARE, EVALUATE])  # GET /v1/recommendations lists the stored ones
def test_get_on_a_post_route_is_405(client, path):
    r = client.get(path)
    assert_problem(r, 405)
    assert "POST" in r.headers.get("allow", "")


def test_delete_on_a_get_route_is_405(client):
    assert_problem(client.delete("/v1/gpus"), 405)


@pytest.mark.parametrize("path", ["/nope", "/v1", "/v1/gpu", "/v2/gpus", "/v1/recommendations/does-not-exist"])
def test_unknown_path_is_404(client, path):
    problem = assert_problem(client.get(path), 404)
    assert problem["instance"] == path


@pytest.mark.parametrize("accept", ["application/xml", "text/html", "image/png"])
def test_accept_nothing_it_can_produce_is_406(client, accept):
    r = client.post(COMPARE, json=BASE, headers={"accept": accept})
    problem = assert_problem(r, 406)
    assert "application/json" in problem["detail"] and "text/csv" in problem["detail"]


def test_accept_csv_or_anything_is_served(client):
    assert (
        client.post(COMPARE, json=BASE, headers={"accept": "text/csv"}).headers["content-type"].startswith("text/csv")
    )
    assert client.post(COMPARE, json=BASE, headers={"accept": "*/*"}).status_code == 200


@pytest.fixture
def small_body_client(seeded_db: str) -> Iterator[TestClient[Litestar]]:
    with make_client(seeded_db, settings=Settings(database_url=seeded_db, max_body_bytes=256)) as c:
        yield c


def test_body_over_max_body_bytes_is_413(small_body_client):
    small = small_body_client.post(COMPARE, json=BASE)
    assert small.status_code == 200, small.text
    big = {"profiles": [BASE] * 20}
    assert len(json.dumps(big)) > 256
    assert_problem(small_body_client.post(EVALUATE, json=big), 413)


# ---- request ids and internal errors -------------------------------------------------------------------------


def test_request_id_is_echoed_when_given(client):
    r = client.get("/v1/options", headers={"x-request-id": "trace-abc-123"})
    assert r.headers["x-request-id"] == "trace-abc-123"
    r = client.post(COMPARE, json={**BASE, "gpus": 0}, headers={"x-request-id": "trace-abc-124"})
    assert r.headers["x-request-id"] == "trace-abc-124"
    assert r.json()["request_id"] == "trace-abc-124"


def test_request_id_is_generated_when_missing_or_unusable(client):
    a = client.get("/v1/options").headers["x-request-id"]
    b = client.get("/v1/options").headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", a) and a != b
    too_long = client.get("/v1/options", headers={"x-request-id": "x" * 129}).headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", too_long)


@pytest.mark.parametrize(("method", "path"), [("GET", "/nope"), ("GET", COMPARE), ("GET", "/health/live")])
def test_router_level_answers_carry_the_request_id_too(client, method, path):
    r = client.request(method, path, headers={"x-request-id": "rid-router"})
    assert r.headers["x-request-id"] == "rid-router"
    if r.status_code >= 400:
        assert r.json()["request_id"] == "rid-router"


def test_internal_error_is_500_problem_without_internals(client, monkeypatch, caplog):
    def boom(self: DecisionService, req: object) -> None:
        raise RuntimeError("secret-internal-detail in /srv/app/core.py")

    monkeypatch.setattr(DecisionService, "compare", boom)
    r = client.post(COMPARE, json=BASE, headers={"x-request-id": "rid-500"})
    problem = assert_problem(r, 500)
    assert problem["request_id"] == "rid-500" == r.headers["x-request-id"]
    assert "rid-500" in problem["detail"]
    for leak in ("secret-internal-detail", "RuntimeError", "Traceback", "core.py", 'File "'):
        assert leak not in r.text
    assert set(problem) <= {"type", "title", "status", "detail", "instance", "request_id"}
    # the logs, not the client, get the details
    assert any("rid-500" in rec.getMessage() and rec.exc_info for rec in caplog.records)


def test_internal_error_gets_a_generated_request_id(client, monkeypatch):
    monkeypatch.setattr(DecisionService, "compare", lambda self, req: 1 / 0)
    r = client.post(COMPARE, json=BASE)
    problem = assert_problem(r, 500)
    assert problem["request_id"] == r.headers["x-request-id"]
    assert "ZeroDivisionError" not in r.text and "division" not in r.text


# ---- regressions found by schemathesis -----------------------------------------------------------------------


@pytest.mark.parametrize("query", ["offset=-1", "limit=0", "option=" + "x" * 41, "region=" + "x" * 41])
def test_catalog_400s_are_problem_json(client, query):
    """ST105: catalog operations documented their 400 as application/json while answering problem+json."""
    path = "/v1/assumptions" if query.startswith("option") else "/v1/prices"
    if query.startswith("offset"):
        path = "/v1/gpus"
    assert_problem(client.get(f"{path}?{query}"), 400, query.split("=")[0])


def test_gpu_key_longer_than_documented_is_400_problem(client):
    """ST105 again: a path parameter over its maxLength."""
    assert_problem(client.get("/v1/gpus/" + "0" * 41), 400, "key")


def test_knowledge_version_created_at_is_rfc3339_with_offset(client):
    """ST108: on SQLite created_at came back naive ("2026-…T12:59:11.010613"), not an RFC 3339 date-time."""
    created = client.get("/v1/knowledge-version").json()["created_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", created), created


@pytest.mark.parametrize("utilization", [5e-324, 1e-9, 0.000999])
def test_utilization_too_small_for_a_finite_cost_is_400(client, utilization):
    """ST108: utilization 5e-324 made cost_per_useful_gpu_hour infinite, sent as {low: null, …}."""
    assert_problem(client.post(COMPARE, json={**BASE, "utilization": utilization}), 400, "utilization")


def _all_numbers_finite(node: Any) -> bool:
    if isinstance(node, dict):
        return all(_all_numbers_finite(v) for v in node.values())
    if isinstance(node, list):
        return all(_all_numbers_finite(v) for v in node)
    return not isinstance(node, float) or math.isfinite(node)


def test_smallest_utilization_gives_finite_costs(client):
    r = client.post(COMPARE, json={**BASE, "gpus": 1, "utilization": 0.001, "horizon_years": 0.01})
    assert r.status_code == 200, r.text
    for item in r.json()["items"]:
        for key in ("annual_cost", "total_cost", "upfront_cost", "cost_per_useful_gpu_hour"):
            rng = item[key]
            assert rng is not None and None not in rng.values(), (item["option"], key, rng)
        assert _all_numbers_finite(item)


def test_empty_weights_are_400(client):
    """ST202: the document allowed ``weights: {}`` (every weight defaults to 0) that the service refuses.

    The document now says so (``anyOf``: one weight above 0), and the service still answers 400.
    """
    assert_problem(client.post(RECOMMEND, json={**BASE, "weights": {}}), 400, "weights")
    weights = client.get("/docs/openapi.json").json()["components"]["schemas"]["Weights"]
    assert {tuple(branch["required"]) for branch in weights["anyOf"]} == {
        ("cost",),
        ("efficiency",),
        ("stability",),
        ("usability",),
    }


def test_a_single_positive_weight_is_enough(client):
    r = client.post(RECOMMEND, json={**BASE, "weights": {"usability": 1e-9}})
    assert r.status_code == 201, r.text


def test_integral_json_numbers_count_as_integers(client):
    """ST202: ``"gpus": 1080.0`` is an integer to JSON Schema, but strict validation refused it."""
    r = client.post(COMPARE, json={**BASE, "gpus": 8.0})
    assert r.status_code == 200, r.text
    assert r.json()["gpus"] == 8 and isinstance(r.json()["gpus"], int)
    r = client.post(RECOMMEND, json={**BASE, "team_size": 5.0, "start_within_days": 0.0})
    assert r.status_code == 201, r.text
    assert r.json()["profile"]["team_size"] == 5


def test_documented_request_constraints_match_validation(client):
    """ST202: unknown fields, the currency pattern and capex_budget >= 0 were checked but not documented."""
    schemas = client.get("/docs/openapi.json").json()["components"]["schemas"]
    for name in ("ComparisonCreate", "ProfileCreate", "EvaluationCreate", "Weights"):
        assert schemas[name]["additionalProperties"] is False, name
    assert schemas["ComparisonCreate"]["properties"]["currency"]["pattern"] == "^[A-Z]{3}$"
    assert schemas["ProfileCreate"]["properties"]["capex_budget"]["minimum"] == 0
    assert schemas["ComparisonCreate"]["properties"]["utilization"]["minimum"] == 0.001
    assert_problem(client.post(RECOMMEND, json={**BASE, "capex_budget": -1e16}), 400, "capex_budget")


def test_too_many_profiles_are_refused(client):
    """ST201: over maxItems the body was refused with 413 (too large): still a refusal, but check the 400 path."""
    tiny = {"gpus": 1, "utilization": 1, "horizon_years": 1}
    r = client.post(EVALUATE, json={"profiles": [tiny] * (MAX_BATCH_PROFILES + 1)})
    assert_problem(r, 400, "profiles")


def test_break_even_of_a_cluster_no_rental_offer_can_hold_is_answered(client):
    """make fuzz, 2026-12-03: an H100 cluster of 362,881 GPUs on the monthly plan. At the larger sizes
    the break-even sweep tries, no rented offer exists: that alternative drops out there instead of a 500."""
    body = {
        "as_of": "2025-08-05",
        "data_security": "high",
        "delay_cost_per_day": 109144023947.40488,
        "weights": {"cost": 584.3, "stability": 966.2, "efficiency": 124.6, "usability": 863.7},
        "gpu_model": "h100_sxm",
        "gpus": 362881,
        "team_size": 10332,
        "utilization": 0.4998726471914327,
        "rental_plan": "monthly",
        "horizon_years": 10.0,
        "start_within_days": 123,
        "ops_team": "basic",
    }
    r = client.post("/v1/break-even", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["crossings"]


def test_options_names_every_method_of_each_path(client):
    """A path whose handlers were registered apart (GET and POST /v1/watches) answers OPTIONS with all of them
    (app.web.allow), as its OpenAPI document declares."""
    from litestar.routes import HTTPRoute

    checked = 0
    for route in client.app.routes:
        if isinstance(route, HTTPRoute) and route.path.startswith("/v1/"):
            path = re.sub(r"\{[^}]+\}", "1", route.path)
            r = client.options(path)
            assert r.status_code == 204, (path, r.text)
            assert set(r.headers["allow"].split(", ")) == set(route.methods), path
            checked += 1
    assert checked >= 30
