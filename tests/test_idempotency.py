"""Idempotency-Key on POST /v1/recommendations, the writer's bounded queue and the daily quota (both databases).

- the same key and body within 24 h answer the stored recommendation again (201, same id and
  Location, ``Idempotent-Replayed``), stored once; another body answers 409; keys are per API key;
- concurrent duplicates — in one process and from two writers on two engines (two workers) — store once;
- a claim older than 24 h no longer holds;
- a full writer queue answers 503 with Retry-After, nothing stored;
- the daily quota answers 429 of its own type once reached; a replay is not counted.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import pytest
from conftest import SME_PROFILE, Databases, admin_key, create_key, load_seeds, make_client
from litestar.testing import AsyncTestClient, TestClient
from sqlalchemy import text

from app.asgi import create_app
from app.kb import service_records as sr
from app.kb.db import database_config
from app.kb.writer import IdempotencyKeyTaken, RecommendationWriter, WriterFull
from app.settings import Settings

TYPE = "urn:compute-advisor:problem:"


def sql(url: str, statement: str, **params: Any) -> Any:
    async def run() -> Any:
        engine = database_config(Settings(database_url=url)).get_engine()
        try:
            async with engine.begin() as conn:
                result = await conn.execute(text(statement), params)
                return result.scalar() if result.returns_rows else None
        finally:
            await engine.dispose()

    return asyncio.run(run())


def post(client: TestClient, body: dict[str, Any], key: str | None, **headers: str) -> Any:  # type: ignore[type-arg]
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.post("/v1/recommendations", json=body, headers=headers)


def test_the_same_key_and_body_answer_the_stored_recommendation_again(client: TestClient, seeded_db: str) -> None:  # type: ignore[type-arg]
    key = str(uuid.uuid4())
    first = post(client, SME_PROFILE, key)
    assert first.status_code == 201, first.text
    assert "Idempotent-Replayed" not in first.headers
    # the same request, its fields in another order: the same body once validated
    again = post(client, dict(reversed(list(SME_PROFILE.items()))), key)
    assert again.status_code == 201
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert sql(seeded_db, "SELECT count(*) FROM idempotency_keys WHERE key = :k", k=key) == 1
    rec_id = first.json()["id"]
    assert sql(seeded_db, "SELECT count(*) FROM recommendations WHERE id = :i", i=rec_id) == 1
    # without a key every request stores anew
    assert post(client, SME_PROFILE, None).json()["id"] != rec_id


def test_the_same_key_with_another_body_is_a_conflict(client: TestClient) -> None:  # type: ignore[type-arg]
    key = str(uuid.uuid4())
    assert post(client, SME_PROFILE, key).status_code == 201
    other = post(client, {**SME_PROFILE, "gpus": 32}, key)
    assert other.status_code == 409
    problem = other.json()
    assert other.headers["content-type"].startswith("application/problem+json")
    assert problem["type"] == TYPE + "idempotency-key-conflict"
    assert problem["field"] == "Idempotency-Key"


def test_keys_are_per_api_key(client: TestClient, seeded_db: str) -> None:  # type: ignore[type-arg]
    key = str(uuid.uuid4())
    _, other_api_key = create_key(seeded_db, ["recommendations:write"], name="other team")
    mine = post(client, SME_PROFILE, key)
    theirs = post(client, SME_PROFILE, key, **{"X-API-Key": other_api_key})
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert "Idempotent-Replayed" not in theirs.headers


@pytest.mark.parametrize("store", ["true", "false"])
@pytest.mark.parametrize("bad", ["x" * 256, "has space", "tab\there", "é", ""])
def test_a_malformed_key_is_a_400_naming_the_header(client: TestClient, bad: str, store: str) -> None:  # type: ignore[type-arg]
    """Refused as documented whether or not the answer is stored (the deprecated ``?store=false`` too)."""
    answer = client.post(
        f"/v1/recommendations?store={store}", json=SME_PROFILE, headers={"Idempotency-Key": bad.encode()}
    )
    assert answer.status_code == 400, answer.text
    assert "idempotency-key" in answer.json()["detail"].lower()


def test_store_false_answers_and_says_it_is_deprecated(client: TestClient) -> None:  # type: ignore[type-arg]
    """Accepted as before, with RFC 9745's ``Deprecation`` and a ``Link`` to its successor; a stored
    recommendation says nothing of the kind."""
    answer = client.post("/v1/recommendations?store=false", json=SME_PROFILE)
    assert answer.status_code == 200 and "id" not in answer.json()
    assert answer.headers["Deprecation"] == "@1796256000"  # 2026-12-03T00:00:00Z
    assert answer.headers["Link"] == '</v1/evaluations>; rel="successor-version"'
    stored = post(client, SME_PROFILE, None)
    assert stored.status_code == 201 and "Deprecation" not in stored.headers


def test_a_claim_older_than_24_hours_no_longer_holds(client: TestClient, seeded_db: str) -> None:  # type: ignore[type-arg]
    key = str(uuid.uuid4())
    first = post(client, SME_PROFILE, key).json()["id"]
    old = dt.datetime.now(dt.UTC) - dt.timedelta(hours=25)
    sql(seeded_db, "UPDATE idempotency_keys SET created_at = :t WHERE key = :k", t=old, k=key)
    again = post(client, {**SME_PROFILE, "gpus": 32}, key)  # another body: no conflict after 24 h
    assert again.status_code == 201 and again.json()["id"] != first
    assert "Idempotent-Replayed" not in again.headers
    assert post(client, {**SME_PROFILE, "gpus": 32}, key).json()["id"] == again.json()["id"]


def _burst(url: str, keys: list[str]) -> list[Any]:
    """POST one recommendation per Idempotency-Key of ``keys``, all at once, to one app."""
    api_key = admin_key(url)

    async def run() -> list[Any]:
        app = create_app(Settings(database_url=url, rate_limit=None))
        async with AsyncTestClient(app) as ac:
            ac.headers["X-API-Key"] = api_key
            return list(
                await asyncio.gather(
                    *(ac.post("/v1/recommendations", json=SME_PROFILE, headers={"Idempotency-Key": k}) for k in keys)
                )
            )

    return asyncio.run(run())


def test_concurrent_duplicates_in_one_service_store_once(seeded_db: str) -> None:
    key = str(uuid.uuid4())
    answers = _burst(seeded_db, [key] * 24)
    assert [a.status_code for a in answers] == [201] * 24
    assert len({a.json()["id"] for a in answers}) == 1
    assert sum(a.headers.get("Idempotent-Replayed") == "true" for a in answers) == 23
    rec_id = answers[0].json()["id"]
    assert sql(seeded_db, "SELECT count(*) FROM idempotency_keys WHERE key = :k", k=key) == 1
    assert sql(seeded_db, "SELECT count(*) FROM recommendations WHERE id = :i", i=rec_id) == 1


def _row(rec_id: str, api_key_id: int) -> dict[str, Any]:
    return {
        "id": rec_id,
        "created_at": dt.datetime.now(dt.UTC),
        "knowledge_version": "kv-test",
        "methodology_version": "test",
        "request": {},
        "response": {"id": rec_id},
        "api_key_id": api_key_id,
    }


def _claim(rec_id: str, api_key_id: int, key: str) -> dict[str, Any]:
    return {
        "api_key_id": api_key_id,
        "key": key,
        "request_hash": "0" * 64,
        "recommendation_id": rec_id,
        "status": 201,
        "created_at": dt.datetime.now(dt.UTC),
    }


def test_two_writers_on_two_engines_never_both_keep_a_claim(databases: Databases, backend: str) -> None:
    """Two workers (two engines, two writers) storing the same claim at once: one wins, one is told."""
    url = databases.migrated(backend)
    api_key_id, _ = create_key(url, ["recommendations:write"])

    async def run() -> list[Any]:
        configs = [database_config(Settings(database_url=url)) for _ in range(2)]
        writers = [RecommendationWriter(c.create_session_maker()) for c in configs]
        try:
            results = []
            for round_ in range(5):
                key = f"k{round_}"
                ids = [str(uuid.uuid4()) for _ in range(4)]
                results.append(
                    await asyncio.gather(
                        *(
                            writers[i % 2].store(_row(rid, api_key_id), idempotency=_claim(rid, api_key_id, key))
                            for i, rid in enumerate(ids)
                        ),
                        return_exceptions=True,
                    )
                )
            return results
        finally:
            for c in configs:
                await c.get_engine().dispose()

    for outcome in asyncio.run(run()):
        assert sum(r is None for r in outcome) == 1, outcome
        assert all(isinstance(r, IdempotencyKeyTaken) for r in outcome if r is not None), outcome
    assert sql(url, "SELECT count(*) FROM idempotency_keys") == 5
    assert sql(url, "SELECT count(*) FROM recommendations") == 5  # the losers' rows were not kept
    joined = sql(
        url,
        "SELECT count(*) FROM idempotency_keys i JOIN recommendations r ON r.id = i.recommendation_id",
    )
    assert joined == 5


def test_a_full_writer_queue_answers_503_with_retry_after(databases: Databases, backend: str) -> None:
    url = databases.migrated(backend)
    api_key_id, _ = create_key(url, ["recommendations:write"])

    async def run() -> list[Any]:
        config = database_config(Settings(database_url=url))
        writer = RecommendationWriter(config.create_session_maker(), queue_limit=3)
        try:
            return list(
                await asyncio.gather(
                    *(writer.store(_row(str(uuid.uuid4()), api_key_id)) for _ in range(5)), return_exceptions=True
                )
            )
        finally:
            await config.get_engine().dispose()

    outcome = asyncio.run(run())
    assert [r is None for r in outcome] == [True, True, True, False, False]
    assert all(isinstance(r, WriterFull) for r in outcome[3:])
    assert sql(url, "SELECT count(*) FROM recommendations") == 3

    load_seeds(url)
    settings = Settings(database_url=url, rate_limit=None, writer_queue_limit=1)
    with make_client(url, settings=settings) as client:
        writer = client.app.state.recommendation_writer
        writer._committing = 1  # a group commit under way fills the queue of one
        answer = client.post("/v1/recommendations", json=SME_PROFILE)
        writer._committing = 0
    assert answer.status_code == 503
    assert answer.json()["type"] == TYPE + "writer-busy"
    assert answer.headers["Retry-After"] == "1"


def test_the_daily_quota_answers_429_of_its_own_type(databases: Databases, backend: str) -> None:
    url = databases.seeded(backend)
    _, api_key = create_key(url, ["recommendations:write"])
    settings = Settings(database_url=url, rate_limit=None, recommendation_daily_quota=2)
    with make_client(url, api_key=api_key, settings=settings) as client:
        assert post(client, SME_PROFILE, "a").status_code == 201
        assert post(client, SME_PROFILE, "b").status_code == 201
        refused = post(client, SME_PROFILE, "c")
        assert post(client, SME_PROFILE, "a").status_code == 201  # a replay stores nothing: not counted
        assert client.post("/v1/recommendations?store=false", json=SME_PROFILE).status_code == 200
    assert refused.status_code == 429
    problem = refused.json()
    assert problem["type"] == TYPE + "recommendation-quota-exceeded"
    assert "quota is 2" in problem["detail"]
    assert 0 < int(refused.headers["Retry-After"]) <= 86_400
    assert sql(url, "SELECT count(*) FROM recommendations") == 2
    assert sr.IdempotencyKey.__tablename__ == "idempotency_keys"
