"""Work on every comparison (issue 36, item 3): each option of a price comparison and of a recommendation
states its cost per useful PFLOP-hour at the profile's ``precision``,

    cost per useful PFLOP-hour = cost per useful GPU-hour ÷ (dense peak TFLOPS × MFU ÷ 1000),

the chosen offer's GPU model's dense peak at the precision and its MFU from the knowledge base (the low
cost over the high MFU at the low end); null where the offer's GPU model is not named or has no peak at
the precision; a precision the profile's ``gpu_model`` has no peak at is refused (422 naming ``precision``).
The expected figures are worked out here by hand from the knowledge base's rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import make_client
from litestar import Litestar
from litestar.testing import TestClient
from seed_snapshot import knowledge_from_seeds

from app.core.errors import MissingKnowledge
from app.core.ranges import Range
from app.domain.shared.convert import pflop_hour_read
from app.engine.throughput import Throughput, cost_per_pflop_hour
from app.settings import PROJECT_ROOT

Client = TestClient[Litestar]
COMPARE, RECOMMEND, EVALUATE = "/v1/price-comparisons", "/v1/recommendations", "/v1/evaluations"
H100: dict[str, Any] = {"gpus": 64, "utilization": 0.8, "horizon_years": 3, "currency": "USD", "gpu_model": "h100_sxm"}


@pytest.fixture(scope="module")
def client(seeded_db: str) -> Iterator[Client]:
    """One client per backend for the module: these tests only read."""
    with make_client(seeded_db) as c:
        yield c


def mfu(key: str) -> Range:
    """An MFU row of the knowledge base the service loads (the shipped seeds)."""
    return knowledge_from_seeds().assumption_value("*", key)[0]


def by_hand(cost: dict[str, float], peak_tflops: float, share: Range) -> dict[str, float]:
    """Cost per GPU-hour ÷ sustained PFLOPS per GPU: low cost over high MFU, high cost over low MFU."""
    return {
        "low": cost["low"] / (peak_tflops * share.high / 1000),
        "expected": cost["expected"] / (peak_tflops * share.expected / 1000),
        "high": cost["high"] / (peak_tflops * share.low / 1000),
    }


def close(found: dict[str, float] | None, expected: dict[str, float]) -> None:
    # the answer's cost per GPU-hour is rounded to 4 decimals, the PFLOP-hour cost computed before rounding
    assert found is not None
    for end in ("low", "expected", "high"):
        assert found[end] == pytest.approx(expected[end], rel=1e-4, abs=1e-4), (end, found, expected)


def test_one_case_by_hand() -> None:
    """An H100 (989 dense BF16 TFLOPS) at 35–45 % MFU, bought at 2.00 / 2.50 / 3.00 a useful GPU-hour:
    low 2.00 ÷ (989 × 0.45 ÷ 1000 = 0.44505 PFLOPS) = 4.4939; expected 2.50 ÷ 0.3956 = 6.3195;
    high 3.00 ÷ 0.34615 = 8.6668 a useful PFLOP-hour."""
    work = Throughput("h100_sxm", "bf16", 989.0, Range(0.35, 0.40, 0.45), True, ())
    found = cost_per_pflop_hour(Range(2.0, 2.5, 3.0), work)
    assert [round(v, 4) for v in found] == [4.4939, 6.3195, 8.6668]


def test_a_comparison_on_h100_at_bf16(client: Client) -> None:
    kb = knowledge_from_seeds()
    peak, share = kb.gpus["h100_sxm"].bf16_dense_tflops, mfu("mfu_bf16_h100_sxm")
    assert peak == 989  # NVIDIA H100 SXM datasheet, dense BF16
    r = client.post(COMPARE, json=H100)
    assert r.status_code == 200, r.text
    items = [i for i in r.json()["items"] if i["cost_per_useful_gpu_hour"] is not None]
    assert items
    for i in items:
        assert i["offer"]["gpu_model"] == "h100_sxm"
        close(i["cost_per_useful_pflop_hour"], by_hand(i["cost_per_useful_gpu_hour"], peak, share))
        for alt in i["alternatives"]:
            if alt["offer"]["gpu_model"] == "h100_sxm":
                close(alt["cost_per_useful_pflop_hour"], by_hand(alt["cost_per_useful_gpu_hour"], peak, share))
    # bf16 is the default precision: the same answer when it is said
    assert client.post(COMPARE, json={**H100, "precision": "bf16"}).json()["items"] == r.json()["items"]


def test_fp8_divides_by_the_fp8_peak_and_mfu(client: Client) -> None:
    """At FP8 an H100 sustains its FP8 peak × the FP8 MFU (its own row, else the general ``mfu_fp8``); a
    knowledge version without an FP8 MFU states no figure rather than one from the BF16 MFU."""
    kb = knowledge_from_seeds()
    peak = kb.gpus["h100_sxm"].fp8_dense_tflops
    assert peak == 1979
    share: Range | None = None
    for key in ("mfu_fp8_h100_sxm", "mfu_fp8"):
        try:
            share = mfu(key)
            break
        except MissingKnowledge:
            continue
    r = client.post(COMPARE, json={**H100, "precision": "fp8"})
    assert r.status_code == 200, r.text
    bf16 = client.post(COMPARE, json=H100).json()["items"]
    for i, j in zip(r.json()["items"], bf16, strict=True):
        assert i["cost_per_useful_gpu_hour"] == j["cost_per_useful_gpu_hour"]  # prices do not depend on it
        if i["cost_per_useful_gpu_hour"] is None:
            continue
        if share is None:
            assert i["cost_per_useful_pflop_hour"] is None
        else:
            close(i["cost_per_useful_pflop_hour"], by_hand(i["cost_per_useful_gpu_hour"], peak, share))


@pytest.mark.parametrize("path", [COMPARE, RECOMMEND])
def test_fp8_on_an_a100_is_refused_naming_precision(client: Client, path: str) -> None:
    r = client.post(path, json={**H100, "gpu_model": "a100_80gb", "precision": "fp8"})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["field"] == "precision"
    assert "FP8" in body["detail"] and "BF16" in body["detail"]  # what it lacks, and what it trains at
    zh = client.post(
        path, json={**H100, "gpu_model": "a100_80gb", "precision": "fp8"}, headers={"Accept-Language": "zh"}
    )
    assert zh.status_code == 422 and "知识库" in zh.json()["detail"]


def test_a_precision_outside_the_vocabulary_is_400(client: Client) -> None:
    r = client.post(COMPARE, json={**H100, "precision": "fp16"})
    assert r.status_code == 400, r.text
    assert r.json()["field"] == "precision"


def test_without_a_gpu_model_any_precision_and_no_figure(client: Client) -> None:
    """The source article's reference server names no GPU model: no throughput, so no figure."""
    for precision in ("bf16", "fp8"):
        body = {k: v for k, v in H100.items() if k != "gpu_model"}
        r = client.post(COMPARE, json={**body, "precision": precision})
        assert r.status_code == 200, r.text
        items = [i for i in r.json()["items"] if i["offer"] is not None]
        assert items
        for i in items:
            assert i["offer"]["gpu_model"] is None
            assert i["cost_per_useful_pflop_hour"] is None


