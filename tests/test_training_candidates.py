"""POST /v1/training-plans across GPU models: the candidates (GPU model × option), ranked feasible first and
then by cost per million trained tokens, and the recommended one with its reason (docs/training-plans.md,
docs/methodology.md "Work: throughput and cost per token")."""

from __future__ import annotations

import pytest

from app.domain.shared import costs

URL = "/v1/training-plans"
#: 70B parameters on 2T tokens, 256 GPUs: 6 × 7e10 × 2e12 = 8.4e23 FLOPs
RUN = {"parameters": 7e10, "tokens": 2e12, "gpus": 256, "as_of": "2026-12-01"}
US = {**RUN, "currency": "USD", "buyer_country": "US"}
CN = {**RUN, "currency": "CNY", "buyer_country": "CN"}
FLOPS = 6 * 7e10 * 2e12


def post(client, body, **headers):
    r = client.post(URL, json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def codes(c):
    return {x["code"] for x in c["reason_codes"]}


def test_every_gpu_model_is_a_candidate_with_its_compute(sqlite_client):
    doc = post(sqlite_client, US)
    assert doc["flops"] == pytest.approx(FLOPS) and doc["tokens"] == 2e12 and doc["precision"] == "bf16"
    work = {w["gpu_model"]: w for w in doc["work"]}
    assert {"h100_sxm", "h200_sxm", "b200", "a100_80gb", "ascend_910b", "h20"} <= set(work)
    for key, w in work.items():
        # GPU-hours = FLOPs ÷ (peak × 10¹² × MFU × 3600), the high MFU giving the low end
        assert w["gpu_hours"]["expected"] == pytest.approx(
            FLOPS / (w["peak_tflops"] * 1e12 * w["mfu"]["expected"] * 3600), rel=1e-3
        ), key
        assert w["gpu_hours"]["low"] == pytest.approx(
            FLOPS / (w["peak_tflops"] * 1e12 * w["mfu"]["high"] * 3600), rel=1e-3
        )
        # tokens/s = n × peak × MFU ÷ (6 × N)
        assert w["tokens_per_second"]["expected"] == pytest.approx(
            256 * w["peak_tflops"] * 1e12 * w["mfu"]["expected"] / (6 * 7e10), rel=1e-3
        )
        assert len(w["sources"]) == 2 and all(w["sources"])
    # by hand on the H100: 8.4e23 ÷ (989e12 × 0.40 × 3600) = 589,821 GPU-hours at its 40 % MFU (Llama 3)
    assert work["h100_sxm"]["gpu_hours"]["expected"] == pytest.approx(8.4e23 / (989e12 * 0.40 * 3600), rel=1e-3)
    pairs = {(c["gpu_model"], c["option"]) for c in doc["candidates"]}
    assert len(pairs) == len(doc["candidates"]) == len(work) * 3


def test_ranked_feasible_first_then_cheapest_per_token(sqlite_client):
    doc = post(sqlite_client, US)
    cands = doc["candidates"]
    feasible = [c for c in cands if c["feasible"]]
    assert feasible and cands[: len(feasible)] == feasible
    per_token = [c["cost_per_million_tokens"]["expected"] for c in feasible]
    assert per_token == sorted(per_token)
    planned = [c for c in cands if c["total_cost"] is not None]
    for c in planned:
        # cost per million tokens = total cost ÷ tokens × 10⁶, at each end
        for end in ("low", "expected", "high"):
            assert c["cost_per_million_tokens"][end] == pytest.approx(c["total_cost"][end] / 2e12 * 1e6, rel=1e-3)
        assert c["gpus"] == 256 and c["offer"] is not None and c["offer"]["gpu_model"] == c["gpu_model"]
    for c in cands:
        if c["total_cost"] is None:  # no offer of that GPU model on that option
            assert not c["feasible"] and c["error_code"] == "no-offer"
    best = feasible[0]
    assert doc["recommended"] == {"gpu_model": best["gpu_model"], "option": best["option"]}
    assert "the lowest cost per million tokens" in doc["recommendation"]


def test_a_chinese_buyer_is_bound_by_its_rules(sqlite_client):
    doc = post(sqlite_client, CN)
    by = {(c["gpu_model"], c["option"]): c for c in doc["candidates"]}
    # the B200 is export-controlled for China wherever it runs; an own H100 cluster is not procurable there
    assert "violation.export-controlled" in codes(by[("b200", "rented_gpu_instances")])
    assert not by[("b200", "rented_gpu_instances")]["feasible"]
    assert "violation.not-procurable" in codes(by[("h100_sxm", "self_built_cluster")])
    # the parts China can buy are priced on an own cluster there
    assert by[("ascend_910b", "self_built_cluster")]["feasible"]
    assert by[("h20", "self_built_cluster")]["feasible"]
    # the 910B sustains 320 × its MFU against the H20's 148 × its MFU: about twice the work per GPU-hour
    work = {w["gpu_model"]: w for w in doc["work"]}
    ratio = work["h20"]["gpu_hours"]["expected"] / work["ascend_910b"]["gpu_hours"]["expected"]
    assert ratio == pytest.approx(
        (320 * work["ascend_910b"]["mfu"]["expected"]) / (148 * work["h20"]["mfu"]["expected"]), rel=1e-3
    )
    best = next(c for c in doc["candidates"] if c["feasible"])
    assert doc["recommended"] == {"gpu_model": best["gpu_model"], "option": best["option"]}
    assert doc["currency"] == "CNY" and doc["buyer_country"] == "CN"


def test_a_deadline_the_cheapest_misses(sqlite_client):
    free = post(sqlite_client, CN)
    cheapest = next(c for c in free["candidates"] if c["feasible"])
    days = cheapest["calendar_days"]["expected"]
    faster = [
        c
        for c in free["candidates"]
        if c["feasible"] and c["calendar_days"]["expected"] < days - 1 and c is not cheapest
    ]
    assert faster, "the reference price book has a faster candidate than the cheapest"
    within = days - 1
    doc = post(sqlite_client, {**CN, "finish_within_days": within})
    by = {(c["gpu_model"], c["option"]): c for c in doc["candidates"]}
    late = by[(cheapest["gpu_model"], cheapest["option"])]
    assert not late["feasible"] and codes(late) == {"training.deadline"}
    best = next(c for c in doc["candidates"] if c["feasible"])
    assert best["calendar_days"]["expected"] <= within
    assert doc["recommended"] == {"gpu_model": best["gpu_model"], "option": best["option"]}
    assert doc["finish_within_days"] == within
    assert "finish in time" in doc["recommendation"] and "but needs" in doc["recommendation"]


def test_no_candidate_can_finish_is_200_with_every_reason(sqlite_client):
    doc = post(sqlite_client, {**US, "finish_within_days": 1})
    assert doc["recommended"] is None
    assert doc["recommendation"] == "No GPU model and option can run it as asked; every candidate says why."
    for c in doc["candidates"]:
        assert not c["feasible"]
        assert c["reasons"] or c["error"]


def test_a_model_whose_state_does_not_fit(sqlite_client):
    # 1T parameters × 16 bytes = 16,000 GB of state against 8 × 80 GB of H100s
    doc = post(sqlite_client, {**US, "parameters": 1e12, "gpus": 8, "gpu_models": ["h100_sxm", "b200"]})
    for c in doc["candidates"]:
        if c["total_cost"] is not None:
            assert "training.memory" in codes(c), c
            assert not c["feasible"]
    assert doc["recommended"] is None


def test_listed_gpu_models_only(sqlite_client):
    doc = post(sqlite_client, {**US, "gpu_models": ["h100_sxm", "b200", "h100_sxm"]})
    assert [w["gpu_model"] for w in doc["work"]] == ["h100_sxm", "b200"]
    assert {c["gpu_model"] for c in doc["candidates"]} == {"h100_sxm", "b200"}


def test_fp8_leaves_out_the_parts_without_it(sqlite_client):
    doc = post(sqlite_client, {**US, "precision": "fp8"})
    models = {w["gpu_model"] for w in doc["work"]}
    assert "a100_80gb" not in models and "ascend_910b" not in models
    assert "h100_sxm" in models and doc["precision"] == "fp8"
    h100 = next(w for w in doc["work"] if w["gpu_model"] == "h100_sxm")
    assert h100["peak_tflops"] == 1979 and h100["precision"] == "fp8"
    assert any("Not planned at FP8" in n and "A100" in n for n in doc["notes"])


def test_profile_fields_narrow_the_offers(sqlite_client):
    doc = post(sqlite_client, {**US, "providers": ["coreweave"], "gpu_models": ["h100_sxm", "b200"]})
    for c in doc["candidates"]:
        if c["offer"] is not None and c["option"] == "rented_gpu_instances":
            assert c["offer"]["provider"] == "coreweave"


def test_in_chinese(sqlite_client):
    doc = post(sqlite_client, {**CN, "gpu_models": ["ascend_910b", "h20"]}, **{"Accept-Language": "zh"})
    assert "每百万 token 成本最低" in doc["recommendation"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"gpu_models": ["h100_sxm", "h999"]}, "gpu_models.1"),
        ({"gpu_models": ["a100_80gb"], "precision": "fp8"}, "precision"),
        ({"gpu_model": "ascend_910b", "precision": "fp8"}, "precision"),
        ({"buyer_country": "ZZ"}, "buyer_country"),
        ({"providers": ["nobody"]}, "providers"),
    ],
)
def test_unknown_references_are_422_naming_the_field(sqlite_client, changes, field):
    r = sqlite_client.post(URL, json={**US, **changes})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["field"] == field


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"gpu_model": "h100_sxm", "gpu_models": ["b200"]}, "gpu_models"),
        ({"precision": "fp4"}, "precision"),
        ({"finish_within_days": 0}, "finish_within_days"),
        ({"gpu_models": []}, "gpu_models"),
    ],
)
def test_invalid_fields_are_400_naming_the_field(sqlite_client, changes, field):
    r = sqlite_client.post(URL, json={**US, **changes})
    assert r.status_code == 400, r.text
    assert r.json()["field"] == field


