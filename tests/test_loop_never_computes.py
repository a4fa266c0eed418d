"""The event loop never computes: a heavy request's answer — or its failure — is its worker thread's,
whatever the knowledge version does meanwhile (app/domain/decisions/controller.py,
app/domain/capacity/controller.py); and a new knowledge version is built off the loop and swapped
without freezing or collecting the heap (app/kb/store.py, app/kb/snapshot.py, app/kb/heap.py).

What is asserted is where the work runs (the thread's name, whether it has a running event loop),
never how long it takes: docs/performance.md has the loop's stalls measured at a swap."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SEEDS, Databases, load_seeds, make_client

from app.domain.capacity import charts, sheets
from app.domain.decisions.service import DecisionService
from app.kb import heap, snapshot
from app.settings import Settings
from app.web.negotiation import CSV

AS_OF = "2026-12-01"
#: a demand of a year's months: priced as capacity plans are, by a solver — a heavy request
DEMAND = {
    "horizon_years": 1,
    "team_size": 20,
    "as_of": AS_OF,
    "demand": [{"months": 6, "gpus": 16, "utilization": 0.6}, {"months": 6, "gpus": 48, "utilization": 0.8}],
}


def where() -> str:
    """Where the caller runs: ``loop`` (a thread with a running event loop), else the thread's name."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return threading.current_thread().name
    return "loop"


@pytest.fixture(scope="module")
def db(databases: Databases) -> str:
    return databases.seeded("sqlite")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[str]]:
    """``watch(owner, name)``: record where each call of ``owner.name`` runs."""

    def watch(owner: Any, name: str, before: Callable[[], None] | None = None) -> list[str]:
        found: list[str] = []
        original = getattr(owner, name)

        def recorded(*args: Any, **kwargs: Any) -> Any:
            found.append(where())
            if before is not None:
                before()
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, recorded)
        return found

    return watch


def newer(store: Any) -> Callable[[], None]:
    """Once: the store serves another knowledge version (the same rows under a new label), as if a seed
    load had been found while the request computes."""
    done = threading.Event()

    def swap() -> None:
        if not done.is_set():
            done.set()
            store.current = dataclasses.replace(store.current, version=store.current.version + "-next")

    return swap


@pytest.fixture(scope="module")
def client(db: str) -> Iterator[Any]:
    """One app for the module: each test moves its knowledge to a version of its own (``newer``)."""
    with make_client(db, settings=Settings(database_url=db, knowledge_refresh_seconds=60, rate_limit=None)) as c:
        yield c


def test_a_comparison_with_a_demand_is_its_threads_answer_across_a_new_version(client, calls) -> None:
    store = client.app.state.knowledge_store
    version = store.version
    computed = calls(DecisionService, "_compare", newer(store))
    r = client.post("/v1/price-comparisons", json=DEMAND)
    assert r.status_code == 200, r.text
    assert r.json()["knowledge_version"] == version  # the thread's, computed before the swap
    assert store.version == version + "-next"
    # before: the loop looked the answer up under the new version, missed, and computed it again
    assert computed and all(w.startswith("compute") for w in computed), computed
    assert "etag" not in r.headers  # no validator of the new version for the old one's answer


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "store-false"])
def test_a_recommendation_with_a_demand_is_its_threads_answer_across_a_new_version(client, calls, stored) -> None:
    store = client.app.state.knowledge_store
    version = store.version
    computed = calls(DecisionService, "_evaluate", newer(store))
    r = client.post("/v1/recommendations" + ("" if stored else "?store=false"), json=DEMAND)
    assert r.status_code == (201 if stored else 200), r.text
    assert r.json()["knowledge_version"] == version
    assert computed and all(w.startswith("compute") for w in computed), computed


def test_a_failure_in_the_thread_is_the_answer(client, calls) -> None:
    """A demand the thread refuses (an unknown GPU model) is answered as the thread refused it, though
    the version changed meanwhile: nothing is computed again on the loop."""
    store = client.app.state.knowledge_store
    computed = calls(DecisionService, "_compare", newer(store))
    r = client.post("/v1/price-comparisons", json={**DEMAND, "gpu_model": "no-such-gpu"})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "gpu_model"
    assert computed and all(w.startswith("compute") for w in computed), computed


@pytest.mark.parametrize("accept", [CSV, charts.SVG])
def test_a_capacity_plans_chart_or_spreadsheet_is_made_in_its_thread(client, calls, accept) -> None:
    made = calls(sheets, "plan_csv") if accept == CSV else calls(charts, "capacity_svg")
    r = client.post("/v1/capacity-plans", json=DEMAND, headers={"Accept": accept})
    assert r.status_code == 200, r.text
    assert made and all(w.startswith("compute") for w in made), made


# ---- the snapshot swap -------------------------------------------------------------------------


def test_a_new_version_is_built_off_the_loop_and_frozen_nowhere(
    databases: Databases, tmp_path: Path, calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = databases.seeded("sqlite")
    settings = Settings(database_url=url, knowledge_refresh_seconds=0.2, rate_limit=None, gc_freeze=True)
    built = calls(snapshot, "assemble")
    settled = calls(heap, "settle")
    try:
        with make_client(url, settings=settings) as c:
            store = c.app.state.knowledge_store
            old = store.current
            assert settled == ["loop"]  # once, at start-up, before the first snapshot
            assert any(o is old for o in gc.get_objects())  # a snapshot is never frozen
            # something the old snapshot alone holds, in a cycle: freed once the snapshot is replaced
            marker = type("Marker", (), {})()
            marker.me = marker
            gone = weakref.ref(marker)
            old.derived["test-marker"] = marker
            del marker, old

            seeds = tmp_path / "seeds"
            shutil.copytree(SEEDS, seeds)
            hardware = seeds / "10-hardware.yaml"
            hardware.write_text(hardware.read_text().replace("name: GeForce RTX 4090", "name: RTX 4090 (24 GB)"))
            version = load_seeds(url, seeds).version
            deadline = time.monotonic() + 30
            while store.version != version and time.monotonic() < deadline:
                assert c.get("/health/live").status_code == 200  # the loop answers meanwhile
                time.sleep(0.05)
            assert store.version == version
            assert c.get("/v1/gpus/rtx_4090").json()["name"] == "RTX 4090 (24 GB)"
            # the snapshot was built in a thread without an event loop (before: on the loop), and the swap
            # neither froze nor collected (before: the whole heap, with the loop stopped)
            assert len(built) == 2 and "loop" not in built, built  # at start-up, and the new version
            assert settled == ["loop"]
            assert any(o is store.current for o in gc.get_objects())
            gc.collect()
            assert gone() is None
    finally:
        gc.unfreeze()  # the other tests of this process see an ordinary heap
