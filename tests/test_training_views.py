"""A training plan as people read it (docs/training-plans.md, "Spreadsheets, chart and the explorer"): the
candidates (GPU model × option) as CSV and XLSX with the request's stamp, and as a chart of cost per million
tokens against calendar days, in both languages — first on hand-built answers, then through the API."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from openpyxl import load_workbook

from app.domain.planning import charts, sheets
from app.domain.planning.schemas import (
    CandidateRead,
    Choice,
    TrainingCandidatesRead,
    TrainingPlanCreate,
    TrainingPlanItem,
    TrainingPlanRead,
    WorkRead,
)
from app.domain.shared.schemas import OfferRead, RangeRead
from app.i18n import translate
from app.web.spreadsheets import XLSX

SVG_NS = "{http://www.w3.org/2000/svg}"
URL = "/v1/training-plans"
TOKENS = 2e12
#: a snake_case identifier, which no heading a person reads may be
IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
#: 70B parameters on 2T tokens, 256 GPUs, for a US buyer who needs it within 60 days
RUN = {"parameters": 7e10, "tokens": TOKENS, "gpus": 256, "as_of": "2026-12-01", "currency": "USD",
       "buyer_country": "US", "finish_within_days": 60}  # fmt: skip


def rng(low: float, expected: float, high: float) -> RangeRead:
    return RangeRead(low=low, expected=expected, high=high)


def per_million(total: RangeRead) -> RangeRead:
    """The cost per million tokens of a run's total cost: total × 10⁶ ÷ tokens (by hand: 3.2e6 × 1e6 ÷ 2e12 = 1.6)."""
    return rng(*(v * 1e6 / TOKENS for v in (total.low, total.expected, total.high)))


def offer(name: str, provider: str, region: str, plan: str) -> OfferRead:
    price = rng(68.8, 68.8, 68.8)
    return OfferRead(provider=provider, region=region, gpu_model="b200", subject="HGX B200 (8 GPU)", plan=plan,
                     variant=None, unit="per_server_hour", gpus_per_unit=8, price=price, currency="USD",
                     quoted_price=price, quoted_currency="USD", exchange_rate=None, valid_from=dt.date(2026, 9, 20),
                     residency="dedicated", source="coreweave.com/pricing", source_quality="secondary",
                     price_book="list", name=name)  # fmt: skip


def candidate(gpu: str, option: str, name: str, **figures: Any) -> CandidateRead:
    total = figures.pop("total_cost", None)
    base: dict[str, Any] = {
        "gpu_model": gpu,
        "option": option,
        "name": name,
        "offer": None,
        "gpus": 256,
        "gpu_hours": rng(241_171.4, 280_280.28, 334_528.08),
        "calendar_days": None,
        "total_cost": total,
        "cost_per_million_tokens": None if total is None else per_million(total),
        "feasible": False,
        "reasons": [],
        "reason_codes": [],
    }
    return CandidateRead(**(base | figures))


