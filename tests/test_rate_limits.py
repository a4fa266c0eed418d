"""Rate limits per API key (or client address): 429 problem details with Retry-After, shared through Redis."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import REDIS_URL, Databases, create_key, make_client

from app.domain.decisions.schemas import MAX_FULL_PROFILES
from app.domain.shared import costs
from app.openapi_export import openapi_document
from app.settings import Settings, parse_rate_limit, parse_trusted_proxies
from app.web.rate_limits import MemoryCounters, client_address, request_cost

PROBLEM_JSON = "application/problem+json"
OPTIONS = "/v1/options"


@pytest.fixture(scope="module")
def db(databases: Databases) -> str:
    """One seeded SQLite database for the module: the limit does not depend on the backend."""
    return databases.seeded("sqlite")


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
    assert Settings.from_env({}).rate_limit == ("minute", 10_000)
    assert Settings.from_env({"FORWARDED_ALLOW_IPS": "*"}).forwarded_allow_ips is None
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
        # liveness and documentation are never limited; readiness costs the address a unit, not the key
        assert c.get("/health/live").status_code == 200
        assert c.get("/health/ready").status_code == 200
        assert c.get("/docs/openapi.json").status_code == 200
        assert "ratelimit-limit" not in c.get("/health/live").headers


def test_a_304_of_a_known_catalog_etag_is_charged_and_counted_like_any_read(db, keys):
    first, _ = keys
    with make_client(db, api_key=first, settings=limited(db)) as c:
        etag = c.get("/v1/gpus").headers["etag"]  # answered 200: its ETag is now known
        again = c.get("/v1/gpus", headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.headers["ratelimit-remaining"] == "1"
        assert c.get("/v1/gpus", headers={"If-None-Match": etag}).headers["ratelimit-remaining"] == "0"
        assert_429(c.get("/v1/gpus", headers={"If-None-Match": etag}))
    with make_client(db, api_key=first) as unlimited:  # the gauge is the process's
        scraped = unlimited.get("/metrics").text
    gauge = [x for x in scraped.splitlines() if x.startswith("compute_advisor_requests_in_progress{")]
    line = next(x for x in gauge if '"/v1/gpus"' in x)
    assert line.endswith(" 0.0"), gauge  # raised for each 304 and lowered again


def test_without_a_key_the_client_address_is_limited(db, keys):
    with make_client(db, api_key=keys[0], settings=limited(db)) as c:
        # the key's first request costs the address's known-keys budget (not yet verified), then it is verified
        assert c.get(OPTIONS).status_code == 200
        for _ in range(3):
            # the guesses budget: counted all the same, floods never reach the key lookup
            assert c.get(OPTIONS, headers={"X-API-Key": ""}).status_code == 401
        assert_429(c.get(OPTIONS, headers={"X-API-Key": ""}))
        assert c.get(OPTIONS).status_code == 200  # a verified key has its own budget


@pytest.mark.parametrize(
    "made_up",
    [
        lambda i: f"ca_made_up_{i}",  # well-formed, unknown: a fresh string each time
        lambda i: "x" * (300 + i),  # longer than any key
        lambda i: f"  \t{i}; DROP TABLE ",  # not a key at all
    ],
)
def test_made_up_keys_count_against_the_address_and_are_not_looked_up(db, keys, made_up):
    lookups: list[str] = []
    with make_client(db, api_key=keys[0], settings=limited(db)) as c:
        verifier = _verifier(c)
        real = verifier._lookup

        async def counting(key: str) -> Any:
            lookups.append(key)
            return await real(key)

        verifier._lookup = counting
        for i in range(3):
            assert c.get(OPTIONS, headers={"X-API-Key": made_up(i)}).status_code == 401
        looked_up = len(lookups)
        for i in range(3, 10):
            assert_429(c.get(OPTIONS, headers={"X-API-Key": made_up(i)}))
        assert len(lookups) == looked_up  # refused before the key lookup


def _verifier(client: Any) -> Any:
    from app.web.edge import Edge

    edge = client.app.asgi_handler
    if isinstance(edge, Edge):
        return edge.verifier
    raise AssertionError("no Edge")


def test_the_key_identity_is_the_normalised_header(db, keys):
    with make_client(db, api_key=keys[0], settings=limited(db)) as c:
        assert c.get(OPTIONS).headers["ratelimit-remaining"] == "2"
        assert c.get(OPTIONS, headers={"X-API-Key": f"  {keys[0]} "}).headers["ratelimit-remaining"] == "1"
        assert c.get(OPTIONS, headers={"X-API-Key": f"{keys[0]}\t"}).headers["ratelimit-remaining"] == "0"


def test_x_forwarded_for_is_believed_only_from_trusted_proxies(db, keys):
    # the test client's peer is "testclient": no proxy is trusted by default
    with make_client(db, api_key=None, settings=limited(db)) as c:
        for i in range(3):
            assert c.get(OPTIONS, headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code == 401
        assert_429(c.get(OPTIONS, headers={"X-Forwarded-For": "10.0.0.9"}))
    trusting = limited(db, forwarded_allow_ips=parse_trusted_proxies("*"))
    with make_client(db, api_key=None, settings=trusting) as c:
        for _ in range(3):
            assert c.get(OPTIONS, headers={"X-Forwarded-For": "10.0.0.1"}).status_code == 401
        assert_429(c.get(OPTIONS, headers={"X-Forwarded-For": "10.0.0.1"}))
        # another client behind the proxy has its own budget
        assert c.get(OPTIONS, headers={"X-Forwarded-For": "10.0.0.2"}).status_code == 401


def test_client_address_takes_the_right_most_hop_that_is_not_a_proxy():
    proxies = parse_trusted_proxies("127.0.0.1, 10.1.0.0/16")

    def scope(peer: str, xff: str | None) -> Any:
        headers = [(b"x-forwarded-for", xff.encode())] if xff is not None else []
        return {"client": (peer, 1234), "headers": headers}

    assert client_address(scope("203.0.113.5", "1.2.3.4"), proxies) == "203.0.113.5"  # untrusted peer
    assert client_address(scope("127.0.0.1", "1.2.3.4"), proxies) == "1.2.3.4"
    assert client_address(scope("127.0.0.1", "6.6.6.6, 1.2.3.4, 10.1.2.3"), proxies) == "1.2.3.4"
    assert client_address(scope("127.0.0.1", None), proxies) == "127.0.0.1"
    with pytest.raises(ValueError, match="FORWARDED_ALLOW_IPS"):
        parse_trusted_proxies("not-an-address")


def test_no_proxy_is_trusted_by_default():
    """From 127.0.0.1 (the old default trusted address), a rotating X-Forwarded-For got a fresh budget each."""
    assert Settings().forwarded_allow_ips == () == Settings.from_env({}).forwarded_allow_ips
    default = Settings.from_env({}).forwarded_allow_ips
    scopes = [
        {"client": ("127.0.0.1", 1234), "headers": [(b"x-forwarded-for", f"10.9.0.{i}".encode())]} for i in range(5)
    ]
    assert {client_address(s, default) for s in scopes} == {"127.0.0.1"}


def test_a_trusted_proxy_names_the_right_most_untrusted_address_in_its_normal_form():
    proxies = parse_trusted_proxies("10.1.0.0/16")

    def address(xff: str) -> str:
        return client_address({"client": ("10.1.0.1", 1234), "headers": [(b"x-forwarded-for", xff.encode())]}, proxies)

    assert address("6.6.6.6, 2001:db8:0::1") == "2001:db8::1" == address("2001:DB8::0:1")
    assert address("6.6.6.6, 1.2.3.4, 10.1.9.9") == "1.2.3.4"
    # a hop that is not an address stops the search at the proxy that forwarded it
    assert address("1.2.3.4, made-up-1") == "10.1.0.1"
    assert address("1.2.3.4, made-up-2, 10.1.9.9") == "10.1.9.9"
    assert address("10.1.2.2, 10.1.3.3") == "10.1.2.2"  # proxies only: the farthest


def test_expired_in_memory_counters_are_swept():
    now = [1000.0]
    counters = MemoryCounters(clock=lambda: now[0])

    async def run() -> None:
        for i in range(100):
            await counters.add(f"addr:{i}", 1, 60)
        assert len(counters) == 100
        now[0] += 61
        await counters.add("addr:new", 1, 60)
        assert len(counters) == 1

    asyncio.run(run())


# ---- cost --------------------------------------------------------------------------------------------

PROFILE = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}


def test_a_request_costs_its_work(db, keys):
    with make_client(db, api_key=keys[0], settings=limited(db, "100/minute")) as c:
        r = c.get(OPTIONS)
        assert r.headers["ratelimit-remaining"] == "99"
        r = c.post("/v1/evaluations", json={"profiles": [PROFILE] * 10})
        assert r.status_code == 200 and r.headers["ratelimit-remaining"] == str(99 - 10)
        r = c.post("/v1/evaluations", json={"profiles": [PROFILE] * 10, "detail": "full"})
        assert r.status_code == 200 and r.headers["ratelimit-remaining"] == str(89 - 20)
        r = c.post("/v1/uncertainty", json={**PROFILE, "draws": 2500})
        assert r.status_code == 200 and r.headers["ratelimit-remaining"] == str(69 - 4)
        r = c.post("/v1/sensitivity", json=PROFILE)
        assert r.status_code == 200 and r.headers["ratelimit-remaining"] == str(65 - costs.SENSITIVITY_UNITS)
        # more than what is left: 429, and nothing is taken
        left = 65 - costs.SENSITIVITY_UNITS
        r = c.post("/v1/evaluations", json={"profiles": [PROFILE] * (left + 1)})
        assert_429_of(r, 100)
        assert c.get(OPTIONS).headers["ratelimit-remaining"] == str(left - 1)


def test_a_request_costing_more_than_the_whole_budget_is_a_422(db, keys):
    with make_client(db, api_key=keys[0], settings=limited(db, "100/minute")) as c:
        r = c.post("/v1/break-even", json=PROFILE)  # 100 units: exactly the budget
        assert r.status_code == 200
        over = c.post("/v1/uncertainty", json={**PROFILE, "draws": 100_000})
        assert over.status_code == 422, over.text
        assert "more than the whole budget" in over.json()["detail"]


def test_detail_full_has_a_maximum_of_profiles(db, keys):
    with make_client(db, api_key=keys[0], settings=limited(db, "off")) as c:
        body = {"profiles": [PROFILE] * (MAX_FULL_PROFILES + 1), "detail": "full"}
        r = c.post("/v1/evaluations", json=body)
        assert r.status_code == 422, r.text[:300]
        problem = r.json()
        assert problem["type"] == "urn:compute-advisor:problem:too-much-work"
        assert problem["field"] == "profiles" and str(MAX_FULL_PROFILES) in problem["detail"]


def test_a_hostile_body_costs_one_unit_and_is_a_400(db, keys):
    with make_client(db, api_key=keys[0], settings=limited(db, "100/minute")) as c:
        assert c.get(OPTIONS).headers["ratelimit-remaining"] == "99"
        r = c.post(
            "/v1/uncertainty",
            content=b'{"draws": 1000, "draws": 2000}',
            headers={"Content-Type": "application/json"},
        )
        assert r.status_code == 400 and "appears twice" in r.json()["detail"]
        assert r.headers["ratelimit-remaining"] == "98"


def test_a_hostile_or_malformed_body_costs_one_unit():
    assert costs.evaluations({"profiles": "many"}) == 1
    assert costs.evaluations(None) == 1
    assert costs.uncertainty({"draws": True}) == 1
    assert costs.uncertainty({"draws": 10**12}) == 1
    assert costs.uncertainty({}) == 11  # the default 10,000 draws
    assert request_cost(lambda body: 1 // 0, "POST", {}) == 1


def test_a_demand_over_time_costs_what_a_capacity_plan_costs():
    """With ``demand`` each option is priced as a capacity plan's single portfolio: units by its phases
    (tests/test_fair_heavy_work.py has the formulas)."""
    ramp = {"demand": {"start_gpus": 8, "growth_per_year": 1}, "horizon_years": 4}
    assert costs.comparison(ramp) == costs.recommendation(ramp) == costs.demand_over_time(ramp) > costs.COMPARISON_UNITS
    assert costs.comparison({"gpus": 8, "demand": None}) == costs.COMPARISON_UNITS
    assert costs.recommendation([ramp]) == costs.RECOMMENDATION_UNITS


def assert_429_of(r: Any, limit: int) -> None:
    assert r.status_code == 429, r.text[:300]
    assert r.headers["ratelimit-limit"] == str(limit)
    assert int(r.headers["retry-after"]) >= 1


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


def test_with_redis_two_app_instances_share_one_budget(db, keys, redis_namespace):
    redis, namespace = redis_namespace
    # deadlines far above a round trip: this is about sharing, not deadlines (a busy machine is slow)
    patient = {"redis_timeout_ms": 5000, "redis_connect_timeout_ms": 5000}
    settings = limited(db, redis_url=REDIS_URL, rate_limit_namespace=namespace, **patient)
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
        # cost, counted across both: 10 profiles from a, seen by b
        settings_cost = limited(
            db, "100/minute", redis_url=REDIS_URL, rate_limit_namespace=namespace + ":cost", **patient
        )
        with (
            make_client(db, api_key=keys[1], settings=settings_cost) as c,
            make_client(db, api_key=keys[1], settings=settings_cost) as d,
        ):
            assert c.post("/v1/evaluations", json={"profiles": [PROFILE] * 10}).headers["ratelimit-remaining"] == "90"
            assert d.get(OPTIONS).headers["ratelimit-remaining"] == "89"
        stored = [k.decode() for k in redis.scan_iter(match=f"{namespace}*")]
    # one counter per key and one for the address's known keys (a key's requests until this worker verified it)
    assert len([k for k in stored if ":cost:" not in k]) == 3, stored
    assert any(":known:" in k for k in stored), stored
    for name in stored:  # the store keys carry a hash, never the key itself
        assert keys[0] not in name and keys[1] not in name


def test_a_redis_that_does_not_answer_is_replaced_by_each_workers_counts(db, keys):
    settings = limited(db, redis_url="redis://127.0.0.1:1/0")  # nothing listens on port 1
    with make_client(db, api_key=keys[0], settings=settings) as c:
        for _ in range(3):
            assert c.get(OPTIONS).status_code == 200
        assert_429(c.get(OPTIONS))  # limits hold without Redis (tests/test_dependency_deadlines.py)


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
    assert "429" not in document["paths"]["/health/live"]["get"]["responses"]
    assert "Retry-After" in document["paths"]["/health/ready"]["get"]["responses"]["429"]["headers"]
