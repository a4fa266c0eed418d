"""A capacity plan answered per GPU model (docs/methodology.md "Capacity plans", "Answered per GPU
model"): the demand, counted in GPUs of `gpu_model`, converted into each listed model's GPUs by
sustained throughput, ceil(gpus × sustained(demand's model) ÷ sustained(m)), and planned on each; the
recommended model is the feasible one whose recommended portfolio has the lowest effective NPV."""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

import pytest
from litestar.testing import TestClient
from seed_snapshot import knowledge_from_seeds

from app.domain.shared import costs
from app.engine import capacity as cap
from app.engine.throughput import throughput
from app.i18n import translate

Client = TestClient  # type: ignore[type-arg]
PATH = "/v1/capacity-plans"
TEAM: dict[str, Any] = {
    "team_size": 20,
    "ops_team": "professional",
    "start_within_days": 120,
    "as_of": "2026-12-01",
    "currency": "USD",
    "gpu_model": "h100_sxm",
}
#: 256 H100 at 90 % for two years: one phase
FLAT: dict[str, Any] = {**TEAM, "gpus": 256, "utilization": 0.9, "horizon_years": 2}
#: 64 H100 the first year, 256 the second, at 90 %
STEP: dict[str, Any] = {
    **TEAM,
    "horizon_years": 2,
    "demand": [
        {"months": 12, "gpus": 64, "utilization": 0.9},
        {"months": 12, "gpus": 256, "utilization": 0.9, "largest_job_gpus": 128},
    ],
}
HOURS_PER_YEAR = 8760
CJK = re.compile(r"[\u4e00-\u9fff]")


def post(client: Client, body: dict[str, Any], status: int = 200, **headers: str) -> dict[str, Any]:
    r = client.post(PATH, json=body, headers=headers)
    assert r.status_code == status, r.text
    doc: dict[str, Any] = r.json()
    return doc


# ---- the conversion, by hand ---------------------------------------------------------------------


def test_a_demand_converts_by_sustained_throughput() -> None:
    kb = knowledge_from_seeds()
    h100, b200, h20 = (throughput(kb, g, "bf16").sustained_tflops for g in ("h100_sxm", "b200", "h20"))
    # the knowledge's figures: dense BF16 peak × expected MFU (docs/methodology.md, the throughput table)
    assert h100 == pytest.approx(989 * 0.40) and b200 == pytest.approx(2250 * 0.37) and h20 == pytest.approx(148 * 0.50)
    factor = cap.equivalent_factor(kb, "h100_sxm", "b200", "bf16")
    assert factor == pytest.approx(h100 / b200, rel=1e-12)
    # 256 H100 = 256 × 395.6 ÷ 832.5 = 121.65 B200: 122 whole GPUs
    assert math.ceil(256 * 395.6 / 832.5) == 122
    flat = cap.in_gpus_of(cap.flat(256, 0.9, 2.0), factor)
    assert [(p.gpus, p.largest_job_gpus, p.months, p.utilization) for p in flat] == [(122, 122, 24, 0.9)]
    # each phase and its largest job: 64 → ceil(30.41) = 31, 256 → 122, a 128-GPU job → ceil(60.83) = 61
    step = cap.in_gpus_of(cap.phases([(12, 64, 0.9, None), (12, 256, 0.9, 128)]), factor)
    assert [(p.gpus, p.largest_job_gpus) for p in step] == [(31, 31), (122, 61)]
    # 256 H100 = 256 × 395.6 ÷ 74.0 = 1,368.6 H20: 1,369
    h20s = cap.in_gpus_of(cap.flat(256, 0.9, 2.0), cap.equivalent_factor(kb, "h100_sxm", "h20"))
    assert h20s[0].gpus == math.ceil(256 * h100 / h20) == 1369
    # at FP8: 1,979 × 0.27 against 4,500 × 0.25
    fp8 = cap.equivalent_factor(kb, "h100_sxm", "b200", "fp8")
    assert fp8 == pytest.approx(1979 * 0.27 / (4500 * 0.25), rel=1e-9)
    assert cap.in_gpus_of(cap.flat(256, 0.9, 2.0), 1.0)[0].gpus == 256  # the same model: as it is


# ---- through the API ------------------------------------------------------------------------------


