"""Response examples for the OpenAPI document, answered by the service itself over the reference seeds:
``python -m app.openapi_examples openapi/examples.json`` (``make openapi`` runs it first).

Each example is a real answer to the request example of its operation (``app.openapi.document``), on a
fresh SQLite database holding ``seeds/``, on a fixed day; what changes from run to run (a stored
recommendation's id and time) is replaced by fixed values, so the file changes only when the seeds,
the model or the answers' shapes do — and ``tests/test_openapi.py`` fails when it is stale.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from alembic import command
from litestar.testing import TestClient
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.asgi import create_app
from app.cli import alembic_config
from app.kb import keys, seeds
from app.openapi.generators import EXAMPLES_PATH, PROFILE_EXAMPLE, REQUEST_EXAMPLES
from app.settings import DEFAULT_SEEDS_PATH, Settings

#: the day every example is answered on (``as_of``)
AS_OF = "2026-12-01"
FIXED_ID = "0f5b7c2e-4d1a-4c3b-9a8e-2b6d1e0c9f31"
FIXED_TIME = "2026-12-01T08:00:00Z"


def _prepare(url: str) -> str:
    command.upgrade(alembic_config(Settings(database_url=url)), "head")

    async def run() -> str:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                await seeds.apply(session, seeds.read_seeds(DEFAULT_SEEDS_PATH), note="reference seeds")
                created = await keys.create(session, name="examples", scopes=["admin"], actor="openapi")
                return created.key
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _dated(body: dict[str, Any]) -> dict[str, Any]:
    """The body answered on ``AS_OF`` (a profile's, a training plan's, a demand's), not on the day the
    examples are made: they would change every day."""
    return {**body, "as_of": AS_OF} if "gpus" in body or "demand" in body else body


def collect() -> dict[str, dict[str, Any]]:
    """``{operationId: {status: example}}`` for the main operations."""
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'examples.db'}"
        key = _prepare(url)
        settings = Settings(database_url=url, rate_limit=None, knowledge_refresh_seconds=3600)
        with TestClient(create_app(settings)) as client:
            client.headers["X-API-Key"] = key

            def post(path: str, operation: str, **params: Any) -> Any:
                body = REQUEST_EXAMPLES[operation]
                if operation == "evaluateProfiles":
                    body = {**body, "profiles": [_dated(p) for p in body["profiles"]]}
                r = client.post(path, json=_dated(body), params=params)
                assert r.status_code in (200, 201), (operation, r.status_code, r.text)
                return r.json()

            stored = post("/v1/recommendations", "createRecommendation")
            stored.update(id=FIXED_ID, created_at=FIXED_TIME)
            missing = client.get(f"/v1/recommendations/{FIXED_ID}").json()
            missing["request_id"] = "5f0e4c1b9a7d4e2f8c3b6a1d0e9f8a7b"
            examples = {
                "comparePrices": {"200": post("/v1/price-comparisons", "comparePrices")},
                "createRecommendation": {"201": stored},
                "getRecommendation": {"200": stored, "404": missing},
                "evaluateProfiles": {"200": post("/v1/evaluations", "evaluateProfiles")},
                "computeBreakEven": {"200": post("/v1/break-even", "computeBreakEven")},
                "computeSensitivity": {"200": post("/v1/sensitivity", "computeSensitivity")},
                "computeUncertainty": {"200": post("/v1/uncertainty", "computeUncertainty")},
                "computeTrainingPlan": {"200": post("/v1/training-plans", "computeTrainingPlan")},
                "computeCapacityPlan": {"200": post("/v1/capacity-plans", "computeCapacityPlan")},
                "listOptions": {"200": client.get("/v1/options").json()},
            }
    assert PROFILE_EXAMPLE  # the profile every decision example answers
    return examples


def render() -> str:
    return json.dumps(collect(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    logging.disable(logging.INFO)  # one line per request is noise here
    target = Path(argv[1] if len(argv) > 1 else EXAMPLES_PATH)
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target} ({dt.datetime.now(dt.UTC):%H:%M:%S})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
