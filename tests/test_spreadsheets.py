"""Answers for spreadsheets: CSV with a BOM, CRLF and a file name; XLSX workbooks read back with openpyxl."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import openpyxl
from conftest import SME_PROFILE
from litestar.testing import TestClient

Client = TestClient  # type: ignore[type-arg]
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
BODY: dict[str, Any] = {"gpus": 64, "utilization": 0.5, "horizon_years": 3, "as_of": "2026-12-01"}
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


def test_comparison_csv_opens_cleanly_in_excel(sqlite_client: Client) -> None:
    doc = sqlite_client.post("/v1/price-comparisons", json=BODY).json()
    r = sqlite_client.post("/v1/price-comparisons", json=BODY, headers={"Accept": "text/csv"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/csv; charset=utf-8"  # the charset once
    assert r.content.startswith(b"\xef\xbb\xbf")
    assert r.content.count(b"\r\n") == r.content.count(b"\n")
    name = _filename(r)
    assert name == {"kind": "price-comparison", "version": doc["knowledge_version"], "day": "2026-12-01", "ext": "csv"}
    rows = list(csv.DictReader(io.StringIO(r.content.decode("utf-8-sig"))))
    totals = {row["option"]: row for row in rows if row["record"] == "total"}
    for item in doc["items"]:
        assert float(totals[item["option"]]["annual_cost_expected"]) == item["annual_cost"]["expected"]
    assert sum(row["record"] == "line_item" for row in rows) == sum(len(i["breakdown"]) for i in doc["items"])


def test_comparison_workbook_has_a_sheet_per_section_with_numbers_as_numbers(sqlite_client: Client) -> None:
    doc = sqlite_client.post("/v1/price-comparisons", json=BODY).json()
    r = sqlite_client.post("/v1/price-comparisons", json=BODY, headers={"Accept": XLSX})
    assert _filename(r)["ext"] == "xlsx"
    wb = _workbook(r)
    assert wb.sheetnames == ["Summary", "Breakdown", "Offers", "Sources", "Request"]
    summary = list(wb["Summary"].values)
    heading = list(summary[0])
    assert heading[:3] == ["Option", "Name", "Feasible"]
    at = heading.index("Annual cost (expected)")
    by_option = {row[0]: row for row in summary[1:]}
    for item in doc["items"]:
        cell = by_option[item["option"]][at]
        assert isinstance(cell, float | int) and cell == item["annual_cost"]["expected"]
    breakdown = list(wb["Breakdown"].values)[1:]
    assert len(breakdown) == sum(len(i["breakdown"]) + len(i["effective_extras"]) for i in doc["items"])
    sources = list(wb["Sources"].values)[1:]
    cited = {(s["table"], s["ref"]) for i in doc["items"] for li in i["breakdown"] for s in li["sources"]}
    assert cited <= {(row[0], row[1]) for row in sources}
    offers = list(wb["Offers"].values)[1:]
    assert sum(row[1] is True for row in offers) == sum(i["offer"] is not None for i in doc["items"])
    request = list(wb["Request"].values)
    assert request[1][0] == doc["knowledge_version"]


def test_workbook_headings_and_sheet_names_in_chinese(sqlite_client: Client) -> None:
    r = sqlite_client.post("/v1/price-comparisons", json=BODY, headers={"Accept": XLSX, "Accept-Language": "zh-CN"})
    wb = _workbook(r)
    assert wb.sheetnames == ["汇总", "费用明细", "报价", "来源", "请求"]
    heading = next(wb["汇总"].values)
    assert "年度成本（预期）" in heading
    names = {row[1] for row in list(wb["汇总"].values)[1:]}
    assert names == {"自建GPU集群", "租用GPU实例", "智算平台"}


def test_evaluations_workbook(sqlite_client: Client) -> None:
    profiles = [SME_PROFILE, {**SME_PROFILE, "gpus": 512, "utilization": 0.95, "ops_team": "professional"}]
    body = {"profiles": profiles, "detail": "full"}
    doc = sqlite_client.post("/v1/evaluations", json=body).json()
    r = sqlite_client.post("/v1/evaluations", json=body, headers={"Accept": XLSX})
    assert _filename(r)["kind"] == "evaluations"
    wb = _workbook(r)
    assert wb.sheetnames == ["Summary", "Ranking", "Reasons", "Request"]
    assert [row[1] for row in list(wb["Summary"].values)[1:]] == [x["recommended_option"] for x in doc["results"]]
    ranking = list(wb["Ranking"].values)[1:]
    assert len(ranking) == sum(len(x["ranking"]) for x in doc["results"])
    assert all(isinstance(row[3], float | int) for row in ranking)
    reasons = list(wb["Reasons"].values)[1:]
    assert len(reasons) == sum(len(e["reasons"]) for ev in doc["evaluations"] for e in ev["ranking"])


def test_offers_as_csv_and_workbook(sqlite_client: Client) -> None:
    params = {"provider": "coreweave", "as_of": "2026-12-01"}
    doc = sqlite_client.get("/v1/offers", params=params).json()
    as_csv = sqlite_client.get("/v1/offers", params=params, headers={"Accept": "text/csv"})
    assert as_csv.content.startswith(b"\xef\xbb\xbf") and b"\r\n" in as_csv.content
    assert _filename(as_csv)["kind"] == "offers" and _filename(as_csv)["day"] == "2026-12-01"
    wb = _workbook(sqlite_client.get("/v1/offers", params=params, headers={"Accept": XLSX}))
    assert wb.sheetnames == ["Offers", "Sources"]
    rows = list(wb["Offers"].values)
    heading = list(rows[0])
    expected = heading.index("Expected")
    assert [row[expected] for row in rows[1:]] == [o["expected"] for o in doc["items"]]
    assert sum(row[3] for row in list(wb["Sources"].values)[1:]) == len(doc["items"])


def test_an_unknown_media_type_is_still_406(sqlite_client: Client) -> None:
    r = sqlite_client.post("/v1/evaluations", json={"profiles": [SME_PROFILE]}, headers={"Accept": "text/csv"})
    assert r.status_code == 406
    assert XLSX in r.json()["detail"]