def test_null_where_the_gpu_model_has_no_peak_or_is_unknown() -> None:
    kb = knowledge_from_seeds()
    cost = Range(1.0, 2.0, 3.0)
    assert pflop_hour_read(kb, cost, None, "bf16") is None
    assert pflop_hour_read(kb, cost, "a100_80gb", "fp8") is None
    assert pflop_hour_read(kb, cost, "no_such_gpu", "bf16") is None
    found = pflop_hour_read(kb, cost, "a100_80gb", "bf16")
    assert found is not None
    close(
        {"low": found.low, "expected": found.expected, "high": found.high},
        by_hand(
            {"low": 1.0, "expected": 2.0, "high": 3.0},
            kb.gpus["a100_80gb"].bf16_dense_tflops,
            mfu("mfu_bf16_a100_80gb"),
        ),
    )


def test_a_recommendations_ranking_entries_carry_it(client: Client) -> None:
    kb = knowledge_from_seeds()
    peak, share = kb.gpus["h100_sxm"].bf16_dense_tflops, mfu("mfu_bf16_h100_sxm")
    r = client.post(RECOMMEND, json=H100)
    assert r.status_code == 201, r.text
    doc = r.json()
    assert doc["profile"]["precision"] == "bf16"
    entries = [e for e in doc["ranking"] if e["cost"] is not None]
    assert entries
    for e in entries:
        close(e["cost_per_useful_pflop_hour"], by_hand(e["cost"]["cost_per_useful_gpu_hour"], peak, share))
    # and the batch's full evaluations, as the recommendation answers them
    full = client.post(EVALUATE, json={"profiles": [H100], "detail": "full"}).json()["evaluations"][0]
    assert [e["cost_per_useful_pflop_hour"] for e in full["ranking"]] == [
        e["cost_per_useful_pflop_hour"] for e in doc["ranking"]
    ]


