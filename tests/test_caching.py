"""Conditional requests: ETag from the knowledge version and the normalised request, 304, Cache-Control."""

from __future__ import annotations

COMPARE = "/v1/price-comparisons"
BODY = {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "as_of": "2026-01-01"}


def test_catalog_reads_carry_an_etag_and_answer_304_when_current(client):
    first = client.get("/v1/gpus", params={"limit": 5})
    etag = first.headers["etag"]
    assert first.status_code == 200 and etag.startswith('"')
    assert first.headers["cache-control"] == "private, max-age=5, must-revalidate"
    assert "X-API-Key" in first.headers["vary"]
    again = client.get("/v1/gpus", params={"limit": 5}, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag
    # a list of tags, weak or strong, matches too
    listed = client.get("/v1/gpus", params={"limit": 5}, headers={"If-None-Match": f'"nope", W/{etag}'})
    assert listed.status_code == 304


def test_a_known_etag_is_answered_304_without_running_the_handler(client, monkeypatch):
    from app.domain.catalog.service import CatalogService

    calls = []
    real = CatalogService.gpus
    monkeypatch.setattr(CatalogService, "gpus", lambda self, page: calls.append(page) or real(self, page))
    first = client.get("/v1/gpus", params={"limit": 3})
    etag = first.headers["etag"]
    assert first.status_code == 200 and len(calls) == 1
    again = client.get("/v1/gpus", params={"limit": 3}, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and len(calls) == 1  # the handler did not run
    assert again.headers["etag"] == etag and again.headers["cache-control"] == first.headers["cache-control"]
    assert again.headers["vary"] == first.headers["vary"] and "x-request-id" in again.headers
    # another representation is not known: its handler runs, and a stale tag gets the 200
    other = client.get("/v1/gpus", params={"limit": 4}, headers={"If-None-Match": etag})
    assert other.status_code == 200 and len(calls) == 2
    # still no 304 without a key
    anonymous = client.get("/v1/gpus", params={"limit": 3}, headers={"If-None-Match": etag, "X-API-Key": ""})
    assert anonymous.status_code == 401


def test_the_etag_follows_the_normalised_query(client):
    a = client.get("/v1/prices", params={"option": "rented_gpu_instances", "limit": 10}).headers["etag"]
    b = client.get("/v1/prices", params={"limit": 10, "option": "rented_gpu_instances"}).headers["etag"]
    c = client.get("/v1/prices", params={"option": "self_built_cluster", "limit": 10}).headers["etag"]
    assert a == b != c
    stale = client.get("/v1/prices", params={"option": "self_built_cluster", "limit": 10}, headers={"If-None-Match": a})
    assert stale.status_code == 200 and stale.json()["items"]


def test_price_comparisons_answer_304_for_the_same_normalised_request(client):
    first = client.post(COMPARE, json=BODY)
    etag = first.headers["etag"]
    # the same request with a default spelled out is the same request
    same = client.post(COMPARE, json={**BODY, "rental_plan": None, "currency": "CNY"}, headers={"If-None-Match": etag})
    assert same.status_code == 304 and same.content == b""
    other = client.post(COMPARE, json={**BODY, "gpus": 16}, headers={"If-None-Match": etag})
    assert other.status_code == 200 and other.headers["etag"] != etag
    as_csv = client.post(COMPARE, json=BODY, headers={"If-None-Match": etag, "Accept": "text/csv"})
    assert as_csv.status_code == 200 and as_csv.headers["etag"] != etag


def test_a_new_knowledge_version_changes_every_etag(databases):
    from conftest import SEEDS, load_seeds, make_client

    url = databases.seeded("sqlite")
    with make_client(url) as c:
        before = c.get("/v1/gpus").headers["etag"]
        compared = c.post(COMPARE, json=BODY).headers["etag"]
        import shutil
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            seeds = Path(tmp) / "seeds"
            shutil.copytree(SEEDS, seeds)
            text = (seeds / "10-hardware.yaml").read_text().replace("name: GeForce RTX 4090", "name: RTX 4090")
            (seeds / "10-hardware.yaml").write_text(text)
            load_seeds(url, seeds)
        import time

        deadline = time.monotonic() + 5
        while c.get("/v1/gpus").headers["etag"] == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert c.get("/v1/gpus", headers={"If-None-Match": before}).status_code == 200
        assert c.post(COMPARE, json=BODY, headers={"If-None-Match": compared}).status_code == 200


def test_no_304_without_the_right_scope(client):
    etag = client.get("/v1/gpus").headers["etag"]
    anonymous = client.get("/v1/gpus", headers={"If-None-Match": etag, "X-API-Key": ""})
    assert anonymous.status_code == 401


# ---- a 304 only where the answer would have been a 200 ---------------------------------------------------


def test_if_none_match_star_never_hides_a_404(client):
    known = client.get("/v1/gpus", params={"limit": 1}).json()["items"][0]["key"]
    assert client.get(f"/v1/gpus/{known}", headers={"If-None-Match": "*"}).status_code == 304
    missing = client.get("/v1/gpus/no-such-gpu", headers={"If-None-Match": "*"})
    assert missing.status_code == 404, missing.text
    assert missing.headers["content-type"].startswith("application/problem+json")
    assert "etag" not in missing.headers


def test_if_none_match_never_hides_a_catalog_400(client):
    etag = client.get("/v1/gpus").headers["etag"]
    bad = client.get("/v1/gpus", params={"limit": -1}, headers={"If-None-Match": "*"})
    assert bad.status_code == 400, bad.text
    assert client.get("/v1/gpus", headers={"If-None-Match": etag}).status_code == 304


def test_if_none_match_never_hides_a_comparison_error(client):
    unknown = client.post(COMPARE, json={**BODY, "gpu_model": "no-such-gpu"}, headers={"If-None-Match": "*"})
    assert unknown.status_code == 422, unknown.text
    assert unknown.json()["field"] == "gpu_model"
    invalid = client.post(COMPARE, json={**BODY, "gpus": 0}, headers={"If-None-Match": "*"})
    assert invalid.status_code == 400, invalid.text
    assert client.post(COMPARE, json=BODY, headers={"If-None-Match": "*"}).status_code == 304


# ---- answers that depend on the caller are private -------------------------------------------------------

PROFILE = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}


def _no_store(r):
    cache_control = {d.strip() for d in r.headers.get("cache-control", "").split(",")}
    assert {"private", "no-store"} <= cache_control, (r.status_code, r.headers)
    assert "etag" not in r.headers


def test_per_key_answers_are_private_and_never_stored(client):
    created = client.post("/v1/recommendations", json=PROFILE)
    assert created.status_code == 201
    _no_store(created)
    _no_store(client.get(created.headers["location"]))
    _no_store(client.get("/v1/audit"))
    _no_store(client.post("/v1/recommendations", params={"store": "false"}, json=PROFILE))
    _no_store(client.post("/v1/evaluations", json={"profiles": [PROFILE]}))
    _no_store(client.post("/v1/break-even", json=PROFILE))
    _no_store(client.post("/v1/training-plans", json={"parameters": 7e9, "tokens": 1e12, "gpu_model": "x", "gpus": 8}))
    _no_store(client.get("/v1/recommendations/no-such-id"))  # problems too
    _no_store(client.get("/v1/gpus", headers={"X-API-Key": "wrong"}))


def test_catalog_answers_stay_revalidatable(client):
    r = client.get("/v1/gpus")
    assert r.headers["cache-control"].startswith("private, max-age=")
    assert "X-API-Key" in r.headers["vary"]
