"""Golden answers: the computing endpoints must answer byte for byte what they answered when the
fixture was recorded, over a few hundred varied, deterministic requests.

The requests are drawn from a seeded generator (``cases``) and stored with the SHA-256 of each answer
(status, media type and body) in ``tests/data/golden/answers.jsonl``; a few answers are stored whole in
``tests/data/golden/full/`` so that a failure shows what changed. Every endpoint that computes is
covered: price comparisons (JSON and CSV), evaluations (one profile with ``detail: "full"``, small
and vectorised batches), recommendations with ``store=false`` (confidence block and break-even
sentence included), break-even, sensitivity and uncertainty with a seed; and some refused bodies,
whose problem details must not change either.

An optimisation must leave this test green. A deliberate change of answers (new seeds, new
methodology, new wording) re-records the fixture, reviewed in the diff::

    GOLDEN_UPDATE=1 .venv/bin/pytest -q tests/test_golden.py
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

GOLDEN = Path(__file__).parent / "data" / "golden"
ANSWERS = GOLDEN / "answers.jsonl"
FULL = GOLDEN / "full"
#: cases whose whole answer is stored next to the digests (one per endpoint kind)
FULL_CASES = ("comparison-0000", "evaluation-0000", "recommendation-0000", "break-even-0000", "sensitivity-0000",
              "uncertainty-0000", "batch-0000", "invalid-0000", "training-plan-0000",
              "training-candidates-0000")  # fmt: skip

GPU_MODELS = ["a100_80gb", "ascend_910b", "b200", "h100_sxm", "h20", "h200_sxm", "h800_sxm", "l40s", "rtx_4090"]
PROVIDERS = ["alibaba_cloud", "aws", "azure", "baidu_cloud", "china_market", "coreweave", "gcp", "lambda", "nebius",
             "oci", "own", "platform", "runpod", "together_ai", "ucloud", "vast", "verda", "hyperstack"]  # fmt: skip
REGIONS = ["CN", "US", "us-east-1", "us-west-2", "eu-central-1", "cn-beijing", "cn-shanghai", "global", "eastus",
           "europe-west4", "ap-northeast-1", "us-central1"]  # fmt: skip
RENTAL_PLANS = ["on_demand", "spot", "reserved_1y", "reserved_3y", "monthly", "capacity_block"]
AS_OF = ["2026-12-01", "2026-06-15", "2026-02-01", "2025-12-31"]
COST_FIELDS = ("gpus", "utilization", "horizon_years", "rental_plan", "currency", "as_of", "gpu_model", "providers",
               "regions")  # fmt: skip

NARROWING = ("gpu_model", "providers", "regions")


def profile(rng: random.Random) -> dict[str, Any]:
    """One varied profile; optional fields absent more often than present, as callers send them."""
    p: dict[str, Any] = {
        "gpus": rng.choice([1, 2, 4, 7, 8, 16, 24, 64, 100, 256, 512, 1000, 4096, rng.randint(1, 2000)]),
        "utilization": rng.choice([0.001, 0.05, 0.3, 0.6, 0.85, 1.0, round(rng.uniform(0.01, 1), 3)]),
        "horizon_years": rng.choice([0.25, 0.5, 1, 2, 3, 5, 7.5, 10, round(rng.uniform(0.1, 10), 2)]),
        "as_of": rng.choice(AS_OF),
    }
    if rng.random() < 0.3:
        p["rental_plan"] = rng.choice(RENTAL_PLANS)
    if rng.random() < 0.4:
        p["currency"] = rng.choice(["CNY", "USD", "EUR"])
    if rng.random() < 0.4:
        p["gpu_model"] = rng.choice(GPU_MODELS)
    if rng.random() < 0.12:
        p["providers"] = rng.sample(PROVIDERS, rng.randint(1, 4))
    if rng.random() < 0.1:
        p["regions"] = rng.sample(REGIONS, rng.randint(1, 3))
    if rng.random() < 0.7:
        p["team_size"] = rng.choice([1, 3, 10, 20, 50, 200])
    if rng.random() < 0.6:
        p["ops_team"] = rng.choice(["none", "basic", "professional"])
    if rng.random() < 0.5:
        p["data_security"] = rng.choice(["standard", "high", "extreme"])
    if rng.random() < 0.6:
        p["start_within_days"] = rng.choice([0, 7, 14, 30, 90, 365])
    if rng.random() < 0.2:
        p["capex_budget"] = rng.choice([1e5, 1e6, 2.5e7, 1e8])
    if rng.random() < 0.2:
        p["delay_cost_per_day"] = rng.choice([1000, 50_000, 2.5e5])
    if rng.random() < 0.25:
        w = {k: rng.choice([0, 0.5, 1, 2, 5]) for k in ("cost", "efficiency", "stability", "usability")}
        p["weights"] = w if any(w.values()) else {"cost": 1}
    return p


def comparison(p: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in p.items() if k in COST_FIELDS}


INVALID: list[dict[str, Any]] = [
    {"gpus": 0, "utilization": 0.5, "horizon_years": 1},
    {"gpus": 8, "utilization": 1.5, "horizon_years": 1},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 11},
    {"gpus": 8, "utilization": 0.5},
    {"gpus": "8", "utilization": 0.5, "horizon_years": 1},
    {"gpus": 8, "utilization": False, "horizon_years": 1},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "currency": "usd"},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "currency": "JPY"},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "gpu_model": "nope"},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "providers": ["nobody"]},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "regions": ["mars-1"]},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "rental_plan": "forever"},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "ops_team": "huge"},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "weights": {"cost": 0}},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "team_size": 0, "extra": 1},
    {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "as_of": "yesterday"},
]


def training_run(rng: random.Random) -> dict[str, Any]:
    """One varied training run (POST /v1/training-plans), without a GPU model."""
    run: dict[str, Any] = {
        "parameters": rng.choice([1.3e9, 7e9, 7e10, 4.05e11]),
        "tokens": rng.choice([1e11, 2e12, 1.5e13]),
        "gpus": rng.choice([8, 64, 256, 1024]),
        "as_of": rng.choice(AS_OF),
    }
    if rng.random() < 0.5:
        run["currency"] = rng.choice(["CNY", "USD"])
    if rng.random() < 0.5:
        run["buyer_country"] = rng.choice(["US", "CN", "DE"])
    if rng.random() < 0.3:
        run["finish_within_days"] = rng.choice([30, 90, 365])
    if rng.random() < 0.2:
        run["precision"] = "fp8"
    if rng.random() < 0.3:
        run["ops_team"] = rng.choice(["basic", "professional"])
    return run


def cases() -> Iterator[tuple[str, str, str, dict[str, str], Any]]:
    """(id, method, path, extra headers, JSON body) of every golden request, always the same ones."""
    rng = random.Random(20261203)
    profiles = [profile(rng) for _ in range(300)]
    for i, p in enumerate(profiles[:220]):
        yield f"comparison-{i:04d}", "POST", "/v1/price-comparisons", {}, comparison(p)
    for i, p in enumerate(profiles[220:236]):
        yield f"comparison-csv-{i:04d}", "POST", "/v1/price-comparisons", {"Accept": "text/csv"}, comparison(p)
    for i, p in enumerate(profiles[:220]):
        yield f"evaluation-{i:04d}", "POST", "/v1/evaluations", {}, {"profiles": [p], "detail": "full"}
    for i in range(8):
        size = [3, 8, 9, 40][i % 4]
        start = (i * 37) % 250
        # no filter that can leave an option without offers: one such profile refuses the whole batch
        batch = [{k: v for k, v in q.items() if k not in NARROWING} for q in profiles[start : start + size]]
        detail = ["scores", "full"][i % 2]
        yield f"batch-{i:04d}", "POST", "/v1/evaluations", {}, {"profiles": batch, "detail": detail}
    for i, p in enumerate(profiles[220:270]):
        yield f"recommendation-{i:04d}", "POST", "/v1/recommendations?store=false", {}, p
    for i, p in enumerate(profiles[280:284]):
        yield f"break-even-{i:04d}", "POST", "/v1/break-even", {}, p
    for i, p in enumerate(profiles[285:291]):
        yield f"sensitivity-{i:04d}", "POST", "/v1/sensitivity", {}, p
    for i, p in enumerate(profiles[260:300]):
        body = {**p, "draws": rng.choice([100, 250, 1000, 3000]), "seed": rng.randint(0, 2**32 - 1)}
        yield f"uncertainty-{i:04d}", "POST", "/v1/uncertainty", {}, body
    for i, body in enumerate(INVALID):
        path = ["/v1/price-comparisons", "/v1/recommendations?store=false", "/v1/evaluations"][i % 3]
        yield f"invalid-{i:04d}", "POST", path, {}, {"profiles": [body]} if path == "/v1/evaluations" else body
    runs = random.Random(20261205)
    for i in range(12):  # one GPU model: the answer per option
        body = {**training_run(runs), "gpu_model": runs.choice(["h100_sxm", "b200", "a100_80gb", "h20", "rtx_4090"])}
        body.pop("finish_within_days", None)
        if body["gpu_model"] in ("a100_80gb",):
            body.pop("precision", None)
        yield f"training-plan-{i:04d}", "POST", "/v1/training-plans", {}, body
    for i in range(6):  # across GPU models: the candidates
        yield f"training-candidates-{i:04d}", "POST", "/v1/training-plans", {}, training_run(runs)


def answer_bytes(status: int, media_type: str, body: bytes) -> bytes:
    return f"{status}\n{media_type}\n".encode() + body


@pytest.mark.slow
def test_the_computing_endpoints_answer_as_recorded(sqlite_client: TestClient) -> None:  # type: ignore[type-arg]
    got: dict[str, tuple[str, str, bytes]] = {}
    for case_id, method, path, headers, body in cases():
        # a fixed request id: problem details carry it; a JSON body is declared as one (415 otherwise)
        sent = {**headers, "X-Request-ID": f"golden-{case_id}", "Content-Type": "application/json"}
        resp = sqlite_client.request(method, path, headers=sent, content=json.dumps(body, separators=(",", ":")))
        raw = answer_bytes(resp.status_code, resp.headers.get("content-type", ""), resp.content)
        request = json.dumps({"method": method, "path": path, "headers": headers, "body": body}, sort_keys=True)
        got[case_id] = (request, hashlib.sha256(raw).hexdigest(), resp.text)
        assert resp.status_code != 500, (case_id, resp.text)

    if os.environ.get("GOLDEN_UPDATE") == "1":
        FULL.mkdir(parents=True, exist_ok=True)
        with ANSWERS.open("w") as out:
            for case_id, (request, digest, _) in got.items():
                out.write(json.dumps({"id": case_id, "request": json.loads(request), "sha256": digest}) + "\n")
        for case_id in FULL_CASES:
            (FULL / f"{case_id}.txt").write_text(got[case_id][2])
        return

    recorded = [json.loads(line) for line in ANSWERS.read_text().splitlines() if line]
    assert [r["id"] for r in recorded] == list(got), "the golden cases changed: re-record with GOLDEN_UPDATE=1"
    for r in recorded:
        request, digest, text = got[r["id"]]
        assert json.loads(request) == r["request"], f"{r['id']}: the request changed"
        if digest != r["sha256"]:
            full = FULL / f"{r['id']}.txt"
            expected = full.read_text() if full.exists() else "(only its digest is stored)"
            raise AssertionError(f"{r['id']}: the answer changed\nrecorded: {expected[:2000]}\nnow: {text[:2000]}")
    for case_id in FULL_CASES:
        assert (FULL / f"{case_id}.txt").read_text() == got[case_id][2], case_id