def test_one_gpu_model_answers_as_before(sqlite_client):
    doc = post(sqlite_client, {**US, "gpu_model": "h100_sxm"})
    assert set(doc) == {
        "knowledge_version", "methodology_version", "flops", "gpu_hours", "gpu_model", "gpus", "mfu",
        "pricing_basis", "notes", "items", "currency", "as_of", "rental_plan", "ops_team",
    }  # fmt: skip
    # the same compute as the H100's candidate: one throughput for both answers
    across = post(sqlite_client, {**US, "gpu_models": ["h100_sxm"]})
    assert doc["gpu_hours"] == across["work"][0]["gpu_hours"] and doc["mfu"] == across["work"][0]["mfu"]
    by = {c["option"]: c for c in across["candidates"]}
    for item in doc["items"]:
        c = by[item["option"]]
        assert item["total_cost"] == c["total_cost"] and item["calendar_days"] == c["calendar_days"]


def test_rate_limit_cost_grows_with_the_gpu_models():
    assert costs.training_plan({"gpu_model": "h100_sxm"}) == 2
    assert costs.training_plan({"gpu_models": ["h100_sxm", "b200"]}) == 4
    assert costs.training_plan({}) == 12
    assert costs.training_plan("not a body") == 12


def test_the_readme_example(sqlite_client):
    """README "Which GPU": the figures it quotes, on the reference data."""
    us = post(sqlite_client, {**US, "as_of": "2026-12-01"})
    first = [
        (c["gpu_model"], c["option"], round(c["cost_per_million_tokens"]["expected"], 2)) for c in us["candidates"][:4]
    ]
    assert first == [
        ("h100_sxm", "self_built_cluster", 0.62),
        ("a100_80gb", "self_built_cluster", 1.12),
        ("h100_sxm", "rented_gpu_instances", 1.52),
        ("b200", "rented_gpu_instances", 1.64),
    ]
    work = {w["gpu_model"]: round(w["gpu_hours"]["expected"]) for w in us["work"]}
    assert (work["h100_sxm"], work["b200"], work["ascend_910b"]) == (589_821, 280_280, 1_778_455)
    late = post(sqlite_client, {**US, "finish_within_days": 100})
    assert late["recommended"] == {"gpu_model": "b200", "option": "rented_gpu_instances"}
    cn = post(sqlite_client, CN)
    first = [
        (c["gpu_model"], c["option"], round(c["cost_per_million_tokens"]["expected"], 2)) for c in cn["candidates"][:2]
    ]
    assert first == [("ascend_910b", "self_built_cluster", 8.38), ("h100_sxm", "rented_gpu_instances", 10.16)]
    h20 = next(c for c in cn["candidates"] if (c["gpu_model"], c["option"]) == ("h20", "self_built_cluster"))
    assert round(h20["cost_per_million_tokens"]["expected"], 2) == 15.66 and h20["feasible"]