def test_a_vectorised_batch_takes_precisions_and_refuses_one_a_part_lacks(client: Client) -> None:
    """More than 8 profiles are evaluated vectorised; profiles of either precision rank the same
    (prices do not depend on it), and fp8 on an A100 is refused as one profile alone is."""
    profiles = [{**H100, "gpus": 8 * (1 + n // 2), "precision": ("bf16", "fp8")[n % 2]} for n in range(12)]
    r = client.post(EVALUATE, json={"profiles": profiles})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 12
    for bf16, fp8 in zip(results[::2], results[1::2], strict=True):
        assert bf16 == fp8
    bad = [*profiles, {**H100, "gpu_model": "a100_80gb", "precision": "fp8"}]
    r = client.post(EVALUATE, json={"profiles": bad})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "precision"


def test_the_comparison_csv_states_it(client: Client) -> None:
    doc = client.post(COMPARE, json=H100).json()
    r = client.post(COMPARE, json=H100, headers={"Accept": "text/csv"})
    assert r.status_code == 200, r.text
    rows = list(csv.DictReader(io.StringIO(r.content.decode("utf-8-sig"))))
    totals = {row["option"]: row for row in rows if row["record"] == "total"}
    for i in doc["items"]:
        found = i["cost_per_useful_pflop_hour"]
        for end in ("low", "expected", "high"):
            cell = totals[i["option"]][f"cost_per_useful_pflop_hour_{end}_usd"]
            assert cell == ("" if found is None else str(found[end]))
    assert {row["request_precision"] for row in rows} == {"bf16"}


def test_the_readme_figures_are_the_services(client: Client) -> None:
    """README "Cost per unit of work": an own H100 cluster's cost per useful GPU-hour and PFLOP-hour."""
    readme = " ".join((PROJECT_ROOT / "README.md").read_text(encoding="utf-8").split())
    body = {**H100, "as_of": "2026-12-01"}
    said = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in body.items())
    assert f"(`{said}`)" in readme
    found: dict[str, Any] = {}
    for precision in ("bf16", "fp8"):
        items = client.post(COMPARE, json={**body, "precision": precision}).json()["items"]
        found[precision] = next(i for i in items if i["option"] == "self_built_cluster")
    per_gpu_hour = found["bf16"]["cost_per_useful_gpu_hour"]["expected"]
    bf16 = found["bf16"]["cost_per_useful_pflop_hour"]["expected"]
    fp8 = found["fp8"]["cost_per_useful_pflop_hour"]["expected"]
    kb = knowledge_from_seeds()
    share_bf16, share_fp8 = mfu("mfu_bf16_h100_sxm").expected, mfu("mfu_fp8_h100_sxm").expected
    sustained = kb.gpus["h100_sxm"].bf16_dense_tflops * share_bf16 / 1000
    assert (
        f"an own cluster's {per_gpu_hour:.2f} USD per useful GPU-hour (expected) is {bf16:.2f} USD per useful "
        f"PFLOP-hour at BF16 (989 TFLOPS × {share_bf16:.0%} MFU = {sustained:.4f} PFLOPS) and {fp8:.2f} at FP8 "
        f"(1,979 TFLOPS × {share_fp8:.0%})"
    ).replace("%", " %") in readme
