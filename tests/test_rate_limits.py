"""Rate limits per API key (or client address): 429 problem details with Retry-After, shared through Redis."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Databases, create_key, load_seeds, make_client, migrate

from app.openapi_export import openapi_document
from app.settings import Settings, parse_rate_limit

PROBLEM_JSON = "application/problem+json"
REDIS_URL = "redis://127.0.0.1:6379/15"
OPTIONS = "/v1/options"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One seeded SQLite database for the module: the limit does not depend on the backend."""
    dbs = Databases(tmp_path_factory.mktemp("rate"))
    url = dbs.new("sqlite")
    migrate(url)
    load_seeds(url)
    return url


@pytest.fixture(scope="module")
def keys(db: str) -> tuple[str, str]:
    return create_key(db, ["admin"], name="first")[1], create_key(db, ["admin"], name="second")[1]


def limited(url: str, limit: str = "3/minute", **kw: Any) -> Settings:
    return Settings(database_url=url, knowledge_refresh_seconds=60, rate_limit=parse_rate_limit(limit), **kw)


def assert_429(r: Any) -> dict[str, Any]:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert r.headers["ratelimit-remaining"] == "0"
    assert r.headers["ratelimit-limit"] == "3"
    assert r.headers["ratelimit-policy"] == "3; w=60"
    assert r.headers["x-request-id"]
    body = r.json()
    assert body["type"] == "urn:compute-advisor:problem:too-many-requests"
    assert body["status"] == 429 and body["title"] and "retry after" in body["detail"]
    return body


# ---- settings -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("600/minute", ("minute", 600)),
        ("10/second", ("second", 10)),
        ("10/s", ("second", 10)),
        ("5/hours", ("hour", 5)),
        ("1000/day", ("day", 1000)),
        (" 20 / Minute ", ("minute", 20)),
        ("off", None),
        ("OFF", None),
    ],
)
def test_rate_limit_setting_is_parsed(text, parsed):
    assert parse_rate_limit(text) == parsed


@pytest.mark.parametrize("text", ["600", "600/week", "0/minute", "-1/minute", "a/minute", "600 per minute"])
def test_a_bad_rate_limit_setting_is_refused_naming_the_variable(text):
    with pytest.raises(ValueError, match="RATE_LIMIT"):
        parse_rate_limit(text)


def test_settings_from_env():
    assert Settings.from_env({}).rate_limit == ("minute", 600)
    assert Settings.from_env({}).redis_url is None
    s = Settings.from_env({"RATE_LIMIT": "off", "REDIS_URL": REDIS_URL})
    assert s.rate_limit is None and s.redis_url == REDIS_URL


# ---- per key, per process ------------------------------------------------------------------------


def test_the_limit_answers_429_problem_with_retry_after_per_key(db, keys):
    first, second = keys
    with make_client(db, api_key=first, settings=limited(db)) as c:
        for remaining in ("2", "1", "0"):
            r = c.get(OPTIONS)
            assert r.status_code == 200, r.text
            assert r.headers["ratelimit-remaining"] == remaining
            assert r.headers["ratelimit-limit"] == "3"
        assert_429(c.get(OPTIONS))
        assert_429(c.post("/v1/price-comparisons", json={"gpus": 8, "utilization": 0.5, "horizon_years": 1}))
        # another key has its own budget
        assert c.get(OPTIONS, headers={"X-API-Key": second}).status_code == 200
        # probes and documentation are never limited
        assert c.get("/health/live").status_code == 200
        assert c.get("/health/ready").status_code == 200
        assert c.get("/docs/openapi.json").status_code == 200
        assert "ratelimit-limit" not in c.get("/health/live").headers


def test_without_a_key_the_client_address_is_limited(db, keys):
    with make_client(db, api_key=None, settings=limited(db)) as c:
        for _ in range(3):
            assert c.get(OPTIONS).status_code == 401  # counted all the same: floods never reach the key lookup
        assert_429(c.get(OPTIONS))
        assert c.get(OPTIONS, headers={"X-API-Key": keys[0]}).status_code == 200


def test_each_process_counts_alone_without_redis(db, keys):
    """Without REDIS_URL each app (worker) has its own counters: the documented N × workers."""
    with (
        make_client(db, api_key=keys[0], settings=limited(db)) as a,
        make_client(db, api_key=keys[0], settings=limited(db)) as b,
    ):
        for _ in range(3):
            assert a.get(OPTIONS).status_code == 200
        assert_429(a.get(OPTIONS))
        assert b.get(OPTIONS).status_code == 200


def test_off_disables_the_limit(db, keys):
    with make_client(db, api_key=keys[0], settings=limited(db, "off")) as c:
        for _ in range(10):
            r = c.get(OPTIONS)
            assert r.status_code == 200
            assert "ratelimit-limit" not in r.headers


# ---- across workers: Redis -----------------------------------------------------------------------


def _redis_or_skip() -> Any:
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except Exception as exc:
        client.close()
        why = f"Redis at {REDIS_URL} does not answer ({type(exc).__name__}: {exc}): shared limits untested"
        if os.environ.get("REQUIRE_REDIS") == "1":
            pytest.fail(f"REQUIRE_REDIS=1 but {why}")
        pytest.skip(why)
    return client


@pytest.fixture
def redis_namespace() -> Iterator[tuple[Any, str]]:
    """A Redis client and a key prefix of this test's own, whose keys are deleted afterwards."""
    client = _redis_or_skip()
    namespace = f"compute-advisor-test:{uuid.uuid4().hex}"
    try:
        yield client, namespace
    finally:
        for key in client.scan_iter(match=f"{namespace}*"):
            client.delete(key)
        client.close()


def test_with_redis_two_app_instances_share_one_budget(db, keys, redis_namespace):
    redis, namespace = redis_namespace
    settings = limited(db, redis_url=REDIS_URL, rate_limit_namespace=namespace)
    with (
        make_client(db, api_key=keys[0], settings=settings) as a,
        make_client(db, api_key=keys[0], settings=settings) as b,
    ):
        assert a.get(OPTIONS).status_code == 200
        assert b.get(OPTIONS).headers["ratelimit-remaining"] == "1"
        assert a.get(OPTIONS).headers["ratelimit-remaining"] == "0"
        assert_429(b.get(OPTIONS))
        assert_429(a.get(OPTIONS))
        assert b.get(OPTIONS, headers={"X-API-Key": keys[1]}).status_code == 200
        stored = [k.decode() for k in redis.scan_iter(match=f"{namespace}*")]
    assert len(stored) == 2, stored  # one counter per key, under this namespace
    for name in stored:  # the store keys carry a hash, never the key itself
        assert keys[0] not in name and keys[1] not in name


def test_a_redis_that_does_not_answer_lets_requests_through(db, keys):
    settings = limited(db, redis_url="redis://127.0.0.1:1/0")  # nothing listens on port 1
    with make_client(db, api_key=keys[0], settings=settings) as c:
        for _ in range(5):
            assert c.get(OPTIONS).status_code == 200


# ---- documentation --------------------------------------------------------------------------------


def test_every_v1_operation_documents_429_with_retry_after():
    document = openapi_document()
    for path, item in document["paths"].items():
        for method, op in item.items():
            if not path.startswith("/v1/") or not isinstance(op, dict) or "responses" not in op:
                continue
            response = op["responses"].get("429")
            assert response is not None, f"{method.upper()} {path} does not document 429"
            assert list(response["content"]) == [PROBLEM_JSON]
            assert {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(
                response["headers"]
            ), (method, path)
    for path in ("/health/live", "/health/ready"):
        assert "429" not in document["paths"][path]["get"]["responses"]
