"""Group commit of stored recommendations: every awaited row is committed, a failure is reported."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.kb import service_records as sr
from app.kb.writer import RecommendationWriter
from app.settings import Settings


def _row(rec_id: str | None = None) -> dict:
    return {
        "id": rec_id or str(uuid.uuid4()),
        "created_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        "knowledge_version": "kv1-x",
        "methodology_version": "1.0",
        "request": {"gpus": 8},
        "response": {"ok": True},
        "api_key_id": None,
    }


def test_concurrent_rows_are_all_committed_and_a_failed_batch_is_reported(empty_db: str) -> None:
    async def run() -> None:
        engine = create_async_engine(Settings(database_url=empty_db).async_database_url)
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        writer = RecommendationWriter(sessions)
        try:
            await asyncio.gather(*(writer.store(_row()) for _ in range(300)))
            async with sessions() as s:
                assert await s.scalar(select(func.count()).select_from(sr.Recommendation)) == 300
            duplicate = str(uuid.uuid4())
            await writer.store(_row(duplicate))
            with pytest.raises(IntegrityError):
                await writer.store(_row(duplicate))
            async with sessions() as s:
                assert await s.scalar(select(func.count()).select_from(sr.Recommendation)) == 301
        finally:
            await engine.dispose()

    asyncio.run(run())
