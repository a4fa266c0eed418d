"""The seed files as the in-memory knowledge snapshot, without a database (for pure-core tests)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.core.knowledge import Assumption, Condition, GpuSpec, Knowledge, Price, Rule, Server
from app.core.ranges import Range
from app.kb.seeds import read_seeds
from app.settings import PROJECT_ROOT

SEEDS = PROJECT_ROOT / "seeds"


def _f(value: Any) -> float | None:
    return None if value is None else float(value)


def _range(row: Mapping[str, Any]) -> Range:
    return Range.of(float(row["low"]), float(row["high"]), _f(row["expected"]))


@functools.cache
def knowledge_from_seeds(path: Path = SEEDS) -> Knowledge:
    """The seeds as the snapshot the service would build from SQL (ids are synthetic)."""
    records = {section: [r.model_dump() for r in rows] for section, rows in read_seeds(path).records.items()}
    gpus = {
        g["key"]: GpuSpec(
            g["key"],
            g["vendor"],
            g["name"],
            float(g["memory_gb"]),
            _f(g["memory_bandwidth_gbps"]),
            float(g["bf16_dense_tflops"]),
            _f(g["fp8_dense_tflops"]),
            g["interconnect"],
            _f(g["interconnect_gbps"]),
            g["tdp_w"],
            g["source"],
            g["source_quality"],
            g["notes"],
        )
        for g in records["gpu_models"]
    }
    servers = {
        s["key"]: Server(
            s["key"],
            s["name"],
            s["gpu_model_key"],
            s["gpus_per_server"],
            _f(s["power_kw"]),
            s["reference"],
            s["source"],
            s["source_quality"],
            s["notes"],
        )
        for s in records["servers"]
    }
    prices = tuple(
        Price(
            i,
            p["option"],
            p["provider"],
            p["item"],
            p["subject"],
            p["unit"],
            _range(p),
            p["currency"],
            p["region"],
            p["valid_from"],
            p["valid_to"],
            p["source"],
            p["source_quality"],
            p["notes"],
        )
        for i, p in enumerate(records["prices"], start=1)
    )
    assumptions = {
        (a["option"], a["key"]): Assumption(
            i, a["option"], a["key"], a["unit"], _range(a), a["source"], a["source_quality"], a["rationale"]
        )
        for i, a in enumerate(records["assumptions"], start=1)
    }
    rules = tuple(
        Rule(
            r["key"],
            r["option"],
            r["description"],
            r["match"],
            tuple(Condition(c["field"], c["op"], c["value"]) for c in r["conditions"]),
            r["effect"],
            _f(r["points"]),
            r["reason"],
            r["rationale"],
            r["source"],
            r["source_quality"],
        )
        for r in records["rules"]
    )
    return Knowledge("kv-seeds", dt.datetime(2025, 1, 1, tzinfo=dt.UTC), gpus, servers, prices, assumptions, rules)