def candidates_doc(names: dict[str, str] | None = None, **changes: Any) -> TrainingCandidatesRead:
    """Four candidates as the service ranks them: two feasible (the cheaper per token recommended), one that
    misses the 60-day deadline although cheaper, one without a plan."""
    n = {"rented": "Rented GPU instances", "platform": "AI compute platform", "own": "Own GPU cluster"} | (names or {})
    found = [
        candidate("b200", "rented_gpu_instances", n["rented"], feasible=True, calendar_days=rng(42.9, 55.2, 74.8),
                  total_cost=rng(2.4e6, 3.2e6, 4.5e6), upfront_cost=rng(0, 0, 0), committed=False,
                  offer=offer("CoreWeave HGX B200 (8 GPU), global, on demand", "coreweave", "global", "on_demand")),
        candidate("h100_sxm", "ai_compute_platform", n["platform"], feasible=True,
                  calendar_days=rng(90.0, 107.2, 130.3), total_cost=rng(3.28e6, 3.98e6, 4.92e6)),
        candidate("h100_sxm", "self_built_cluster", n["own"], calendar_days=rng(146.3, 175.8, 212.5),
                  total_cost=rng(0.86e6, 1.24e6, 1.92e6),
                  reasons=["Finishes in 175.8 days (lead time included), after the 60.0 days asked."]),
        candidate("b200", "self_built_cluster", n["own"], error="no offer of self_built_cluster for B200",
                  error_code="no-offer"),
    ]  # fmt: skip
    work = [
        WorkRead(gpu_model="b200", name="B200 SXM (HGX/DGX B200)", precision="bf16", peak_tflops=2250.0,
                 mfu=rng(0.31, 0.37, 0.43), sustained_tflops=rng(697.5, 832.5, 967.5),
                 gpu_hours=rng(241_171.4, 280_280.28, 334_528.08), tokens_per_second=rng(4.25e5, 5.07e5, 5.9e5),
                 sources=["NVIDIA B200 datasheet", "MLPerf Training v4.1 (13 November 2024)"]),
        WorkRead(gpu_model="h100_sxm", name="H100 SXM5", precision="bf16", peak_tflops=989.0,
                 mfu=rng(0.35, 0.40, 0.45), sustained_tflops=rng(346.2, 395.6, 445.1),
                 gpu_hours=rng(524_285.7, 589_821.0, 674_081.2), tokens_per_second=rng(2.11e5, 2.41e5, 2.71e5),
                 sources=["NVIDIA H100 datasheet", "Llama 3 (arXiv 2407.21783)"]),
    ]  # fmt: skip
    doc = TrainingCandidatesRead(
        knowledge_version="kv1-test",
        methodology_version="4.1",
        parameters=7e10,
        tokens=TOKENS,
        flops=6 * 7e10 * TOKENS,
        gpus=256,
        precision="bf16",
        finish_within_days=60.0,
        work=work,
        candidates=found,
        recommended=Choice(gpu_model="b200", option="rented_gpu_instances"),
        recommendation="B200 SXM (HGX/DGX B200) on Rented GPU instances: the lowest cost per million tokens.",
        notes=["Each GPU model runs at its own MFU."],
        currency="USD",
        as_of=dt.date(2026, 12, 1),
        rental_plan=None,
        ops_team="none",
        buyer_country="US",
    )
    return TrainingCandidatesRead(**{f: getattr(doc, f) for f in doc.__struct_fields__} | changes)


def single_doc() -> TrainingPlanRead:
    """One GPU model, three options: one priced and feasible, one infeasible, one without a plan."""
    item: dict[str, Any] = {"training_days": rng(9.0, 10.0, 11.0), "gpu_hours_billed": rng(5.5e4, 6e4, 6.6e4)}
    return TrainingPlanRead(
        knowledge_version="kv1-test",
        methodology_version="4.1",
        flops=6 * 7e9 * TOKENS,
        gpu_hours=rng(52_432.0, 58_982.1, 67_408.1),
        gpu_model="h100_sxm",
        gpus=256,
        mfu=rng(0.35, 0.40, 0.45),
        pricing_basis=None,
        notes=["MFU 0.35–0.45 (expected 0.40)."],
        items=[
            TrainingPlanItem(option="rented_gpu_instances", name="Rented GPU instances", feasible=True,
                             calendar_days=rng(10.5, 11.6, 13.0), total_cost=rng(2.5e6, 3.3e6, 4.4e6), **item),
            TrainingPlanItem(option="self_built_cluster", name="Own GPU cluster", feasible=False,
                             calendar_days=rng(76.0, 80.7, 97.0), total_cost=rng(0.6e6, 0.84e6, 1.3e6),
                             reasons=["takes 30–90 days to obtain"], **item),
            TrainingPlanItem(option="ai_compute_platform", name="AI compute platform", calendar_days=None,
                             training_days=None, total_cost=None, gpu_hours_billed=None, error="no offer",
                             error_code="no-offer"),
        ],
        currency="USD",
        as_of=dt.date(2026, 12, 1),
        rental_plan=None,
        ops_team="none",
    )  # fmt: skip


