"""Bodies are bounded before they are parsed: a size limit per route (413), limits on keys per object,
string length and array length while the strict reader reads (400 at the first violation), problems
that never echo more than a bounded part of the input, and refused bodies charged by their size.

tests/test_body_limits_served.py holds the served check: such bodies in parallel leave /health/live
answering.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import make_client
from litestar import Litestar
from litestar.testing import TestClient

from app.settings import Settings
from app.web.bodies import (
    BODY_LIMITS,
    MAX_ARRAY,
    MAX_KEYS,
    MAX_STRING,
    OFF_LOOP_BYTES,
    SINGLE_BODY_BYTES,
    BodyRefused,
    strict_json,
)
from app.web.problems import MAX_ERRORS
from app.web.rate_limits import REFUSED_BYTES_PER_UNIT, refused_cost

PROBLEM_JSON = "application/problem+json"
JSON_TYPE = {"Content-Type": "application/json"}
COMPARE = "/v1/price-comparisons"
EVALUATE = "/v1/evaluations"
BASE: dict[str, Any] = {"gpus": 8, "utilization": 0.6, "horizon_years": 3}
#: the issue's attacks
MANY_KEYS = json.dumps({f"k{i}": i for i in range(200_000)}).encode()  # 2.3 MB, 200,000 keys
HUGE_KEY = json.dumps({**BASE, "x" * 3_000_000: 1}).encode()  # one unknown key of 3 MB
#: a problem is small whatever the body was
PROBLEM_BYTES = 8_192


@pytest.fixture(scope="module")
def client(seeded_db: str) -> Iterator[TestClient[Litestar]]:
    with make_client(seeded_db) as c:
        yield c


def problem(r: Any, status: int, words: str) -> dict[str, Any]:
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    assert len(r.content) < PROBLEM_BYTES, len(r.content)
    body: dict[str, Any] = r.json()
    assert words in body["detail"], body["detail"]
    return body


# ---- the size limit of each route ---------------------------------------------------------------------


def test_every_body_route_declares_its_limit(client: TestClient[Litestar]) -> None:
    """Each route of BODY_LIMITS refuses a byte more than its limit, with a 413 naming the limit."""
    for path, limit in BODY_LIMITS.items():
        raw = json.dumps({**BASE, "pad": "x" * (limit - 40)}).encode()
        assert len(raw) > limit
        problem(client.post(path, content=raw, headers=JSON_TYPE), 413, f"{limit:,} bytes")


def test_many_keys_to_a_comparison_is_413_before_reading(client: TestClient[Litestar]) -> None:
    body = problem(client.post(COMPARE, content=MANY_KEYS, headers=JSON_TYPE), 413, f"{SINGLE_BODY_BYTES:,}")
    assert body["type"].endswith(":body-too-large")


def test_huge_unknown_key_to_a_comparison_is_413(client: TestClient[Litestar]) -> None:
    problem(client.post(COMPARE, content=HUGE_KEY, headers=JSON_TYPE), 413, "larger than")


def test_a_chunked_body_over_the_limit_is_413(client: TestClient[Litestar]) -> None:
    """No Content-Length: the bytes streamed are counted, and refused once they pass the limit."""

    def chunks() -> Iterator[bytes]:
        yield b'{"gpus": 8, "pad": "'
        for _ in range(40):
            yield b"x" * 4096
        yield b'"}'

    problem(client.post(COMPARE, content=chunks(), headers=JSON_TYPE), 413, "larger than")


def test_a_body_under_the_limit_is_answered(client: TestClient[Litestar]) -> None:
    assert client.post(COMPARE, json=BASE).status_code == 200


# ---- limits while reading (the batch route: MAX_BODY_BYTES) ------------------------------------------


def test_many_keys_in_a_batch_is_400_naming_the_limit(client: TestClient[Litestar]) -> None:
    raw = b'{"profiles": [' + MANY_KEYS + b"]}"
    problem(client.post(EVALUATE, content=raw, headers=JSON_TYPE), 400, f"more than {MAX_KEYS}")


def test_huge_key_in_a_batch_is_400(client: TestClient[Litestar]) -> None:
    raw = json.dumps({"profiles": [{**BASE, "x" * 3_000_000: 1}]}).encode()
    problem(client.post(EVALUATE, content=raw, headers=JSON_TYPE), 400, f"longer than {MAX_STRING}")


def test_a_large_body_is_read_off_the_event_loop_with_the_same_answers(
    client: TestClient[Litestar], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from app.web import bodies

    readers: list[int] = []

    def recorded(body: bytes) -> Any:
        readers.append(threading.get_ident())
        return strict_json(body)

    monkeypatch.setattr(bodies, "strict_json", recorded)
    small = client.post(EVALUATE, json={"profiles": [BASE]})
    assert small.status_code == 200, small.text
    many = {"profiles": [{**BASE, "gpus": 1 + i} for i in range(2_000)], "detail": "scores"}
    raw = json.dumps(many).encode()
    assert len(raw) > bodies.OFF_LOOP_BYTES
    large = client.post(EVALUATE, content=raw, headers=JSON_TYPE)
    assert large.status_code == 200 and len(large.json()["results"]) == 2_000
    loop, *others = readers
    assert others and loop not in others  # the small one on the loop, the large one in a thread
    # a refusal found in the thread is the same problem
    refused = raw[:-1] + b', "detail": "scores"}'  # a key twice
    problem(client.post(EVALUATE, content=refused, headers=JSON_TYPE), 400, "appears twice")


def test_a_large_body_is_validated_in_its_reading_thread_once(
    client: TestClient[Litestar], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route's model validates a large body in the thread that read it; the handler takes that model
    (no second validation on the loop). A body the model refuses is refused on the loop with the same
    problem as a small one."""
    import threading

    from pydantic import BaseModel

    from app.domain.decisions.schemas import EvaluationCreate
    from app.web import bodies

    validated: list[tuple[int, bool]] = []  # (thread, given a dict: a validation, not an instance passed on)
    validate = EvaluationCreate.model_validate.__func__  # type: ignore[attr-defined]

    def recorded(cls: type[BaseModel], value: Any, **kwargs: Any) -> Any:
        validated.append((threading.get_ident(), isinstance(value, dict)))
        return validate(cls, value, **kwargs)

    monkeypatch.setattr(EvaluationCreate, "model_validate", classmethod(recorded))
    loop: list[int] = []
    model_of = bodies.request_model

    def on_the_loop(handler: Any) -> Any:
        loop.append(threading.get_ident())
        return model_of(handler)

    monkeypatch.setattr(bodies, "request_model", on_the_loop)
    many = {"profiles": [{**BASE, "gpus": 1 + i} for i in range(2_000)]}
    raw = json.dumps(many).encode()
    assert len(raw) > OFF_LOOP_BYTES
    large = client.post(EVALUATE, content=raw, headers=JSON_TYPE)
    assert large.status_code == 200 and len(large.json()["results"]) == 2_000
    # one validation, of the JSON value, in the reading thread; the handler was given that model
    assert validated == [(validated[0][0], True)] and loop and validated[0][0] not in loop

    validated.clear()
    wrong = {"profiles": [*many["profiles"][:-1], {**BASE, "gpus": 0}]}
    big = problem(client.post(EVALUATE, content=json.dumps(wrong).encode(), headers=JSON_TYPE), 400, "")
    small = problem(client.post(EVALUATE, json={"profiles": [{**BASE, "gpus": 0}]}), 400, "")
    assert [e["field"] for e in big["errors"]] == ["profiles.1999.gpus"]
    assert [e["message"] for e in big["errors"]] == [e["message"] for e in small["errors"]]
    assert big["detail"] == small["detail"].replace("profiles.0.", "profiles.1999.")


