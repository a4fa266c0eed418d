"""Every negotiated header, on every route of the app, is parsed by code that cannot fail: a malformed
value is a 400/406 problem or is ignored, never a 500.

The routes come from the app's own route table, so a new route is covered without a change here. Two
parts: a fixed list of hostile values (each header × each value × each route), and a hypothesis search
over generated values. The normal suite runs a fast deterministic subset: each route gets each header
once, with one of the hostile values in turn (every value reaches several routes, every route every
header), and the computing routes other than comparisons and recommendations (hundreds of ms each) get
an empty body, refused by validation after the headers are read; a few dozen derandomised generated
examples. ``make fuzz`` (bench/fuzz.py) sets ``HEADER_FUZZ_EXAMPLES`` (and ``HEADER_FUZZ_SEED``): then
every value goes to every route with its documented body, and that many generated examples.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Databases, make_client
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.routes import HTTPRoute
from litestar.testing import TestClient

from app.settings import PROJECT_ROOT, Settings, parse_rate_limit, parse_trusted_proxies
from app.web.bodies import quoted

HEADERS = ["Accept", "Accept-Language", "If-None-Match", "Idempotency-Key", "X-Request-ID", "X-Forwarded-For"]
#: values that broke or could break a parser: quality values that overflow or are not numbers, empty and
#: odd lists, control-free bytes beyond ASCII, lengths far beyond any sane value
HOSTILE = [
    "*/*;q=inf",
    "*/*;q=-inf",
    "*/*;q=1e400",
    "text/csv;q=1e309, */*;q=nan",
    "",
    " , ;;, =;q=",
    "a/b/c;q=0.5;q=2",
    "*/json",
    'W/"", *, "x',
    "\xff\xfe\xe9",
    "::1, 1.2.3.4, ::ffff:999.1.1.1, [::1]:80, unknown",
    "x" * 9000,
]
#: a path parameter's value, by name (a route with one of another name gets "x")
PATH_VALUES = {
    "key": "h100_sxm",
    "rec_id": "00000000-0000-0000-0000-000000000000",
    "path": "swagger",
}
FILE_VALUES = {"/docs/assets": "swagger-ui.css", "/explorer/assets": "explorer.js"}
PROBLEM_JSON = "application/problem+json"
FULL = bool(os.environ.get("HEADER_FUZZ_EXAMPLES"))
EXAMPLES = int(os.environ.get("HEADER_FUZZ_EXAMPLES") or 40)
#: the cheap computing routes, sent their documented body in the fast subset too
CHEAP_BODIES = {"/v1/price-comparisons", "/v1/recommendations", "/v1/evaluations", "/v1/training-plans"}
SEED = os.environ.get("HEADER_FUZZ_SEED")


def request_bodies() -> dict[str, Any]:
    """Each operation's documented request example (the committed OpenAPI document), by path."""
    document = json.loads((PROJECT_ROOT / "openapi" / "v1.json").read_text(encoding="utf-8"))
    return {
        path: ops[m]["requestBody"]["content"]["application/json"]["example"]
        for path, ops in document["paths"].items()
        for m in ops
        if "requestBody" in ops[m]
    }


def concrete(path: str) -> str:
    """A route's path with a value for each parameter."""
    for prefix, value in FILE_VALUES.items():
        if path.startswith(prefix + "/{"):
            return f"{prefix}/{value}"
    return re.sub(r"\{(\w+):\w+\}", lambda m: PATH_VALUES.get(m.group(1), "x"), path)


def operations(app: Litestar) -> list[tuple[str, str]]:
    """(method, concrete path) of every route of the app."""
    return sorted(
        (method, concrete(route.path))
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for method in route.methods
    )


@pytest.fixture(scope="module")
def client(databases: Databases) -> Iterator[TestClient[Litestar]]:
    """Rate limits on (X-Forwarded-For is read, from any peer), a budget no run exhausts."""
    db = databases.seeded("sqlite")
    app_settings = Settings(
        database_url=db,
        rate_limit=parse_rate_limit("100000000/minute"),
        forwarded_allow_ips=parse_trusted_proxies("*"),
    )
    with make_client(db, settings=app_settings) as c:
        yield c


@pytest.fixture(scope="module")
def routes(client: TestClient[Litestar]) -> list[tuple[str, str]]:
    found = operations(client.app)
    paths = {p for _, p in found}
    assert {"/v1/capacity-plans", "/v1/regions", "/v1/price-comparisons", "/health/ready"} <= paths, paths
    return found


