"""The event loop only routes, against a served instance (uvicorn, one worker, a temp SQLite database):
while the heaviest accepted requests run, ``/health/live`` and a one-profile evaluation keep answering.

What is asserted is that they answer (200) while the heavy ones are in flight, never how fast — the
machine is shared; the latencies observed are printed (``pytest -s``: lines ``MEASURED …``) and
recorded in docs/performance.md.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Databases, Server, create_key

from app.domain.decisions.schemas import MAX_FULL_PROFILES
from app.domain.insights.schemas import MAX_DRAWS

pytestmark = pytest.mark.slow

PROFILE = {"gpus": 16, "utilization": 0.6, "horizon_years": 2, "team_size": 20}
#: a large batch whose profiles all differ (defeating the batch's grouping); 10,000 are accepted, and take
#: minutes on a shared machine: 2,000 keep the test short and the loop just as busy
BATCH = 2_000


def distinct(i: int) -> dict[str, Any]:
    return {**PROFILE, "gpus": 8 + i % 97, "weights": {"cost": 1, "efficiency": 1 + i / 10_000}}


HEAVY: list[tuple[str, dict[str, Any]]] = [
    ("/v1/evaluations", {"profiles": [distinct(i) for i in range(BATCH)]}),
    ("/v1/evaluations", {"profiles": [distinct(i + BATCH) for i in range(MAX_FULL_PROFILES)], "detail": "full"}),
    ("/v1/uncertainty", {**PROFILE, "draws": MAX_DRAWS}),
    ("/v1/break-even", PROFILE),
    ("/v1/sensitivity", PROFILE),
    ("/v1/training-plans", {"parameters": 7e10, "tokens": 2e12, "gpu_model": "H100-SXM", "gpus": 64}),
]


def _summary(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return f"n={len(ms)} p50={statistics.median(ms):.0f} ms p99={p99:.0f} ms max={ms[-1]:.0f} ms"


def test_light_requests_answer_while_the_heaviest_run(databases: Databases, tmp_path: Path) -> None:
    url = databases.seeded("sqlite")
    key = create_key(url, ["admin"], name="served")[1]
    headers = {"X-API-Key": key}
    # six tenants: one key may have at most WORKER_POOL_PER_KEY (5 by default) heavy requests at once
    tenants = [{"X-API-Key": create_key(url, ["admin"], name=f"tenant {i}")[1]} for i in range(len(HEAVY))]
    with Server(url, tmp_path / "server.log") as server, httpx.Client(base_url=server.base, headers=headers) as c:
        gpu = c.get("/v1/gpus", params={"limit": 1}).json()["items"][0]["key"]
        heavy = [(p, {**b, "gpu_model": gpu} if p == "/v1/training-plans" else b) for p, b in HEAVY]
        answers: dict[int, tuple[int, float]] = {}

        def send(i: int, path: str, body: dict[str, Any]) -> None:
            start = time.monotonic()
            r = httpx.post(server.base + path, json=body, headers=tenants[i], timeout=600)
            answers[i] = (r.status_code, time.monotonic() - start)

        threads = [threading.Thread(target=send, args=(i, p, b)) for i, (p, b) in enumerate(heavy)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # let the bodies arrive and the computations start
        live: list[float] = []
        one: list[float] = []
        n = 0
        while any(t.is_alive() for t in threads):
            start = time.monotonic()
            r = c.get("/health/live", timeout=60)
            assert r.status_code == 200, r.text
            live.append(time.monotonic() - start)
            start = time.monotonic()
            r = c.post("/v1/evaluations", json={"profiles": [{**PROFILE, "gpus": 1 + n % 7}]}, timeout=60)
            assert r.status_code == 200, r.text
            one.append(time.monotonic() - start)
            n += 1
            time.sleep(0.1)
        for t in threads:
            t.join()
    statuses = {heavy[i][0] + ("(full)" if "detail" in heavy[i][1] else ""): a for i, a in answers.items()}
    assert all(status == 200 for status, _ in statuses.values()), statuses
    assert len(live) >= 5, "the heavy requests finished before the light ones could be measured"
    print(f"\nMEASURED /health/live while heavy requests ran: {_summary(live)}", flush=True)
    print(f"MEASURED one-profile evaluation while heavy requests ran: {_summary(one)}", flush=True)
    for path, (status, seconds) in statuses.items():
        print(f"MEASURED heavy {path}: {status} in {seconds:.1f} s", flush=True)