def test_ten_thousand_invalid_profiles_answer_a_bounded_problem(client: TestClient[Litestar]) -> None:
    """Each profile wrong in two fields: the problem lists the first MAX_ERRORS and counts the rest."""
    raw = json.dumps({"profiles": [{**BASE, "gpus": "8", "utilization": "x" * 200}] * 10_000}).encode()
    body = problem(client.post(EVALUATE, content=raw, headers=JSON_TYPE), 400, "more errors")
    assert len(body["errors"]) == MAX_ERRORS
    assert all(len(e["message"]) <= 200 for e in body["errors"])


# ---- the reader's limits, without HTTP ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (json.dumps({f"k{i}": i for i in range(MAX_KEYS + 1)}), f"{MAX_KEYS + 1} keys"),
        (json.dumps({"a": {f"k{i}": i for i in range(MAX_KEYS + 1)}}), "more than"),
        (json.dumps({"a": "x" * (MAX_STRING + 1)}), 'string "a" has'),
        (json.dumps({"x" * (MAX_STRING + 1): 1}), "key of"),
        (json.dumps({"a": ["x" * (MAX_STRING + 1)]}), "characters, more than"),
        (json.dumps({"a": [[["x" * (MAX_STRING + 1)]]]}), "characters, more than"),
        (json.dumps({"a": [0] * (MAX_ARRAY + 1)}), "items, more than"),
        (json.dumps({"a": [[0] * (MAX_ARRAY + 1)]}), "items, more than"),
        (json.dumps([0] * (MAX_ARRAY + 1)), "items, more than"),
        (json.dumps("x" * (MAX_STRING + 1)), "characters, more than"),
    ],
)
def test_strict_json_refuses_what_breaks_a_limit(raw: str, words: str) -> None:
    with pytest.raises(BodyRefused) as info:
        strict_json(raw.encode())
    assert words in str(info.value)
    assert len(str(info.value)) < 200