BODIES = request_bodies()


def send(client: TestClient[Litestar], method: str, path: str, header: str, value: str, full: bool = True) -> None:
    """One request with ``header: value``; it is answered, and an error is a problem (never a 500).
    ``full=False``: a computing route other than the cheap ones gets an empty object as its body."""
    headers = {header: value.encode("latin-1")}
    bare = path.partition("?")[0]
    body = BODIES.get(bare) if full or bare in CHEAP_BODIES or bare not in BODIES else {}
    if body is not None and method == "POST":
        headers["Content-Type"] = b"application/json"
    r = client.request(method, path, headers=headers, content=json.dumps(body) if body is not None else None)
    where = f"{method} {path} {header}: {quoted(value)} -> {r.status_code} {r.text[:300]}"
    assert r.status_code < 500 or r.status_code == 503, where
    if r.status_code >= 400 and method != "HEAD":
        assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON, where
        assert r.status_code in {400, 401, 403, 404, 405, 406, 409, 422, 503}, where


@pytest.mark.parametrize("header", HEADERS)
def test_hostile_header_values_on_every_route(
    client: TestClient[Litestar], routes: list[tuple[str, str]], header: str
) -> None:
    shift = HEADERS.index(header)
    for i, (method, path) in enumerate(routes):
        for value in HOSTILE if FULL else [HOSTILE[(i + shift) % len(HOSTILE)]]:
            send(client, method, path, header, value, full=FULL)


@pytest.mark.parametrize("path", ["/v1/options", "/v1/price-comparisons", "/v1/recommendations"])
@pytest.mark.parametrize("header", HEADERS)
def test_every_hostile_value_on_the_common_routes(client: TestClient[Litestar], path: str, header: str) -> None:
    method = "GET" if path == "/v1/options" else "POST"
    for value in HOSTILE:
        send(client, method, path + ("?store=false" if path == "/v1/recommendations" else ""), header, value)


@pytest.mark.parametrize("value", ["*/*;q=inf", "*/*;q=-inf", "*/*;q=1e400", "*/*;q=1e309", "*/*;q=2"])
def test_an_overflowing_quality_value_is_a_400_naming_accept(client: TestClient[Litestar], value: str) -> None:
    r = client.post("/v1/price-comparisons", json=BODIES["/v1/price-comparisons"], headers={"Accept": value})
    assert r.status_code == 400, r.text
    assert "Accept" in r.json()["detail"]


def test_quality_values_still_choose(client: TestClient[Litestar]) -> None:
    body = BODIES["/v1/price-comparisons"]
    for accept, media in [
        ("text/csv;q=0.5, application/json", "application/json"),
        ("application/json;q=0.1, text/csv", "text/csv"),
        ("text/*", "text/csv"),
        ("*/*", "application/json"),
        ("application/json;q=0, */*;q=0.001", "text/csv"),
        ("text/html, , */*;q=0.1", "application/json"),
    ]:
        r = client.post("/v1/price-comparisons", json=body, headers={"Accept": accept})
        assert r.status_code == 200 and r.headers["content-type"].startswith(media), (accept, r.status_code)
    assert client.post("/v1/price-comparisons", json=body, headers={"Accept": "image/png"}).status_code == 406


# latin-1 text without the characters a header cannot hold (CR, LF, NUL) nor surrounding spaces
_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f")
_TOKENS = st.sampled_from(["*/*", "text/csv", "application/json", "q=", ";", ",", "W/", '"', "zh", "*", "1e400"])
VALUES = st.one_of(
    st.text(_CHARS, max_size=80),
    st.lists(st.one_of(_TOKENS, st.text(_CHARS, max_size=8), st.floats().map(str)), max_size=12).map("".join),
).map(str.strip)


def fuzz_settings(test: Any) -> Any:
    test = settings(
        max_examples=EXAMPLES,
        derandomize=SEED is None,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )(test)
    return seed(int(SEED))(test) if SEED is not None else test


@fuzz_settings
@given(data=st.data(), header=st.sampled_from(HEADERS), value=VALUES)
def test_generated_header_values_on_every_route(
    client: TestClient[Litestar], routes: list[tuple[str, str]], data: st.DataObject, header: str, value: str
) -> None:
    method, path = data.draw(st.sampled_from(routes))
    send(client, method, path, header, value, full=FULL)