def test_per_model_is_there_only_with_gpu_models(sqlite_client: Client) -> None:
    plain = post(sqlite_client, FLAT)
    assert not {"per_model", "recommended_gpu_model", "gpu_model_reason", "gpu_model_reason_code"} & set(plain)
    doc = post(sqlite_client, {**FLAT, "gpu_models": ["h100_sxm", "b200"]})
    # the top stays the demand's own model's: the same answer with the per-model fields added
    assert {k: v for k, v in doc.items() if k in plain} == plain
    kb = knowledge_from_seeds()
    h100, b200 = (throughput(kb, g).sustained_tflops for g in ("h100_sxm", "b200"))
    own, other = doc["per_model"]
    assert (own["gpu_model"], own["gpus_per_demand_gpu"], own["gpus_by_phase"]) == ("h100_sxm", 1.0, [256])
    assert other["gpu_model"] == "b200" and other["name"] == kb.gpus["b200"].name
    assert other["gpus_per_demand_gpu"] == pytest.approx(h100 / b200, abs=1e-4)
    assert other["gpus_by_phase"] == [122]
    # the demand's own model is the top-level plan: its recommended portfolio, its figures
    top = next(p for p in doc["portfolios"] if p["key"] == doc["recommended"])
    assert own["recommended"] == top["key"] and own["portfolio_name"] == top["name"]
    for field in ("total_cost", "npv_cost", "cost_per_useful_gpu_hour", "effective_npv_cost", "reasons"):
        assert own[field] == top[field], field
    # every model's cost per useful GPU-hour is over the demand's useful H100-hours, 256 × 0.9 × 2 years
    # (a feasible portfolio serves its demand within 0.1 %)
    hours = 256 * 0.9 * HOURS_PER_YEAR * 2
    for m in doc["per_model"]:
        assert m["feasible"] and m["optimal"] in (True, False)
        for end in ("low", "expected", "high"):
            assert m["cost_per_useful_gpu_hour"][end] == pytest.approx(m["total_cost"][end] / hours, rel=1e-3)


def test_the_recommended_model_is_the_feasible_one_with_the_lowest_effective_npv(sqlite_client: Client) -> None:
    doc = post(sqlite_client, {**STEP, "gpu_models": ["b200", "h100_sxm", "a100_80gb"]})
    assert [m["gpu_model"] for m in doc["per_model"]] == ["b200", "h100_sxm", "a100_80gb"]
    assert [m["gpus_by_phase"] for m in doc["per_model"]] == [[31, 122], [64, 256], [163, 650]]
    feasible = [m for m in doc["per_model"] if m["feasible"]]
    assert len(feasible) >= 2
    best = min(feasible, key=lambda m: m["effective_npv_cost"])
    assert doc["recommended_gpu_model"] == best["gpu_model"]
    runner_up = sorted(feasible, key=lambda m: m["effective_npv_cost"])[1]
    code = doc["gpu_model_reason_code"]
    assert code["code"] == "capacity.gpu_model_cheapest"
    assert code["params"]["gpu"] == best["name"] and code["params"]["other"] == runner_up["name"]
    assert f"{best['effective_npv_cost']:,.0f} USD" in doc["gpu_model_reason"]
    assert f"{runner_up['effective_npv_cost']:,.0f} USD" in doc["gpu_model_reason"]


def test_owned_gpus_count_in_each_models_gpus(sqlite_client: Client) -> None:
    """128 A100 owned, jobs of at most 64 H100: on H100 they are worth floor(128 × 156.0 ÷ 395.6) = 50
    GPUs; on the A100 plan (650 A100, jobs of ceil(64 × 395.6 ÷ 156.0) = 163) they are 128 of its own,
    and that plan is the one asked for directly."""
    owned = [{"gpu_model": "a100_80gb", "count": 128, "age_years": 1.0}]
    body = {**FLAT, "largest_job_gpus": 64, "owned": owned}
    doc = post(sqlite_client, {**body, "gpu_models": ["a100_80gb"]})
    plain = post(sqlite_client, body)
    assert {k: v for k, v in doc.items() if k in plain} == plain
    on_h100 = [s for p in plain["portfolios"] for s in p["segments"] if s["acquired"] == "owned"]
    assert on_h100 and {tuple(s["gpus_by_phase"]) for s in on_h100} == {(math.floor(128 * 156.0 / 395.6),)}
    (a100,) = doc["per_model"]
    assert a100["gpus_by_phase"] == [650] and a100["feasible"]
    direct = post(sqlite_client, {**body, "gpu_model": "a100_80gb", "gpus": 650, "largest_job_gpus": 163})
    rec = next(p for p in direct["portfolios"] if p["key"] == direct["recommended"])
    assert a100["recommended"] == direct["recommended"]
    assert a100["effective_npv_cost"] == rec["effective_npv_cost"] and a100["total_cost"] == rec["total_cost"]
    held = [s for p in direct["portfolios"] for s in p["segments"] if s["acquired"] == "owned"]
    assert held and all(s["gpus_by_phase"] == [128] and s["owned_gpus"] == 128 for s in held)


