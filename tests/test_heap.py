"""The served snapshot is frozen out of the cyclic collector's walks, and the next load gives the
previous one back to it (app/kb/heap.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from conftest import make_client

from app.kb import heap
from app.settings import Settings


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the other tests of this process see an ordinary heap


def test_what_is_frozen_is_skipped_until_the_next_settle() -> None:
    node = _Node()
    ref = weakref.ref(node)
    heap.settle()
    del node
    gc.collect()
    assert ref() is not None  # frozen: collections skip it (the old snapshot until the next load)
    heap.settle()
    assert ref() is None  # given back and collected: a new snapshot does not keep the old one alive


def test_the_served_app_freezes_its_long_lived_objects_but_not_its_snapshot(seeded_db: str) -> None:
    gc.unfreeze()
    settings = Settings(database_url=seeded_db, knowledge_refresh_seconds=60, rate_limit=None, gc_freeze=True)
    with make_client(seeded_db, settings=settings) as client:
        assert client.get("/health/live").status_code == 200
        assert gc.get_freeze_count() > 50_000  # modules, classes, the app
        snapshot = client.app.state.knowledge_store.current
        assert any(o is snapshot for o in gc.get_objects())  # collectable: a swap needs no collection


def test_gc_freeze_is_a_setting() -> None:
    assert Settings.from_env({}).gc_freeze is True
    assert Settings.from_env({"GC_FREEZE": "off"}).gc_freeze is False


def test_the_young_generations_threshold_is_a_setting(seeded_db: str) -> None:
    assert Settings.from_env({}).gc_young_threshold == 10_000
    assert Settings.from_env({"GC_YOUNG_THRESHOLD": "700"}).gc_young_threshold == 700
    with pytest.raises(ValueError, match="GC_YOUNG_THRESHOLD must be a whole number >= 100"):
        Settings.from_env({"GC_YOUNG_THRESHOLD": "0"})
    before = gc.get_threshold()
    try:
        settings = Settings(database_url=seeded_db, rate_limit=None, gc_freeze=False, gc_young_threshold=4_321)
        with make_client(seeded_db, settings=settings) as client:
            assert client.get("/health/live").status_code == 200
            assert gc.get_threshold() == (4_321, *before[1:])
    finally:
        gc.set_threshold(*before)
