"""``make bench``'s rounds (``ROUNDS``): an app's runs of one row added up into one measurement, the same
figures a single run of their total would give (bench/run.py ``merged``). The bench itself times nothing here."""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def bench_run() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # bench/run.py imports its neighbours (lib, loadgen) by name
    try:
        return importlib.import_module("run")
    finally:
        sys.path.remove(str(BENCH))


def _run(requests: int, seconds: float, cpu_s: float, p50: float, p99: float, top: float, **codes: int) -> dict:
    return {
        "requests": requests,
        "duration_s": seconds,
        "rps": requests / seconds,
        "p50_ms": p50,
        "p99_ms": p99,
        "max_ms": top,
        "errors": 0,
        "codes": codes or {"200": requests},
        "bytes": requests * 100,
        "cpu_s": cpu_s,
        "cpu_us": cpu_s / requests * 1e6,
    }


def test_one_run_is_the_measurement_itself(bench_run: ModuleType) -> None:
    one = _run(1000, 2.0, 0.1, 1.0, 3.0, 9.0)
    assert bench_run.merged([one]) is one


def test_runs_are_added_up_and_their_latency_is_the_median(bench_run: ModuleType) -> None:
    runs = [
        _run(3000, 3.0, 0.30, 2.0, 8.0, 20.0, **{"304": 3000}),
        _run(1000, 3.0, 0.20, 4.0, 6.0, 50.0, **{"304": 999, "500": 1}),
        _run(2000, 2.0, 0.10, 3.0, 7.0, 10.0, **{"304": 2000}),
    ]
    runs[2]["redis"] = "12 counters"
    m = bench_run.merged(runs)
    assert m["requests"] == 6000
    assert m["duration_s"] == 8.0
    assert m["rps"] == 750.0  # 6,000 requests in 8 s, not the mean of 1,000, 333 and 1,000 a second
    assert math.isclose(m["cpu_us"], 0.60 / 6000 * 1e6)  # CPU over all requests: 100 µs
    assert (m["p50_ms"], m["p99_ms"], m["max_ms"]) == (3.0, 7.0, 50.0)
    assert m["codes"] == {"304": 5999, "500": 1}
    assert m["bytes"] == 600_000
    assert m["redis"] == "12 counters"  # what a run says beside its figures: the last one's
