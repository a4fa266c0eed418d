"""The key and the limit at the edge (``app.web.edge``): no Litestar middleware authenticates or limits,
what a route asks is read once per route, a refusal is answered before the router runs, behind the same
CORS layer as every answer, and each request's key is charged once — by the edge, or for a body by the
app's ``before_request``."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Databases, create_key, make_client

from app.settings import Settings, parse_rate_limit
from app.web import edge as edge_module
from app.web.edge import Edge

OPTIONS = "/v1/options"
ORIGIN = "https://explorer.example.org"
COMPARISON = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}


@pytest.fixture(scope="module")
def db(databases: Databases) -> str:
    return databases.seeded("sqlite")


@pytest.fixture(scope="module")
def key(db: str) -> str:
    return create_key(db, ["admin"], name="edge")[1]


def limited(url: str, limit: str = "100/minute", **kw: Any) -> Settings:
    return Settings(
        database_url=url, knowledge_refresh_seconds=60, rate_limit=parse_rate_limit(limit), gc_freeze=False, **kw
    )


def the_edge(client: Any) -> Edge:
    edge = client.app.asgi_handler
    assert isinstance(edge, Edge)
    return edge


def routed_paths(client: Any) -> list[str]:
    """The paths of the requests the edge passes on to the application (its router), as they come."""
    edge = the_edge(client)
    inner, routed = edge.app, []

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        routed.append(scope["path"])
        await inner(scope, receive, send)

    edge.app = counting
    return routed


def test_no_litestar_middleware_authenticates_or_limits(db, key):
    with make_client(db, api_key=key, settings=limited(db)) as c:
        assert c.app.middleware == []  # tracing is off: the app adds no middleware of its own
        for route in c.app.routes:
            for handler in getattr(route, "route_handlers", []):
                for middleware in handler.resolve_middleware():
                    made_by = getattr(getattr(middleware, "middleware", middleware), "__module__", "")
                    assert made_by not in ("app.web.auth", "app.web.rate_limits"), (handler, middleware)
        assert c.get(OPTIONS).status_code == 200
        assert c.get(OPTIONS, headers={"X-API-Key": ""}).status_code == 401


def test_what_a_route_asks_is_read_once_per_route(db, key, monkeypatch):
    read: list[str] = []
    of = edge_module.RouteRules.of

    def counted(handler: Any, template: str) -> edge_module.RouteRules:
        read.append(template)
        return of(handler, template)

    monkeypatch.setattr(edge_module.RouteRules, "of", counted)
    with make_client(db, api_key=key, settings=limited(db)) as c:
        for _ in range(3):
            assert c.get(OPTIONS).status_code == 200
            assert c.get("/v1/gpus").status_code == 200
            assert c.get("/health/live").status_code == 200
        rules = the_edge(c).rules
    assert sorted(read) == ["/health/live", "/v1/gpus", OPTIONS]
    scoped = next(r for (_, template), r in rules.items() if template == OPTIONS)
    assert (scoped.required_scope, scoped.asks_key, scoped.open) == ("catalog:read", True, False)
    live = next(r for (_, template), r in rules.items() if template == "/health/live")
    assert (live.asks_key, live.open, live.charged) == (False, True, False)


def test_a_refusal_is_answered_before_the_router(db, key):
    with make_client(db, api_key=None, settings=limited(db)) as c:
        routed = routed_paths(c)
        r = c.get(OPTIONS + "/", headers={"Accept-Language": "zh"})
        assert routed == []
        assert r.status_code == 401 and r.headers["content-type"].startswith("application/problem+json")
        assert r.headers["www-authenticate"] == 'ApiKey header="X-API-Key"'
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["cache-control"]
        assert r.headers["content-language"] and r.headers["ratelimit-remaining"] == "99"
        body = r.json()
        assert body["type"] == "urn:compute-advisor:problem:unauthenticated"
        assert body["instance"] == OPTIONS and body["request_id"] == r.headers["x-request-id"]
        assert c.get(OPTIONS, headers={"X-API-Key": key}).status_code == 200
        assert routed == [OPTIONS]


def test_a_refusal_carries_the_cors_headers_and_a_preflight_is_not_charged(db):
    preflight = {
        "Origin": ORIGIN,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-api-key",
    }
    with make_client(db, api_key=None, settings=limited(db, "3/minute", cors_origins=(ORIGIN,))) as c:
        for _ in range(5):
            r = c.options(OPTIONS, headers=preflight)
            assert r.status_code in (200, 204) and "ratelimit-remaining" not in r.headers
        r = c.get(OPTIONS, headers={"Origin": ORIGIN})
        assert r.status_code == 401 and r.headers["access-control-allow-origin"] == ORIGIN
        assert r.headers["ratelimit-remaining"] == "2"


def test_each_request_is_charged_once_to_its_key(db, key):
    with make_client(db, api_key=key, settings=limited(db)) as c:
        assert c.get(OPTIONS).headers["ratelimit-remaining"] == "99"  # the key's charge, by the edge
        assert c.get(OPTIONS).headers["ratelimit-remaining"] == "98"
        r = c.post("/v1/price-comparisons", json=COMPARISON)  # one unit, read from the body by before_request
        assert r.status_code == 200, r.text
        assert r.headers["ratelimit-remaining"] == "97"
        r = c.post("/v1/price-comparisons", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.headers["ratelimit-remaining"] == "96"  # refused: charged by its size
        assert c.get(OPTIONS).headers["ratelimit-remaining"] == "95"


def test_a_key_without_the_scope_is_refused_by_the_edge_with_its_name_in_the_log(db, caplog):
    catalog_only = create_key(db, ["catalog:read"], name="catalog only")[1]
    with make_client(db, api_key=catalog_only, settings=limited(db)) as c:
        caplog.set_level("INFO", logger="app.request")
        r = c.get("/metrics")
        assert r.status_code == 403 and r.json()["type"] == "urn:compute-advisor:problem:forbidden"
    line = next(rec for rec in caplog.records if rec.name == "app.request" and "/metrics" in rec.getMessage())
    assert line.fields["key"] == "catalog only" and line.fields["route"] == "/metrics"  # type: ignore[attr-defined]


def test_a_known_etag_is_answered_304_by_the_edge_as_the_route_would(db, key):
    """The route answers an ETag's first 200; a request naming it is the edge's 304 (the router never runs),
    after the key and its charge, with the 200's caching headers, the CORS headers and the request's metrics;
    a stale or unknown ETag still goes to the route."""
    with make_client(db, api_key=key, settings=limited(db, cors_origins=(ORIGIN,))) as c:
        routed = routed_paths(c)
        first = c.get("/v1/gpus/h100_sxm", headers={"Origin": ORIGIN})
        assert first.status_code == 200 and routed == ["/v1/gpus/h100_sxm"]
        etag = first.headers["etag"]
        r = c.get("/v1/gpus/h100_sxm", headers={"Origin": ORIGIN, "If-None-Match": etag})
        assert r.status_code == 304 and r.content == b"" and routed == ["/v1/gpus/h100_sxm"]
        assert (r.headers["etag"], r.headers["cache-control"]) == (etag, first.headers["cache-control"])
        assert r.headers["access-control-allow-origin"] == ORIGIN and r.headers["vary"] == first.headers["vary"]
        assert r.headers["ratelimit-remaining"] == "98" and r.headers["x-request-id"]
        assert "content-type" not in r.headers
        assert c.get("/v1/gpus/h100_sxm", headers={"If-None-Match": '"stale"'}).status_code == 200
        assert c.get("/v1/gpus/h100_sxm", headers={"If-None-Match": etag, "X-API-Key": ""}).status_code == 401
        assert routed == ["/v1/gpus/h100_sxm"] * 2
        scraped = c.get("/metrics").text
    labels = ('method="GET"', 'path="/v1/gpus/{key}"', 'status_code="304"')
    counted = [line for line in scraped.splitlines() if line.startswith("compute_advisor_requests_total{")]
    assert any(all(label in line for label in labels) for line in counted), counted