def test_strict_json_reads_what_is_at_the_limits() -> None:
    value = {
        **{f"k{i}": i for i in range(MAX_KEYS - 2)},
        "s": "x" * MAX_STRING,
        "a": [{"b": "y" * MAX_STRING}] * MAX_ARRAY,
    }
    assert strict_json(json.dumps(value).encode()) == value


def test_a_duplicate_key_is_quoted_short() -> None:
    key = "k" * 500
    with pytest.raises(BodyRefused) as info:
        strict_json(f'{{"{key}": 1, "{key}": 2}}'.encode())
    assert len(str(info.value)) < 120


# ---- refused bodies cost their size ----------------------------------------------------------------------


def test_refused_cost_grows_with_size() -> None:
    assert refused_cost(0) == 1
    assert refused_cost(REFUSED_BYTES_PER_UNIT) == 1
    assert refused_cost(REFUSED_BYTES_PER_UNIT + 1) == 2
    assert refused_cost(len(MANY_KEYS)) == -(-len(MANY_KEYS) // REFUSED_BYTES_PER_UNIT)


@pytest.fixture
def limited(seeded_db: str) -> Iterator[TestClient[Litestar]]:
    settings = Settings(database_url=seeded_db, rate_limit=("minute", 1000), forwarded_allow_ips=())
    with make_client(seeded_db, settings=settings) as c:
        yield c


def remaining(r: Any) -> int:
    return int(r.headers["ratelimit-remaining"])


@pytest.mark.parametrize(
    ("path", "raw", "status"),
    [
        (COMPARE, MANY_KEYS, 413),
        (EVALUATE, b'{"profiles": [' + MANY_KEYS + b"]}", 400),
        (EVALUATE, b'{"profiles": [' + b"1," * 400_000 + b"x]}", 400),
    ],
)
def test_a_refused_body_is_charged_by_its_size(
    limited: TestClient[Litestar], path: str, raw: bytes, status: int
) -> None:
    before = remaining(limited.get("/v1/options"))
    r = limited.post(path, content=raw, headers=JSON_TYPE)
    assert r.status_code == status, r.text[:300]
    assert before - remaining(r) == refused_cost(len(raw)) > 10


def test_a_refused_body_never_costs_more_than_the_budget(seeded_db: str) -> None:
    settings = Settings(database_url=seeded_db, rate_limit=("minute", 20), forwarded_allow_ips=())
    with make_client(seeded_db, settings=settings) as c:
        r = c.post(COMPARE, content=MANY_KEYS, headers=JSON_TYPE)
        assert r.status_code == 413 and remaining(r) == 0
        assert c.post(COMPARE, json=BASE).status_code == 429
