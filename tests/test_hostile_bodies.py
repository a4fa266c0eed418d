"""Hostile request bodies are 400 problems on every POST endpoint, never a 5xx (app/web/bodies.py).

Each case is sent raw (bytes as an attacker would write them, not through a JSON encoder), to each
endpoint family: comparisons, recommendations, batch evaluations, the three insights and training plans.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import make_client
from litestar import Litestar
from litestar.testing import TestClient

from app.web.bodies import BODY_LIMITS, BodyRefused, strict_json

PROBLEM_JSON = "application/problem+json"
ENDPOINTS = [
    "/v1/price-comparisons",
    "/v1/recommendations",
    "/v1/evaluations",
    "/v1/break-even",
    "/v1/sensitivity",
    "/v1/uncertainty",
    "/v1/training-plans",
]
DEEP = 50_000

#: name -> (raw body, words the detail must contain)
CASES: dict[str, tuple[bytes, str]] = {
    "nested 50,000 levels": (b'{"gpus": ' + b"[" * DEEP + b"]" * DEEP + b"}", "nested too deeply"),
    "nested 50,000 objects": (b'{"a":' * DEEP + b"1" + b"}" * DEEP, "nested too deeply"),
    "unclosed 50,000 levels": (b'{"gpus": ' + b"[" * DEEP, "nested too deeply"),
    "number beyond a double": (b'{"gpus": 8, "utilization": 1e400, "horizon_years": 3}', "too large for a double"),
    "negative beyond a double": (b'{"gpus": 8, "utilization": -1e400, "horizon_years": 3}', "too large"),
    "integer of 5,000 digits": (b'{"gpus": ' + b"9" * 5000 + b', "utilization": 0.5, "horizon_years": 3}', "number"),
    "NaN": (b'{"gpus": 8, "utilization": NaN, "horizon_years": 3}', "NaN is not a JSON number"),
    "Infinity": (b'{"gpus": 8, "utilization": Infinity, "horizon_years": 3}', "Infinity is not a JSON number"),
    "-Infinity": (b'{"gpus": 8, "utilization": -Infinity, "horizon_years": 3}', "Infinity is not a JSON number"),
    "lone surrogate in a value": (
        b'{"gpus": 8, "utilization": 0.5, "horizon_years": 3, "currency": "\\ud800"}',
        "lone UTF-16 surrogate",
    ),
    "lone low surrogate in a key": (b'{"\\udc00": 1, "gpus": 8}', "lone UTF-16 surrogate"),
    "encoded surrogate bytes": (b'{"gpus": 8, "currency": "\xed\xa0\x80"}', "not UTF-8"),
    "not UTF-8": (b'{"gpus": 8, "currency": "\xff"}', "not UTF-8"),
    "duplicate key": (b'{"gpus": 8, "gpus": 9, "utilization": 0.5, "horizon_years": 3}', 'key "gpus" appears twice'),
    "duplicate nested key": (
        b'{"gpus": 8, "utilization": 0.5, "horizon_years": 3, "weights": {"cost": 1, "cost": 2}}',
        'key "cost" appears twice',
    ),
    "trailing garbage": (b'{"gpus": 8} {"gpus": 9}', "Extra data"),
}


@pytest.fixture(scope="module")
def client(seeded_db: str) -> Iterator[TestClient[Litestar]]:
    with make_client(seeded_db) as c:
        yield c


def assert_400(r: Any, words: str) -> None:
    assert r.status_code == 400, r.text[:500]
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    body = r.json()
    assert body["status"] == 400 and body["type"].endswith(":invalid-request"), body
    assert words in body["detail"], body["detail"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("case", list(CASES))
def test_hostile_body_is_a_400_problem(client: TestClient[Litestar], endpoint: str, case: str) -> None:
    """A body over the route's own size limit is refused unread (413); the batch route reads every case."""
    raw, words = CASES[case]
    r = client.post(endpoint, content=raw, headers={"Content-Type": "application/json"})
    if len(raw) > BODY_LIMITS.get(endpoint, len(raw)):
        assert r.status_code == 413, r.text[:500]
        assert r.json()["type"].endswith(":body-too-large")
    else:
        assert_400(r, words)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_deep_but_readable_nesting_is_a_validation_400(client: TestClient[Litestar], endpoint: str) -> None:
    """Nesting the reader accepts (500 levels) where a number is expected: the schema refuses it, naming the field."""
    raw = b'{"gpus": ' + b"[" * 500 + b"]" * 500 + b', "utilization": 0.5, "horizon_years": 3}'
    r = client.post(endpoint, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text[:500]
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON


def test_paired_surrogates_and_escapes_are_read() -> None:
    """A surrogate pair is one character, not a lone surrogate; ordinary escapes stay as they are."""
    assert strict_json(b'{"a": "\\ud83d\\ude00", "b": "\\u00e9\\n"}') == {"a": "\U0001f600", "b": "\u00e9\n"}
    assert strict_json(b'{"x": -3.5e2, "y": [1, 2.0, true, null]}') == {"x": -350.0, "y": [1, 2.0, True, None]}


@pytest.mark.parametrize("case", list(CASES))
def test_strict_json_refuses_each_case(case: str) -> None:
    raw, words = CASES[case]
    with pytest.raises(BodyRefused) as info:
        strict_json(raw)
    assert words in str(info.value)
