"""Answers for spreadsheets, read back with csv and openpyxl: CSV with a BOM, CRLF and a file name; XLSX
workbooks. Price comparisons and capacity plans share one layout (``app.domain.shared.sheets``): a
summary row per option or portfolio with NPV, the effective cost and the chosen offer's provider,
region, plan and GPU model; money headers naming the currency; money cells formatted ``#,##0.00``; a
request sheet naming every field of the request. The figures read back equal the JSON answer's."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from typing import Any

import openpyxl
from conftest import SME_PROFILE
from litestar.testing import TestClient

Client = TestClient  # type: ignore[type-arg]
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
BODY: dict[str, Any] = {"gpus": 64, "utilization": 0.5, "horizon_years": 3, "as_of": "2026-12-01"}
#: a request naming what the issue found missing: GPU model, buyer country, regions, team, job shape
NAMED: dict[str, Any] = {
    **BODY,
    "currency": "USD",
    "gpu_model": "h100_sxm",
    "buyer_country": "US",
    "regions": ["US"],
    "team_size": 12,
    "ops_team": "basic",
    "largest_job_gpus": 32,
    "preemptible_share": 0.25,
}
RAMP: dict[str, Any] = {
    **{k: v for k, v in NAMED.items() if k not in ("gpus", "largest_job_gpus")},
    "demand": {"start_gpus": 64, "growth_per_year": 1.0},
}
PLAN: dict[str, Any] = {
    "utilization": 0.6,
    "horizon_years": 4,
    "as_of": "2026-12-01",
    "currency": "USD",
    "team_size": 20,
    "buyer_country": "CN",
    "demand": [{"months": 12, "gpus": 64, "utilization": 0.9}, {"months": 36, "gpus": 256, "utilization": 0.6}],
}
MONEY, RATE, PRICE, SHARE = "#,##0.00", "#,##0.0000", "#,##0.00##", "0.0%"
ENDS = ("low", "expected", "high")
FIGURES = (
    "annual_cost",
    "total_cost",
    "npv_cost",
    "equivalent_annual_cost",
    "upfront_cost",
    "cost_per_useful_gpu_hour",
    "cost_per_effective_gpu_hour",
    "cost_per_useful_pflop_hour",
)
#: English headings of the money figures, as the XLSX summary writes them
HEADINGS = {
    "annual_cost": "Annual cost",
    "total_cost": "Total cost over the horizon",
    "npv_cost": "NPV of cost",
    "cost_per_useful_gpu_hour": "Cost per useful GPU-hour",
    "cost_per_effective_gpu_hour": "Cost per effective GPU-hour",
    "cost_per_useful_pflop_hour": "Cost per useful PFLOP-hour",
}
FILENAME = re.compile(
    r'^attachment; filename="(?P<kind>[a-z-]+)_(?P<version>[A-Za-z0-9.-]+)_(?P<day>\d{4}-\d\d-\d\d)\.(?P<ext>\w+)"$'
)


def _filename(r: Any) -> dict[str, str]:
    found = FILENAME.match(r.headers["content-disposition"])
    assert found, r.headers["content-disposition"]
    return found.groupdict()


def _workbook(r: Any) -> openpyxl.Workbook:
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == XLSX
    return openpyxl.load_workbook(io.BytesIO(r.content))


def _csv(r: Any) -> list[dict[str, str]]:
    assert r.status_code == 200, r.text
    return list(csv.DictReader(io.StringIO(r.content.decode("utf-8-sig"))))


def _json(client: Client, path: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    r = client.post(path, json=body, headers=headers)
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    return doc


def _sheet(wb: openpyxl.Workbook, name: str) -> tuple[list[str], list[list[Any]]]:
    """A sheet's headings, and its rows of cells (openpyxl ``Cell``s: value and number format)."""
    rows = list(wb[name].iter_rows())
    return [c.value for c in rows[0]], [list(r) for r in rows[1:]]


def _money_headings_name_the_currency(headings: list[str], cells: list[Any], *currencies: str) -> None:
    """A heading names the currency exactly where its column's cells are money (money, rate or unit price
    format)."""
    for heading, cell in zip(headings, cells, strict=True):
        if cell.value is None or isinstance(cell.value, bool) or not isinstance(cell.value, int | float):
            continue
        named = any(heading.endswith(f"({c})") for c in currencies)
        assert (cell.number_format in (MONEY, RATE, PRICE)) == named, (heading, cell.number_format)