def test_no_model_can_serve_answers_200_with_reasons(sqlite_client: Client) -> None:
    body = {**FLAT, "gpus": 64, "data_security": "extreme", "start_within_days": 0, "gpu_models": ["b200", "h100_sxm"]}
    doc = post(sqlite_client, body)
    assert doc["recommended"] is None and doc["recommended_gpu_model"] is None
    assert doc["gpu_model_reason_code"]["code"] == "capacity.gpu_model_none"
    for m in doc["per_model"]:
        assert not m["feasible"] and m["recommended"] is None and m["reasons"]
        assert m["effective_npv_cost"] is None and m["cost_per_useful_gpu_hour"] is None


def test_a_model_without_a_server_or_offers_is_answered_not_refused(sqlite_client: Client) -> None:
    """The L40S has no server SKU (the reference server's size steps its plan), the RTX 4090 few offers:
    each is planned, and a model no option can serve says why instead of failing the request."""
    doc = post(sqlite_client, {**FLAT, "gpus": 64, "gpu_models": ["l40s", "rtx_4090", "h100_sxm"]})
    assert [m["gpu_model"] for m in doc["per_model"]] == ["l40s", "rtx_4090", "h100_sxm"]
    for m in doc["per_model"]:
        assert m["feasible"] == (m["recommended"] is not None) and (m["feasible"] or m["reasons"])
    feasible = [m for m in doc["per_model"] if m["feasible"]]
    assert doc["recommended_gpu_model"] == min(feasible, key=lambda m: m["effective_npv_cost"])["gpu_model"]


def test_the_sentence_in_chinese(sqlite_client: Client) -> None:
    doc = post(sqlite_client, {**FLAT, "gpus": 64, "gpu_models": ["b200", "h100_sxm"]}, **{"Accept-Language": "zh"})
    assert doc["language"] == "zh"
    code = doc["gpu_model_reason_code"]
    assert code["code"] in ("capacity.gpu_model_cheapest", "capacity.gpu_model_only")
    assert CJK.search(doc["gpu_model_reason"]) and "实际成本净现值" in doc["gpu_model_reason"]
    params = {
        k: v if isinstance(v, str) else translate(v["code"], "zh", **v["params"]) for k, v in code["params"].items()
    }
    assert doc["gpu_model_reason"] == translate(code["code"], "zh", **params)
    assert all(CJK.search(r) for m in doc["per_model"] for r in m["reasons"])


@pytest.mark.parametrize(
    ("extra", "status", "field"),
    [
        ({"gpu_models": ["b200", "h1000"]}, 422, "gpu_models.1"),
        ({"gpu_models": ["b200", "a100_80gb"], "precision": "fp8"}, 422, "precision"),
        ({"gpu_models": ["b200"], "gpu_model": None}, 422, "gpu_model"),
        ({"gpu_models": []}, 400, "gpu_models"),
        ({"gpu_models": ["b200"] * 7}, 400, "gpu_models"),
    ],
)
def test_bad_gpu_models_name_the_field(sqlite_client: Client, extra: dict[str, Any], status: int, field: str) -> None:
    r = sqlite_client.post(PATH, json={**FLAT, **extra})
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    problem = r.json()
    named = [problem.get("field")] + [e.get("field") for e in problem.get("errors", [])]
    assert any(f is not None and f.startswith(field) for f in named), problem


def test_the_csv_states_the_recommended_model(sqlite_client: Client) -> None:
    body = {**FLAT, "gpus": 64, "gpu_models": ["b200", "h100_sxm"]}
    doc = post(sqlite_client, body)
    r = sqlite_client.post(PATH, json=body, headers={"Accept": "text/csv"})
    rows = list(csv.DictReader(io.StringIO(r.content.decode("utf-8-sig"))))
    assert rows and {row["recommended_gpu_model"] for row in rows} == {doc["recommended_gpu_model"]}
    assert {row["request_gpu_models"] for row in rows} == {"b200, h100_sxm"}
    plain = sqlite_client.post(PATH, json={**FLAT, "gpus": 64}, headers={"Accept": "text/csv"})
    assert "recommended_gpu_model" not in plain.content.decode("utf-8-sig").splitlines()[0]


def test_the_rate_limit_cost_counts_each_model_planned() -> None:
    one = costs.capacity_plan(FLAT)
    assert one == 5 + 1 * 3  # a phase on three options, and the base
    assert costs.capacity_plan({**FLAT, "gpu_models": ["h100_sxm"]}) == one  # the demand's own model: planned once
    assert costs.capacity_plan({**FLAT, "gpu_models": ["h100_sxm", "b200", "h20"]}) == 3 * one
    assert costs.capacity_plan({**STEP, "gpu_models": ["b200", "b200"]}) == 2 * (5 + 2 * 3)
    assert costs.capacity_plan({**FLAT, "gpu_models": "b200"}) == one  # malformed: refused by validation
