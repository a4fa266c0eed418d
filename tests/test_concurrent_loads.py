"""Two seed loads started at once leave exactly one new knowledge version and no partial state."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path

from conftest import SEEDS, load_seeds
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine

from app.kb import models as m
from app.settings import Settings


def _count(url: str, model: type[m.Base]) -> int:
    async def run() -> int:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with engine.connect() as conn:
                return int(await conn.scalar(select(func.count()).select_from(model)) or 0)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_two_loads_at_once_make_one_version(empty_db: str, tmp_path: Path) -> None:
    load_seeds(empty_db)
    seeds = tmp_path / "seeds"
    shutil.copytree(SEEDS, seeds)
    hardware = seeds / "10-hardware.yaml"
    hardware.write_text(hardware.read_text().replace("name: GeForce RTX 4090", "name: RTX 4090 (24 GB)"))
    gpus_before = _count(empty_db, m.GpuModel)

    start = threading.Barrier(2)
    plans: list[object] = []
    errors: list[BaseException] = []

    def load() -> None:
        start.wait()
        try:
            plans.append(load_seeds(empty_db, seeds, note="concurrent"))
        except BaseException as exc:  # report, do not hide
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    versions = sorted(p.version for p in plans if p.version is not None)  # type: ignore[attr-defined]
    assert len(versions) == 1, f"new versions: {versions}"
    assert sum(1 for p in plans if p.empty) == 1  # type: ignore[attr-defined]
    assert _count(empty_db, m.KnowledgeVersion) == 2
    assert _count(empty_db, m.GpuModel) == gpus_before