def _csv(body: bytes) -> list[dict[str, str]]:
    assert body.startswith(b"\xef\xbb\xbf") and b"\r\n" in body
    return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))


def _svg(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{SVG_NS}svg" and root.get("width") == "640"
    return root


def _texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def _marks(root: ET.Element) -> dict[tuple[str | None, str | None], ET.Element]:
    return {
        (g.get("data-gpu-model"), g.get("data-option")): g
        for g in root.iter(f"{SVG_NS}g")
        if g.get("class") == "candidate"
    }


def _dot(mark: ET.Element) -> ET.Element:
    """A mark's dot: its last circle (the recommended one has a ring under it)."""
    return list(mark.iter(f"{SVG_NS}circle"))[-1]


# ---- CSV and XLSX on hand-built answers ------------------------------------------------------------------


def test_candidates_csv_has_a_row_per_candidate_with_the_stamp_and_the_request() -> None:
    doc = candidates_doc()
    req = TrainingPlanCreate.model_validate(
        {k: v for k, v in RUN.items() if k != "as_of"} | {"gpu_models": ["b200", "h100_sxm"]}
    )
    rows = _csv(sheets.plan_csv(doc, req))
    header = list(rows[0])
    assert header[:8] == ["knowledge_version", "methodology_version", "currency", "as_of", "rank", "recommended",
                          "gpu_model", "option"]  # fmt: skip
    for figure in ("total_cost", "cost_per_million_tokens", "upfront_cost", "cost_per_useful_gpu_hour"):
        assert {f"{figure}_{end}_usd" for end in ("low", "expected", "high")} <= set(header), figure  # money: currency
    for figure in ("gpu_hours", "calendar_days", "training_days", "gpu_hours_billed"):
        assert f"{figure}_expected" in header, figure
    assert [(r["gpu_model"], r["option"]) for r in rows] == [(c.gpu_model, c.option) for c in doc.candidates]
    first, late, unplanned = rows[0], rows[2], rows[3]
    assert (first["rank"], first["recommended"], first["feasible"]) == ("1", "True", "True")
    assert first["offer_name"] == "CoreWeave HGX B200 (8 GPU), global, on demand"
    assert (first["provider"], first["region"], first["plan"], first["gpus"]) == (
        "coreweave",
        "global",
        "on_demand",
        "256",
    )
    # by hand: 3.2e6 USD × 10⁶ ÷ 2e12 tokens = 1.6 USD per million tokens
    assert float(first["cost_per_million_tokens_expected_usd"]) == pytest.approx(1.6)
    assert float(first["calendar_days_expected"]) == 55.2 and float(first["gpu_hours_low"]) == 241_171.4
    assert {r["recommended"] for r in rows[1:]} == {"False"}
    assert late["feasible"] == "False" and late["reasons"].startswith("Finishes in 175.8 days")
    assert unplanned["calendar_days_expected"] == "" and unplanned["error"].startswith("no offer")
    # the stamp and the request on every row
    assert {(r["knowledge_version"], r["methodology_version"], r["currency"], r["as_of"]) for r in rows} == {
        ("kv1-test", "4.1", "USD", "2026-12-01")
    }
    assert {r["request_gpu_models"] for r in rows} == {"b200, h100_sxm"}
    assert {(r["request_parameters"], r["request_finish_within_days"], r["request_buyer_country"]) for r in rows} == {
        ("70000000000.0", "60.0", "US")
    }
    assert "request_currency" not in header  # stamped
    assert {(r["run_flops"], r["run_tokens"]) for r in rows} == {("8.4e+23", "2000000000000.0")}
    assert {r["recommendation"] for r in rows} == {doc.recommendation}


def test_candidates_csv_without_the_request_states_what_the_answer_repeats_of_it() -> None:
    rows = _csv(sheets.plan_csv(candidates_doc()))
    assert {(r["request_parameters"], r["request_precision"], r["request_buyer_country"]) for r in rows} == {
        ("70000000000.0", "bf16", "US")
    }


def test_single_model_csv_has_a_row_per_option() -> None:
    doc = single_doc()
    rows = _csv(sheets.plan_csv(doc))
    assert [r["option"] for r in rows] == [i.option for i in doc.items]
    assert rows[0]["total_cost_expected_usd"] == "3300000.0" and rows[0]["feasible"] == "True"
    assert rows[1]["reasons"] == "takes 30–90 days to obtain" and rows[2]["error"] == "no offer"
    assert {(r["request_gpu_model"], r["gpu_hours_expected"], r["mfu_expected"]) for r in rows} == {
        ("h100_sxm", "58982.1", "0.4")
    }


def test_text_cells_that_a_spreadsheet_would_run_are_neutralised() -> None:
    hostile = candidates_doc()
    first = hostile.candidates[0]
    assert first.offer is not None
    bad = CandidateRead(
        **{f: getattr(first, f) for f in first.__struct_fields__}
        | {"name": "=HYPERLINK(\"http://x\")", "reasons": ["@SUM(A1)"], "offer": OfferRead(
            **{f: getattr(first.offer, f) for f in first.offer.__struct_fields__} | {"name": "+cmd|' /C calc'!A0"})}
    )  # fmt: skip
    doc = candidates_doc(candidates=[bad, *hostile.candidates[1:]])
    req = TrainingPlanCreate.model_validate({"parameters": 7e10, "tokens": TOKENS, "gpus": 256, "regions": ["-cmd"]})
    rows = _csv(sheets.plan_csv(doc, req))
    assert rows[0]["name"] == '\'=HYPERLINK("http://x")' and rows[0]["reasons"] == "'@SUM(A1)"
    assert rows[0]["offer_name"].startswith("'+cmd") and rows[0]["request_regions"] == "'-cmd"
    assert not rows[0]["cost_per_million_tokens_expected_usd"].startswith("'")  # numbers stay numbers
    book = load_workbook(io.BytesIO(sheets.plan_workbook(doc, "en", req)))
    sheet = book["Candidates"]
    headings = [c.value for c in sheet[1]]
    cell = sheet[2][headings.index("Name")]
    assert cell.value == '\'=HYPERLINK("http://x")' and cell.data_type == "s"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_candidates_workbook_in_the_request_language(lang: Any) -> None:
    doc = candidates_doc()
    book = load_workbook(io.BytesIO(sheets.plan_workbook(doc, lang)))
    assert book.sheetnames == [translate(f"sheet.{s}", lang) for s in ("candidates", "work", "request")]
    rows = list(book.worksheets[0].iter_rows(values_only=True))
    headings = [str(h) for h in rows[0]]
    assert len(rows) == 1 + len(doc.candidates)
    assert not [h for h in headings if IDENTIFIER.search(h)], headings  # every heading in words
    per_million = translate("column.cost_per_million_tokens", lang)
    expected = next(h for h in headings if h.startswith(per_million) and translate("column.end.expected", lang) in h)
    assert "USD" in expected  # a money heading names its currency
    assert rows[1][headings.index(expected)] == pytest.approx(1.6)  # a number, not a text
    assert rows[1][headings.index(translate("column.recommended", lang))] is True
    work = list(book.worksheets[1].iter_rows(values_only=True))
    assert [r[0] for r in work[1:]] == ["b200", "h100_sxm"] and work[1][3] == 2250.0
    assert "MLPerf Training v4.1" in work[1][-1]
    request = list(book.worksheets[2].iter_rows(values_only=True))
    assert request[1][:4] == ("kv1-test", "4.1", "USD", dt.datetime(2026, 12, 1))
    assert not [h for h in request[0] if IDENTIFIER.search(str(h))], request[0]


def test_single_model_workbook() -> None:
    book = load_workbook(io.BytesIO(sheets.plan_workbook(single_doc(), "en")))
    assert book.sheetnames == ["Options", "Request"]
    assert book["Options"].max_row == 1 + 3


# ---- the chart on hand-built answers ---------------------------------------------------------------------


def test_candidates_chart_marks_each_planned_candidate() -> None:
    doc = candidates_doc()
    root = _svg(charts.candidates_svg(doc, "en"))
    texts = _texts(root)
    assert translate("chart.training.title", "en") in texts
    assert translate("chart.training.x_axis", "en") in texts
    assert translate("chart.training.y_axis", "en", currency="USD") in texts
    marks = _marks(root)
    # a mark per candidate with a plan; the one without is counted under the plot
    assert set(marks) == {("b200", "rented_gpu_instances"), ("h100_sxm", "ai_compute_platform"),
                          ("h100_sxm", "self_built_cluster")}  # fmt: skip
    assert translate("chart.training.unplanned", "en", count=1) in texts
    # labelled "GPU · option" (the GPU model's name without its detail), the recommended marked
    for label in ("B200 SXM · Rented GPU instances", "H100 SXM5 · AI compute platform"):
        assert label in texts, label
    assert [k for k, g in marks.items() if g.get("data-recommended") == "yes"] == [("b200", "rented_gpu_instances")]
    assert any(t.startswith("★ 1. B200 SXM · Rented GPU instances: 1.60 USD") for t in texts), texts
    # feasible marks filled, the infeasible one hollow and grey
    late = _dot(marks["h100_sxm", "self_built_cluster"])
    assert marks["h100_sxm", "self_built_cluster"].get("data-feasible") == "no"
    assert late.get("fill") == "#ffffff" and late.get("stroke") == charts.INFEASIBLE
    assert _dot(marks["h100_sxm", "ai_compute_platform"]).get("fill") == charts.FEASIBLE
    assert _dot(marks["b200", "rented_gpu_instances"]).get("fill") == charts.RECOMMENDED
    # positions: later to the right, dearer per token higher (smaller y)
    x = {k: float(_dot(g).get("cx") or 0) for k, g in marks.items()}
    y = {k: float(_dot(g).get("cy") or 0) for k, g in marks.items()}
    assert (
        x["b200", "rented_gpu_instances"] < x["h100_sxm", "ai_compute_platform"] < x["h100_sxm", "self_built_cluster"]
    )
    assert (
        y["h100_sxm", "ai_compute_platform"] < y["b200", "rented_gpu_instances"] < y["h100_sxm", "self_built_cluster"]
    )
    # the deadline (60 days) between the 55.2-day and the 107.2-day marks
    deadline = [line for line in root.iter(f"{SVG_NS}line") if line.get("class") == "deadline"]
    assert len(deadline) == 1
    assert x["b200", "rented_gpu_instances"] < float(deadline[0].get("x1") or 0) < x["h100_sxm", "ai_compute_platform"]
    assert translate("chart.training.deadline", "en", days="60") in texts
    # each mark's range as bars: one across the days, one across the cost
    bars = list(marks["b200", "rented_gpu_instances"].iter(f"{SVG_NS}line"))
    assert len(bars) == 2 and bars[0].get("y1") == bars[0].get("y2") and bars[1].get("x1") == bars[1].get("x2")


def test_candidates_chart_in_chinese() -> None:
    names = {"rented": "租用GPU实例", "platform": "智算平台", "own": "自建GPU集群"}
    root = _svg(charts.candidates_svg(candidates_doc(names), "zh"))
    assert root.get("{http://www.w3.org/XML/1998/namespace}lang") == "zh-CN"
    texts = _texts(root)
    for code in ("title", "x_axis", "recommended", "feasible", "infeasible"):
        assert translate(f"chart.training.{code}", "zh") in texts, code
    assert translate("chart.training.y_axis", "zh", currency="USD") in texts
    assert "B200 SXM · 租用GPU实例" in texts


def test_a_chart_without_a_deadline_or_a_plan_says_so() -> None:
    doc = candidates_doc(finish_within_days=None, recommended=None)
    root = _svg(charts.candidates_svg(doc, "en"))
    assert not [line for line in root.iter(f"{SVG_NS}line") if line.get("class") == "deadline"]
    assert translate("chart.training.recommended", "en") not in _texts(root)  # nothing recommended, no legend for it
    empty = candidates_doc(candidates=candidates_doc().candidates[3:], recommended=None)
    texts = _texts(_svg(charts.candidates_svg(empty, "en")))
    assert translate("chart.training.empty", "en") in texts


def test_chart_words_are_escaped() -> None:
    doc = candidates_doc({"rented": 'Rented <GPU> & "instances"'})
    root = _svg(charts.candidates_svg(doc, "en"))
    assert any('B200 SXM · Rented <GPU> & "instances": 1.60 USD' in t for t in _texts(root))


def test_single_model_chart_prices_each_option_per_million_tokens() -> None:
    doc = single_doc()
    root = _svg(charts.plan_svg(doc, "en", parameters=7e9, tokens=TOKENS, gpu="H100 SXM5", precision="bf16"))
    marks = _marks(root)
    assert set(marks) == {("h100_sxm", "rented_gpu_instances"), ("h100_sxm", "self_built_cluster")}
    texts = _texts(root)
    # by hand: 3.3e6 USD × 10⁶ ÷ 2e12 tokens = 1.65 USD per million tokens, in 11.6 days
    row = translate("chart.training.row", "en", rank=1, label="H100 SXM5 · Rented GPU instances", cost="1.65",
                    currency="USD", days="11.6")  # fmt: skip
    assert row in texts, texts
    assert translate("chart.training.unplanned", "en", count=1) in texts
    assert any(t.startswith("H100 SXM5 · 7 × 10⁹ ") for t in texts), texts  # the subtitle: the GPU and the run


# ---- through the API -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api(databases: Any) -> Any:
    from conftest import make_client

    with make_client(databases.seeded("sqlite")) as client:
        yield client


def test_the_operation_declares_its_media_types(api: Any) -> None:
    content = api.get("/docs/openapi.json").json()["paths"][URL]["post"]["responses"]["200"]["content"]
    assert {"application/json", "image/svg+xml", "text/csv", XLSX} <= set(content)


def test_candidates_as_csv_xlsx_and_svg_match_the_json(api: Any) -> None:
    r = api.post(URL, json=RUN)
    assert r.status_code == 200, r.text
    assert "Accept" in r.headers["vary"]
    doc = r.json()
    assert doc["candidates"] and doc["recommended"]
    # CSV: a row per candidate in the answer's order, its figures, named as an attachment
    r = api.post(URL, json=RUN, headers={"Accept": "text/csv"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    assert re.fullmatch(
        r'attachment; filename="training-plan_[A-Za-z0-9.-]+_2026-12-01\.csv"', r.headers["content-disposition"]
    )
    rows = _csv(r.content)
    assert [(x["gpu_model"], x["option"]) for x in rows] == [(c["gpu_model"], c["option"]) for c in doc["candidates"]]
    for row, c in zip(rows, doc["candidates"], strict=True):
        expected = row["cost_per_million_tokens_expected_usd"]
        assert (float(expected) if expected else None) == (c["cost_per_million_tokens"] or {}).get("expected")
        assert row["feasible"] == str(c["feasible"]) and row["request_finish_within_days"] == "60.0"
    # XLSX: the same rows
    r = api.post(URL, json=RUN, headers={"Accept": XLSX})
    assert r.status_code == 200 and r.headers["content-disposition"].endswith('.xlsx"')
    book = load_workbook(io.BytesIO(r.content))
    assert book.sheetnames == ["Candidates", "Throughput", "Request"]
    assert book["Candidates"].max_row == 1 + len(doc["candidates"])
    # SVG: a mark per candidate with a plan, the recommended one marked, the deadline drawn
    r = api.post(URL, json=RUN, headers={"Accept": "image/svg+xml"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("image/svg+xml") and "attachment" not in r.headers.get(
        "content-disposition", ""
    )
    root = _svg(r.text)
    marks = _marks(root)
    planned = {(c["gpu_model"], c["option"]) for c in doc["candidates"] if c["calendar_days"] is not None}
    assert set(marks) == planned
    rec = doc["recommended"]
    assert marks[rec["gpu_model"], rec["option"]].get("data-recommended") == "yes"
    assert {k for k, g in marks.items() if g.get("data-feasible") == "yes"} == {
        (c["gpu_model"], c["option"]) for c in doc["candidates"] if c["feasible"]
    }
    assert [line for line in root.iter(f"{SVG_NS}line") if line.get("class") == "deadline"]


def test_candidates_chart_and_workbook_in_chinese(api: Any) -> None:
    body = {**RUN, "currency": "CNY", "buyer_country": "CN", "finish_within_days": None}
    headers = {"Accept": "image/svg+xml", "Accept-Language": "zh-CN"}
    r = api.post(URL, json=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-language"] == "zh-CN"
    texts = _texts(_svg(r.text))
    assert translate("chart.training.title", "zh") in texts
    assert translate("chart.training.y_axis", "zh", currency="CNY") in texts
    doc = api.post(URL, json=body, headers={"Accept-Language": "zh-CN"}).json()
    rec = next(c for c in doc["candidates"] if doc["recommended"] and c["gpu_model"] == doc["recommended"]["gpu_model"]
               and c["option"] == doc["recommended"]["option"])  # fmt: skip
    assert any(rec["name"] in t for t in texts)  # the option's Chinese name in the label
    r = api.post(URL, json=body, headers={"Accept": XLSX, "Accept-Language": "zh-CN"})
    book = load_workbook(io.BytesIO(r.content))
    assert book.sheetnames == [translate(f"sheet.{s}", "zh") for s in ("candidates", "work", "request")]


def test_one_gpu_model_as_csv_and_svg(api: Any) -> None:
    body = {"parameters": 7e9, "tokens": TOKENS, "gpu_model": "h100_sxm", "gpus": 256, "as_of": "2026-12-01"}
    doc = api.post(URL, json=body).json()
    rows = _csv(api.post(URL, json=body, headers={"Accept": "text/csv"}).content)
    assert [r["option"] for r in rows] == [i["option"] for i in doc["items"]]
    r = api.post(URL, json=body, headers={"Accept": "image/svg+xml"})
    assert r.status_code == 200, r.text
    marks = _marks(_svg(r.text))
    assert set(marks) == {("h100_sxm", i["option"]) for i in doc["items"] if i["calendar_days"] and i["total_cost"]}
    texts = _texts(_svg(r.text))
    assert any(t.startswith("H100 SXM5 · ") for t in texts), texts


def test_what_it_cannot_answer(api: Any) -> None:
    r = api.post(URL, json=RUN, headers={"Accept": "application/x-foo"})
    assert r.status_code == 406 and r.headers["content-type"].startswith("application/problem+json")
    r = api.post(URL, json={**RUN, "parameters": 1}, headers={"Accept": "image/svg+xml"})
    assert r.status_code in (400, 422) and "parameters" in r.text
    r = api.post(URL, json={**RUN, "gpu_models": ["no_such_gpu"]}, headers={"Accept": "text/csv"})
    assert r.status_code == 422 and "no_such_gpu" in r.text


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("media", ["image/svg+xml", "text/csv", XLSX])
def test_words_for_people_carry_no_identifiers(api: Any, media: str, lang: Any) -> None:
    """As tests/test_human_words.py reads every other answer: the chart's words, the CSV's human columns and
    the workbook's headings and human cells, with no identifier and, in Chinese, no English sentence."""
    from test_human_words import english_phrases, identifiers, texts

    for body in ({**RUN, "finish_within_days": None}, {**RUN, "currency": "CNY", "buyer_country": "CN"}):
        r = api.post(URL, json=body, headers={"Accept": media, "Accept-Language": "zh-CN" if lang == "zh" else "en"})
        assert r.status_code == 200, r.text
        found = texts(r, media, lang)
        assert found and not identifiers(found), identifiers(found)
        if lang == "zh":
            assert not english_phrases(found), english_phrases(found)
