"""What a browser may do with the service's answers (app/web/security.py), what a body must declare
(app/web/negotiation.py: JSON in UTF-8, 415 otherwise), and who sees readiness details."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Databases, make_client
from litestar import Litestar
from litestar.testing import TestClient

from app.web.security import CONTENT_SECURITY_POLICY

PROBLEM_JSON = "application/problem+json"
COMPARE = "/v1/price-comparisons"
BASE: dict[str, Any] = {"gpus": 8, "utilization": 0.6, "horizon_years": 3}
PAGES = ["/docs", "/docs/swagger", "/explorer"]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)


@pytest.fixture(scope="module")
def db(databases: Databases) -> str:
    return databases.seeded("sqlite")


@pytest.fixture(scope="module")
def anonymous(db: str) -> Iterator[TestClient[Litestar]]:
    with make_client(db, api_key=None) as c:
        yield c


@pytest.fixture(scope="module")
def client(db: str) -> Iterator[TestClient[Litestar]]:
    with make_client(db) as c:
        yield c


# ---- security headers -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES)
def test_pages_send_a_content_security_policy(anonymous: TestClient[Litestar], path: str) -> None:
    r = anonymous.get(path)
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert csp == CONTENT_SECURITY_POLICY
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["default-src"] == "'none'"
    assert "unsafe" not in csp
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("path", PAGES)
def test_pages_hold_no_inline_script_or_style(anonymous: TestClient[Litestar], path: str) -> None:
    """The policy blocks inline code: the page must have none (its data block is not code)."""
    html = anonymous.get(path).text
    assert not INLINE_SCRIPT.search(html), INLINE_SCRIPT.search(html)
    assert "<style" not in html.lower()
    assert not re.search(r"\sstyle\s*=", html, re.I)
    assert not re.search(r"\son[a-z]+\s*=", html, re.I)  # no onclick= and the like
    for src in re.findall(r"""<script[^>]*\bsrc=["']([^"']+)""", html):
        assert anonymous.get(src).status_code == 200, src


def test_every_answer_is_nosniff(client: TestClient[Litestar]) -> None:
    for r in (client.get("/v1/options"), client.get("/nope"), client.post(COMPARE, json=BASE)):
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "content-security-policy" not in r.headers  # the API's answers are not pages


def test_the_docs_page_loads_its_document_from_the_service(anonymous: TestClient[Litestar]) -> None:
    init = anonymous.get("/docs/assets/swagger-init.js")
    assert init.status_code == 200 and "/docs/openapi.json" in init.text
    assert anonymous.get("/docs/openapi.json").json()["info"]["title"] == "compute-advisor"


# ---- media types of bodies ---------------------------------------------------------------------------


def test_a_body_without_content_type_is_415(client: TestClient[Litestar]) -> None:
    r = client.post(COMPARE, content=json.dumps(BASE))
    assert r.status_code == 415, r.text
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    assert "Content-Type" in r.json()["detail"]


@pytest.mark.parametrize("charset", ["latin-1", "iso-8859-1", "utf-16", '"utf-7"'])
def test_a_charset_other_than_utf8_is_415(client: TestClient[Litestar], charset: str) -> None:
    r = client.post(COMPARE, content=json.dumps(BASE), headers={"Content-Type": f"application/json; charset={charset}"})
    assert r.status_code == 415, r.text
    assert "UTF-8" in r.json()["detail"]


@pytest.mark.parametrize(
    "media", ["application/json", "application/json; charset=utf-8", "application/json;charset=UTF8"]
)
def test_json_in_utf8_is_read(client: TestClient[Litestar], media: str) -> None:
    assert client.post(COMPARE, content=json.dumps(BASE), headers={"Content-Type": media}).status_code == 200


def test_a_post_without_a_body_is_still_a_400_naming_it(client: TestClient[Litestar]) -> None:
    r = client.post(COMPARE)
    assert r.status_code == 400, r.text


# ---- readiness details -------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "", "not-a-key", "ca_" + "0" * 40, "x" * 5000])
def test_readiness_without_a_valid_key_shows_no_details(anonymous: TestClient[Litestar], key: str | None) -> None:
    r = anonymous.get("/health/ready", headers={"X-API-Key": key} if key is not None else {})
    assert r.status_code == 200, r.text
    checks = r.json()["checks"]
    assert "worker_pid" not in checks and "knowledge_read_at" not in checks
    assert checks["migration"] == {"ok": True}
    assert checks["database"] == "ok" and checks["knowledge_version"]


def test_readiness_with_a_key_shows_its_details(client: TestClient[Litestar]) -> None:
    checks = client.get("/health/ready").json()["checks"]
    assert isinstance(checks["worker_pid"], int)
    assert checks["migration"]["current"] == checks["migration"]["head"]
    assert checks["knowledge_read_at"]