def _offer_facts(offers: list[dict[str, Any] | None]) -> list[str | None]:
    """What a summary row says of its offers: each fact's distinct values joined by " + "."""
    found = [o for o in offers if o]
    return [
        " + ".join(dict.fromkeys(o[f] for o in found if o[f])) or None
        for f in ("provider", "region", "plan", "gpu_model")
    ]


def test_comparison_csv_opens_cleanly_in_excel(sqlite_client: Client) -> None:
    doc = _json(sqlite_client, "/v1/price-comparisons", BODY)
    r = sqlite_client.post("/v1/price-comparisons", json=BODY, headers={"Accept": "text/csv"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/csv; charset=utf-8"  # the charset once
    assert r.content.startswith(b"\xef\xbb\xbf")
    assert r.content.count(b"\r\n") == r.content.count(b"\n")
    name = _filename(r)
    assert name == {"kind": "price-comparison", "version": doc["knowledge_version"], "day": "2026-12-01", "ext": "csv"}
    rows = _csv(r)
    totals = {row["option"]: row for row in rows if row["record"] == "total"}
    for item in doc["items"]:
        assert float(totals[item["option"]]["annual_cost_expected_cny"]) == item["annual_cost"]["expected"]
    assert sum(row["record"] == "line_item" for row in rows) == sum(len(i["breakdown"]) for i in doc["items"])


def test_comparison_csv_states_npv_effective_cost_offer_and_request(sqlite_client: Client) -> None:
    """The issue: "the comparison CSV has no NPV, no effective cost, no provider / region / plan columns"."""
    doc = _json(sqlite_client, "/v1/price-comparisons", NAMED)
    rows = _csv(sqlite_client.post("/v1/price-comparisons", json=NAMED, headers={"Accept": "text/csv"}))
    header = list(rows[0])
    for figure in FIGURES:
        for end in ENDS:
            assert f"{figure}_{end}_usd" in header, figure
    assert {"provider", "region", "plan", "gpu_model", "recommended", "feasible"} <= set(header)
    # numbers unformatted: a CSV has no formats, a money column's name says its currency
    assert not [h for h in header if h.startswith(("annual_cost", "npv_cost", "cost_per")) and not h.endswith("_usd")]
    totals = {row["option"]: row for row in rows if row["record"] == "total"}
    assert set(totals) == {i["option"] for i in doc["items"]}
    for item in doc["items"]:
        row = totals[item["option"]]
        for figure in FIGURES:
            for end in ENDS:
                assert float(row[f"{figure}_{end}_usd"]) == item[figure][end], (item["option"], figure, end)
        assert [row[f] or None for f in ("provider", "region", "plan", "gpu_model")] == _offer_facts([item["offer"]])
        assert row["provider"] and row["gpu_model"] == "h100_sxm"
        assert row["feasible"] == str(item["feasible"]) and row["name"] == item["name"]
    # the whole request on every row
    for row in rows:
        assert row["request_gpu_model"] == "h100_sxm" and row["request_buyer_country"] == "US"
        assert row["request_regions"] == "US" and row["request_team_size"] == "12"
        assert row["request_ops_team"] == "basic" and row["request_largest_job_gpus"] == "32"
        assert float(row["request_preemptible_share"]) == 0.25 and row["request_providers"] == ""
        assert (row["currency"], row["as_of"], row["methodology_version"]) == ("USD", "2026-12-01", "4.1")


def test_comparison_workbook_has_a_sheet_per_section_with_numbers_as_numbers(sqlite_client: Client) -> None:
    doc = _json(sqlite_client, "/v1/price-comparisons", BODY)
    r = sqlite_client.post("/v1/price-comparisons", json=BODY, headers={"Accept": XLSX})
    assert _filename(r)["ext"] == "xlsx"
    wb = _workbook(r)
    assert wb.sheetnames == ["Summary", "Breakdown", "Offers", "Sources", "Request"]
    summary = list(wb["Summary"].values)
    heading = list(summary[0])
    assert heading[:4] == ["Option", "Name", "Recommended", "Feasible"]
    at = heading.index("Annual cost, expected (CNY)")
    by_option = {row[0]: row for row in summary[1:]}
    for item in doc["items"]:
        cell = by_option[item["option"]][at]
        assert isinstance(cell, float | int) and cell == item["annual_cost"]["expected"]
        assert by_option[item["option"]][2] is None  # a comparison recommends nothing
    breakdown = list(wb["Breakdown"].values)[1:]
    assert len(breakdown) == sum(len(i["breakdown"]) + len(i["effective_extras"]) for i in doc["items"])
    sources = list(wb["Sources"].values)[1:]
    cited = {(s["table"], s["ref"]) for i in doc["items"] for li in i["breakdown"] for s in li["sources"]}
    assert cited <= {(row[0], row[1]) for row in sources}
    offers = list(wb["Offers"].values)[1:]
    assert sum(row[1] is True for row in offers) == sum(i["offer"] is not None for i in doc["items"])
    assert len(offers) == sum((i["offer"] is not None) + len(i["alternatives"]) for i in doc["items"])
    request = list(wb["Request"].values)
    assert request[1][0] == doc["knowledge_version"]


def test_comparison_workbook_states_the_whole_request_and_answer(sqlite_client: Client) -> None:
    """The issue: "the XLSX states no currency in its headers, its Request sheet omits the GPU model, buyer
    country, regions and team, every cell is General; the capacity-plan XLSX has NPV, the comparison's
    does not"."""
    doc = _json(sqlite_client, "/v1/price-comparisons", NAMED)
    wb = _workbook(sqlite_client.post("/v1/price-comparisons", json=NAMED, headers={"Accept": XLSX}))
    headings, rows = _sheet(wb, "Summary")
    by_option = {row[0].value: row for row in rows}
    assert set(by_option) == {i["option"] for i in doc["items"]}
    for item in doc["items"]:
        row = by_option[item["option"]]
        for figure, words in HEADINGS.items():
            for end in ENDS:
                cell = row[headings.index(f"{words}, {end} (USD)")]
                assert cell.value == item[figure][end], (item["option"], figure, end)
                assert cell.number_format == (RATE if figure.startswith("cost_per") else MONEY)
        facts = [row[headings.index(h)].value for h in ("Provider", "Region", "Plan", "GPU model")]
        assert facts == _offer_facts([item["offer"]]) and facts[3] == "h100_sxm"
        _money_headings_name_the_currency(headings, row, "USD")
        assert row[headings.index("Useful GPU-hours a year")].number_format == "#,##0"
    for sheet in ("Breakdown", "Offers"):
        headings, rows = _sheet(wb, sheet)
        assert rows, sheet
        for row in rows:
            _money_headings_name_the_currency(headings, row, "USD", "the quoted currency")
    headings, rows = _sheet(wb, "Offers")
    assert "Quoted price, expected (the quoted currency)" in headings

    headings, rows = _sheet(wb, "Request")
    request = {h: c for h, c in zip(headings, rows[0], strict=True)}
    assert request["GPU model"].value == "h100_sxm" and request["Buyer's country"].value == "US"
    assert request["Regions"].value == "US" and request["Providers"].value is None
    assert request["Team size"].value == 12 and request["Operations team"].value == "basic"
    assert request["Largest job (GPUs)"].value == 32
    assert request["Preemptible share of the work"].value == 0.25
    assert request["Preemptible share of the work"].number_format == SHARE
    assert request["Utilization"].value == 0.5 and request["Utilization"].number_format == SHARE
    assert request["GPUs"].value == 64 and request["Currency"].value == "USD"
    assert request["As of"].value == dt.datetime(2026, 12, 1) and request["As of"].number_format == "yyyy-mm-dd"
    assert {"Capital budget (USD)", "Cost of a day's delay (USD)", "Data security", "Rental plan"} <= set(request)


def test_the_csv_and_the_workbook_have_the_same_summary_columns(sqlite_client: Client) -> None:
    rows = _csv(sqlite_client.post("/v1/price-comparisons", json=NAMED, headers={"Accept": "text/csv"}))
    wb = _workbook(sqlite_client.post("/v1/price-comparisons", json=NAMED, headers={"Accept": XLSX}))
    headings, _ = _sheet(wb, "Summary")
    header = list(rows[0])
    start = header.index("option")
    columns = header[start : start + len(headings)]
    assert columns[-1] == "error" and len(columns) == len(headings)
    money = [c for c in columns if c.endswith("_usd")]
    assert len(money) == len([h for h in headings if "(USD)" in h]) == 3 * len(FIGURES) + 1


def test_workbook_headings_and_sheet_names_in_chinese(sqlite_client: Client) -> None:
    r = sqlite_client.post("/v1/price-comparisons", json=BODY, headers={"Accept": XLSX, "Accept-Language": "zh-CN"})
    wb = _workbook(r)
    assert wb.sheetnames == ["汇总", "费用明细", "报价", "来源", "请求"]
    heading = next(wb["汇总"].values)
    assert "年度成本（预期，CNY）" in heading and "成本净现值（预期，CNY）" in heading
    names = {row[1] for row in list(wb["汇总"].values)[1:]}
    assert names == {"自建GPU集群", "租用GPU实例", "智算平台"}
    request = next(wb["请求"].values)
    assert {"GPU型号", "买方所在国家", "地域范围", "团队人数"} <= set(request)


def test_a_comparison_on_a_demand_over_time_states_its_segments_and_phases(sqlite_client: Client) -> None:
    doc = _json(sqlite_client, "/v1/price-comparisons", RAMP)
    rows = _csv(sqlite_client.post("/v1/price-comparisons", json=RAMP, headers={"Accept": "text/csv"}))
    segments = sum(len(i["segments"]) for i in doc["items"])
    assert sum(r["record"] == "segment" for r in rows) == segments
    assert sum(r["record"] == "phase" for r in rows) == segments * len(doc["demand"])
    assert {r["request_demand"] for r in rows} == {'{"start_gpus":64,"growth_per_year":1.0}'}
    wb = _workbook(sqlite_client.post("/v1/price-comparisons", json=RAMP, headers={"Accept": XLSX}))
    assert wb.sheetnames == ["Summary", "Breakdown", "Segments", "Phases", "Offers", "Sources", "Request"]
    headings, summary = _sheet(wb, "Summary")
    for item, row in zip(doc["items"], summary, strict=True):
        facts = [row[headings.index(h)].value for h in ("Provider", "Region", "Plan", "GPU model")]
        assert facts == _offer_facts([g["offer"] for g in item["segments"]])
        assert row[headings.index("NPV of cost, expected (USD)")].value == item["npv_cost"]["expected"]
    phases = list(wb["Phases"].values)[1:]
    assert [list(p[1:]) for p in phases] == [
        [p["start_month"], p["months"], p["gpus"], p["utilization"], p["largest_job_gpus"]] for p in doc["demand"]
    ]


def test_capacity_plans_share_the_layout(sqlite_client: Client) -> None:
    """The issue: "one layout for comparisons and capacity plans"."""
    doc = _json(sqlite_client, "/v1/capacity-plans", PLAN)
    wb = _workbook(sqlite_client.post("/v1/capacity-plans", json=PLAN, headers={"Accept": XLSX}))
    assert wb.sheetnames == ["Summary", "Breakdown", "Segments", "Phases", "Offers", "Sources", "Request"]
    compared = _workbook(sqlite_client.post("/v1/price-comparisons", json=NAMED, headers={"Accept": XLSX}))
    headings, rows = _sheet(wb, "Summary")
    assert headings[0] == "Portfolio" and headings[1:] == _sheet(compared, "Summary")[0][1:]
    by_key = {row[0].value: row for row in rows}
    assert list(by_key) == [p["key"] for p in doc["portfolios"]]
    for p in doc["portfolios"]:
        row = by_key[p["key"]]
        assert row[headings.index("Recommended")].value is (p["key"] == doc["recommended"])
        assert row[headings.index("Feasible")].value is p["feasible"]
        assert row[headings.index("Annual cost, expected (USD)")].value is None  # a plan states none
        assert row[headings.index("Cost per useful PFLOP-hour, expected (USD)")].value is None  # nor this
        effective = row[headings.index("Expected NPV of the effective cost (USD)")]
        assert effective.value == p["effective_npv_cost"]
        if p["npv_cost"] is None:
            continue
        for figure, words in HEADINGS.items():
            if figure in ("annual_cost", "cost_per_useful_pflop_hour"):
                continue
            for end in ENDS:
                cell = row[headings.index(f"{words}, {end} (USD)")]
                assert cell.value == p[figure][end] and cell.number_format in (MONEY, RATE)
        assert effective.number_format == MONEY
        facts = [row[headings.index(h)].value for h in ("Provider", "Region", "Plan")]
        plans = " + ".join(dict.fromkeys(g["plan"] for g in p["segments"] if g["plan"])) or None
        assert facts == [*_offer_facts([g["offer"] for g in p["segments"]])[:2], plans]
        _money_headings_name_the_currency(headings, row, "USD")
    breakdown = list(wb["Breakdown"].values)[1:]
    assert len(breakdown) == sum(len(p["segments"]) for p in doc["portfolios"])
    headings, rows = _sheet(wb, "Request")
    request = {h: c.value for h, c in zip(headings, rows[0], strict=True)}
    assert request["Buyer's country"] == "CN" and request["Team size"] == 20 and "GPU model" in request
    assert request["Proved optimal"] is doc["optimal"]

    rows_csv = _csv(sqlite_client.post("/v1/capacity-plans", json=PLAN, headers={"Accept": "text/csv"}))
    totals = {r["portfolio"]: r for r in rows_csv if r["record"] == "total"}
    assert list(totals) == [p["key"] for p in doc["portfolios"]]
    for p in doc["portfolios"]:
        if p["npv_cost"] is not None:
            assert float(totals[p["key"]]["npv_cost_expected_usd"]) == p["npv_cost"]["expected"]
            assert float(totals[p["key"]]["effective_npv_cost_usd"]) == p["effective_npv_cost"]
    assert sum(r["record"] == "phase" for r in rows_csv) == sum(len(p["segments"]) for p in doc["portfolios"]) * 2
    assert {r["request_buyer_country"] for r in rows_csv} == {"CN"}


def test_evaluations_workbook(sqlite_client: Client) -> None:
    profiles = [
        {**SME_PROFILE, "gpu_model": "h100_sxm", "buyer_country": "US", "regions": ["US"]},
        {**SME_PROFILE, "gpus": 512, "utilization": 0.95, "ops_team": "professional"},
    ]
    body = {"profiles": profiles, "detail": "full"}
    doc = _json(sqlite_client, "/v1/evaluations", body)
    r = sqlite_client.post("/v1/evaluations", json=body, headers={"Accept": XLSX})
    assert _filename(r)["kind"] == "evaluations"
    wb = _workbook(r)
    assert wb.sheetnames == ["Summary", "Ranking", "Reasons", "Request"]
    assert [row[1] for row in list(wb["Summary"].values)[1:]] == [x["recommended_option"] for x in doc["results"]]
    headings, ranking = _sheet(wb, "Ranking")
    assert len(ranking) == sum(len(x["ranking"]) for x in doc["results"])
    assert all(isinstance(row[3].value, float | int) for row in ranking)
    entries = {(n, e["option"]): e for n, ev in enumerate(doc["evaluations"], start=1) for e in ev["ranking"]}
    for row in ranking:
        e = entries[row[0].value, row[1].value]
        if e["cost"] is None:
            continue
        cell = row[headings.index("Annual cost, expected (CNY)")]
        assert cell.value == e["cost"]["annual_cost"]["expected"] and cell.number_format == MONEY
        assert row[headings.index("NPV of cost, expected (CNY)")].value == e["cost"]["npv_cost"]["expected"]
        assert row[headings.index("Provider")].value == e["offer"]["provider"]
        _money_headings_name_the_currency(headings, row, "CNY")
    reasons = list(wb["Reasons"].values)[1:]
    assert len(reasons) == sum(len(e["reasons"]) for ev in doc["evaluations"] for e in ev["ranking"])
    headings, rows = _sheet(wb, "Request")
    assert len(rows) == 2
    first = {h: c.value for h, c in zip(headings, rows[0], strict=True)}
    assert first["GPU model"] == "h100_sxm" and first["Buyer's country"] == "US" and first["Regions"] == "US"
    assert first["Team size"] == SME_PROFILE["team_size"] and first["Currency"] == "CNY"


def test_offers_as_csv_and_workbook(sqlite_client: Client) -> None:
    params = {"provider": "coreweave", "as_of": "2026-12-01"}
    doc = sqlite_client.get("/v1/offers", params=params).json()
    as_csv = sqlite_client.get("/v1/offers", params=params, headers={"Accept": "text/csv"})
    assert as_csv.content.startswith(b"\xef\xbb\xbf") and b"\r\n" in as_csv.content
    assert _filename(as_csv)["kind"] == "offers" and _filename(as_csv)["day"] == "2026-12-01"
    header = next(csv.reader(io.StringIO(as_csv.content.decode("utf-8-sig"))))
    assert {"currency", "low", "expected", "high", "interconnect", "billing", "min_kw"} <= set(header)
    wb = _workbook(sqlite_client.get("/v1/offers", params=params, headers={"Accept": XLSX}))
    assert wb.sheetnames == ["Offers", "Sources"]
    headings, rows = _sheet(wb, "Offers")
    expected = headings.index("Expected (the row's currency)")
    assert [row[expected].value for row in rows] == [o["expected"] for o in doc["items"]]
    assert {row[expected].number_format for row in rows} == {"#,##0.00##"}
    valid_from = headings.index("Valid from")
    assert {row[valid_from].number_format for row in rows} == {"yyyy-mm-dd"}
    assert sum(row[3] for row in list(wb["Sources"].values)[1:]) == len(doc["items"])


def test_an_unknown_media_type_is_still_406(sqlite_client: Client) -> None:
    r = sqlite_client.post("/v1/evaluations", json={"profiles": [SME_PROFILE]}, headers={"Accept": "text/csv"})
    assert r.status_code == 406
    assert XLSX in r.json()["detail"]
