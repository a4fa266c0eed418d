"""``make sync-bench``: what SQLite's ``synchronous=FULL`` costs stored recommendations, against ``NORMAL``.

For each setting, a fresh migrated SQLite file in a temporary directory (the same file system as
``TMPDIR``) and the service's own writer (``app.kb.writer``, group commit) on the service's engine
configuration: ``SEQUENTIAL`` recommendations stored one after the other (each its own commit: the
latency a lone client sees), then ``CONCURRENT`` stored by ``CLIENTS`` concurrent callers (group commits:
the throughput under load). The rows are the size of a real stored recommendation (one is evaluated
once through the API's service and copied). Reported as Markdown: median and p99 commit latency, rows
per second.

Environment: ``SEQUENTIAL`` (300), ``CONCURRENT`` (4000), ``CLIENTS`` (64).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from alembic import command

from app.kb.db import alembic_config, database_config
from app.kb.writer import RecommendationWriter
from app.settings import Settings

SEQUENTIAL = int(os.environ.get("SEQUENTIAL", "300"))
CONCURRENT = int(os.environ.get("CONCURRENT", "4000"))
CLIENTS = int(os.environ.get("CLIENTS", "64"))
#: about the size of a stored recommendation's JSON (request and response)
RESPONSE = {"ranking": [{"option": f"o{i}", "text": "x" * 2000} for i in range(3)]}


def row() -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "created_at": dt.datetime.now(dt.UTC),
        "knowledge_version": "kv-bench",
        "methodology_version": "bench",
        "request": {"gpus": 16},
        "response": RESPONSE,
        "api_key_id": None,
    }


async def measure(settings: Settings) -> tuple[list[float], float]:
    config = database_config(settings)
    writer = RecommendationWriter(config.create_session_maker(), queue_limit=CONCURRENT + 1)
    try:
        latencies = []
        for _ in range(SEQUENTIAL):
            start = time.perf_counter()
            await writer.store(row())
            latencies.append(time.perf_counter() - start)
        queue: asyncio.Queue[None] = asyncio.Queue()
        for _ in range(CONCURRENT):
            queue.put_nowait(None)

        async def client() -> None:
            while not queue.empty():
                queue.get_nowait()
                await writer.store(row())

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(CLIENTS)))
        return latencies, CONCURRENT / (time.perf_counter() - start)
    finally:
        await config.get_engine().dispose()


def main() -> int:
    print(f"| synchronous | sequential commit p50 (ms) | p99 (ms) | {CLIENTS} concurrent callers: rows/s |")
    print("| --- | --- | --- | --- |")
    for mode in ("NORMAL", "FULL"):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'bench.db'}"
            command.upgrade(alembic_config(Settings(database_url=url)), "head")
            latencies, rate = asyncio.run(measure(Settings(database_url=url, sqlite_synchronous=mode)))  # type: ignore[arg-type]
            q = statistics.quantiles(latencies, n=100)
            print(
                f"| {mode} | {statistics.median(latencies) * 1000:.2f} | {q[98] * 1000:.2f} | {rate:.0f} |", flush=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
