"""The seed files as the in-memory knowledge snapshot, without a database (for pure-core tests).

Built by ``app.kb.snapshot.assemble`` — the same code that builds the snapshot from SQL — from the
validated seed records (ids are synthetic: the records' order)."""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from types import SimpleNamespace

from conftest import SEEDS, shipped_seeds

from app.core.knowledge import Knowledge
from app.kb.seeds import read_seeds
from app.kb.snapshot import assemble


@functools.cache
def knowledge_from_seeds(path: Path = SEEDS) -> Knowledge:
    """The seeds as the snapshot the service would build from SQL."""
    records = (shipped_seeds() if path == SEEDS else read_seeds(path)).records
    rows = {
        section: [SimpleNamespace(id=i, **r.model_dump()) for i, r in enumerate(items, start=1)]
        for section, items in records.items()
    }
    return assemble(
        "kv-seeds",
        dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        gpu_models=rows["gpu_models"],
        servers=rows["servers"],
        prices=rows["prices"],
        assumptions=rows["assumptions"],
        rules=rows["rules"],
        providers=rows["providers"],
        exchange_rates=rows["exchange_rates"],
        data_security_levels=rows["data_security_levels"],
        regions=rows["regions"],
        availability_rules=rows["availability_rules"],
    )
