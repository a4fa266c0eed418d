"""The catalog reads and the health checks, on SQLite and PostgreSQL, with the reference seeds loaded.

The last tests run on a migrated but empty database: not ready, and the catalog answers 503.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import Databases, make_client

from app.kb.db import migration_head

PROBLEM_JSON = "application/problem+json"
OPTIONS = {"self_built_cluster", "rented_gpu_instances", "ai_compute_platform"}
PAGED = ["/v1/gpus", "/v1/servers", "/v1/prices", "/v1/assumptions", "/v1/rules"]


def ok(r: Any) -> Any:
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


def problem(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    body = r.json()
    assert {"type", "title", "status", "detail"} <= set(body)
    assert body["status"] == status
    return body


def kv(client: Any) -> str:
    return str(ok(client.get("/v1/knowledge-version"))["version"])


# ---- options ---------------------------------------------------------------------------------------------


def test_options_name_the_builtin_plugins(client):
    items = ok(client.get("/v1/options"))["items"]
    assert {o["key"] for o in items} == OPTIONS
    for o in items:
        assert set(o) >= {"key", "name", "description", "plugin", "plugin_version"}
        assert o["name"] and len(o["description"]) > 20
        assert o["plugin"] == o["key"]  # each built-in plugin provides the option of its name
        assert re.fullmatch(r"\d+\.\d+(\.\d+)?", o["plugin_version"]), o


# ---- GPUs ------------------------------------------------------------------------------------------------


def test_gpus_list_the_reference_models_with_sources(client):
    doc = ok(client.get("/v1/gpus"))
    gpus = {g["key"]: g for g in doc["items"]}
    assert doc["total"] == len(gpus) >= 8
    assert {"a100_80gb", "h100_sxm", "h800_sxm", "h20", "h200_sxm", "l40s", "rtx_4090", "ascend_910b"} <= set(gpus)
    assert gpus["h100_sxm"]["bf16_dense_tflops"] == 989
    assert gpus["h100_sxm"]["memory_gb"] == 80
    for g in gpus.values():
        assert g["source"].strip(), g["key"]
        assert g["source_quality"] in {"verified", "article", "estimate", "weak"}, g
        assert g["bf16_dense_tflops"] > 0 and g["memory_gb"] > 0


def test_gpus_from_weak_sources_are_flagged(client):
    for key in ("h800_sxm", "h20", "ascend_910b"):
        assert ok(client.get(f"/v1/gpus/{key}"))["source_quality"] == "weak", key


def test_gpus_from_vendor_datasheets_are_not_flagged_weak(client):
    assert ok(client.get("/v1/gpus/h100_sxm"))["source_quality"] != "weak"


def test_one_gpu(client):
    g = ok(client.get("/v1/gpus/h100_sxm"))
    assert g["key"] == "h100_sxm" and g["vendor"] and g["name"]
    assert g["bf16_dense_tflops"] == 989


def test_unknown_gpu_is_404_problem(client):
    body = problem(client.get("/v1/gpus/no_such_gpu"), 404)
    assert "no_such_gpu" in body["detail"]
    assert body["instance"] == "/v1/gpus/no_such_gpu"


# ---- servers ---------------------------------------------------------------------------------------------


def test_servers_include_one_reference_server(client):
    doc = ok(client.get("/v1/servers"))
    assert doc["total"] == len(doc["items"]) >= 1
    references = [x for x in doc["items"] if x["reference"]]
    assert len(references) == 1
    for x in doc["items"]:
        assert x["gpus_per_server"] >= 1 and x["source"] and x["source_quality"]


# ---- prices ----------------------------------------------------------------------------------------------


def all_prices(client, **params):
    doc = ok(client.get("/v1/prices", params={"limit": 500, **params}))
    assert doc["total"] == len(doc["items"]) <= 500
    return doc["items"]


def test_prices_cover_every_option_with_sources(client):
    doc = ok(client.get("/v1/prices"))
    assert doc["total"] > len(doc["items"]) == 100  # the first page of the price book
    every = all_prices(client)
    assert {p["option"] for p in every} >= OPTIONS
    for p in every:
        assert p["low"] <= p["expected"] <= p["high"], p
        assert p["source"] and p["source_quality"] and p["currency"] in {"CNY", "USD", "EUR"}


def test_prices_filter_by_option(client):
    for option in sorted(OPTIONS):
        doc = ok(client.get("/v1/prices", params={"option": option}))
        assert doc["total"] >= 1
        assert {p["option"] for p in doc["items"]} == {option}
    assert ok(client.get("/v1/prices", params={"option": "nope"}))["total"] == 0


def test_prices_filter_by_provider_region_and_item(client):
    every = all_prices(client)
    one = every[0]
    for name in ("provider", "region", "item"):
        doc = ok(client.get("/v1/prices", params={name: one[name], "limit": 500}))
        assert doc["total"] == sum(1 for p in every if p[name] == one[name]) >= 1
        assert {p[name] for p in doc["items"]} == {one[name]}
    doc = ok(client.get("/v1/prices", params={"provider": "no-such-provider"}))
    assert doc["total"] == 0 and doc["items"] == []


def test_prices_filters_combine(client):
    params = {"option": "rented_gpu_instances", "item": "instance_hour", "provider": "cloud"}
    doc = ok(client.get("/v1/prices", params=params))
    assert doc["total"] == 1  # the article's 100 CNY an hour
    assert doc["items"][0]["unit"] == "per_server_hour"
    assert ok(client.get("/v1/prices", params={"option": "self_built_cluster", "item": "instance_hour"}))["total"] == 0


def test_prices_as_of(client):
    every = all_prices(client)
    for day in ("2024-03-01", "2025-01-01", "2026-06-30"):
        valid = [p for p in every if p["valid_from"] <= day and (p["valid_to"] is None or day < p["valid_to"])]
        assert len(all_prices(client, as_of=day)) == len(valid)
    # the article's reference prices apply from 2025-01-01 on
    assert len(all_prices(client, as_of="2025-01-01", provider="cloud")) == 2
    assert all_prices(client, as_of="2024-12-31", provider="cloud") == []


def test_prices_as_of_must_be_a_date(client):
    body = problem(client.get("/v1/prices", params={"as_of": "last-year"}), 400)
    assert body["field"] == "as_of"


# ---- pagination ------------------------------------------------------------------------------------------


def test_pagination_slices_and_reports_the_total(client):
    every = ok(client.get("/v1/assumptions", params={"limit": 500}))
    assert every["limit"] == 500 and every["offset"] == 0
    total = every["total"]
    assert total == len(every["items"]) > 5
    page = ok(client.get("/v1/assumptions", params={"limit": 2, "offset": 3}))
    assert (page["total"], page["limit"], page["offset"]) == (total, 2, 3)
    assert page["items"] == every["items"][3:5]
    past = ok(client.get("/v1/assumptions", params={"offset": total}))
    assert past["total"] == total and past["items"] == []


def test_pages_join_up_to_the_whole(client):
    total = ok(client.get("/v1/rules"))["total"]
    seen = []
    for offset in range(0, total, 3):
        seen += ok(client.get("/v1/rules", params={"limit": 3, "offset": offset}))["items"]
    assert seen == ok(client.get("/v1/rules"))["items"]


def test_default_page(client):
    for path in PAGED:
        doc = ok(client.get(path))
        assert doc["limit"] == 100 and doc["offset"] == 0, path
        assert set(doc) >= {"knowledge_version", "total", "limit", "offset", "items"}


def test_limit_bounds(client):
    for path in PAGED:
        assert ok(client.get(path, params={"limit": 1}))["limit"] == 1
        assert ok(client.get(path, params={"limit": 500}))["limit"] == 500
        for limit in ("0", "501", "-1", "ten"):
            body = problem(client.get(path, params={"limit": limit}), 400)
            assert body["field"] == "limit", (path, limit)
            assert "limit" in body["detail"]
            assert [e["field"] for e in body["errors"]] == ["limit"]


def test_negative_offset_is_400_naming_offset(client):
    assert problem(client.get("/v1/gpus", params={"offset": -1}), 400)["field"] == "offset"


# ---- assumptions and rules -------------------------------------------------------------------------------


def test_assumptions_filter_by_option(client):
    every = ok(client.get("/v1/assumptions", params={"limit": 500}))["items"]
    assert {a["option"] for a in every} >= OPTIONS | {"*"}
    for option in (*OPTIONS, "*"):
        doc = ok(client.get("/v1/assumptions", params={"option": option, "limit": 500}))
        assert doc["total"] == sum(1 for a in every if a["option"] == option) >= 1
        assert {a["option"] for a in doc["items"]} == {option}
    for a in every:
        assert a["low"] <= a["expected"] <= a["high"], a
        assert a["source"] and a["source_quality"] and a["unit"]
    assert ok(client.get("/v1/assumptions", params={"option": "nope"}))["total"] == 0


def test_rules_filter_by_option(client):
    every = ok(client.get("/v1/rules"))["items"]
    assert every
    for option in OPTIONS:
        doc = ok(client.get("/v1/rules", params={"option": option}))
        assert doc["total"] == sum(1 for r in every if r["option"] == option) >= 1
        assert {r["option"] for r in doc["items"]} == {option}
    for r in every:
        assert r["conditions"], r["key"]
        assert {"field", "op", "value"} <= set(r["conditions"][0])
        assert r["effect"] and r["reason"] and r["source"] and r["source_quality"]
        assert r["match"] in {"all", "any"}


# ---- knowledge version -----------------------------------------------------------------------------------


def test_knowledge_version_is_the_one_every_answer_carries(client):
    doc = ok(client.get("/v1/knowledge-version"))
    version = doc["version"]
    assert version and re.fullmatch(r"[0-9a-f]{64}", doc["content_hash"])
    assert doc["created_at"] and isinstance(doc["summary"], dict)
    for path in PAGED:
        assert ok(client.get(path))["knowledge_version"] == version, path
    compared = client.post("/v1/price-comparisons", json={"gpus": 8, "utilization": 0.6, "horizon_years": 3})
    assert compared.status_code == 200 and compared.json()["knowledge_version"] == version
    ready = client.get("/health/ready").json()
    assert ready["checks"]["knowledge_version"] == version


# ---- health ----------------------------------------------------------------------------------------------


def test_live(client):
    r = client.get("/health/live")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_ready_on_a_seeded_database(client):
    r = client.get("/health/ready")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["status"] == "ok"
    checks = doc["checks"]
    assert checks["database"] == "ok"
    assert checks["migration"]["ok"] is True
    assert checks["migration"]["current"] == checks["migration"]["head"] == migration_head()
    assert checks["migration"]["head"] is not None
    assert checks["knowledge_version"] == kv(client)


def test_health_is_never_cached(client):
    for path in ("/health/live", "/health/ready"):
        assert "max-age" not in client.get(path).headers.get("cache-control", "")


@pytest.fixture
def empty_client(databases: Databases, backend: str) -> Any:
    """A client on a freshly migrated database that holds no knowledge version."""
    url = databases.migrated(backend)
    with make_client(url) as c:
        yield c


def test_ready_is_503_without_knowledge(empty_client):
    r = empty_client.get("/health/ready")
    assert r.status_code == 503, r.text
    doc = r.json()
    assert doc["status"] == "unavailable"
    assert doc["checks"]["database"] == "ok"
    assert doc["checks"]["migration"]["ok"] is True
    assert doc["checks"]["knowledge_version"] is None
    assert empty_client.get("/health/live").status_code == 200


def test_catalog_and_decisions_are_503_problem_without_knowledge(empty_client):
    for path in [*PAGED, "/v1/gpus/h100_sxm", "/v1/knowledge-version"]:
        body = problem(empty_client.get(path), 503)
        assert "knowledge" in body["detail"], path
        assert body["type"].endswith("knowledge-unavailable")
    r = empty_client.post("/v1/price-comparisons", json={"gpus": 8, "utilization": 0.6, "horizon_years": 3})
    problem(r, 503)
    # the options come from the plugins, not the knowledge base
    assert {o["key"] for o in ok(empty_client.get("/v1/options"))["items"]} == OPTIONS
