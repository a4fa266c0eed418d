"""CSV answers are safe to open in a spreadsheet: a text cell that a spreadsheet would run as a formula
(``= + - @``, tab, carriage return first) is written with a leading ``'``; numbers stay numbers."""

from __future__ import annotations

import csv
import io

import msgspec
import pytest

from app.domain.decisions.csv import comparison_csv
from app.domain.decisions.schemas import ComparisonRead
from app.web.negotiation import rows_csv
from app.web.spreadsheets import csv_cell

HOSTILE = ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "-cmd"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_formula_text_is_neutralised(text: str) -> None:
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", [-3.5, 0, 12, 1e-9, -7, "-3.5", "+4", "-1e3", ".5", "plain", "a=b", "", "'quoted"])
def test_numbers_and_plain_text_are_kept(value: object) -> None:
    assert csv_cell(value) == value


def test_none_is_the_empty_cell() -> None:
    assert csv_cell(None) == ""


class Row(msgspec.Struct):
    name: str
    price: float | None


def test_rows_csv_neutralises_every_text_cell() -> None:
    text = rows_csv([Row("=1+1", -3.5), Row("@A1", None), Row("ok", 2.0)]).decode("utf-8-sig")
    assert list(csv.reader(io.StringIO(text))) == [
        ["name", "price"],
        ["'=1+1", "-3.5"],
        ["'@A1", ""],
        ["ok", "2.0"],
    ]


def test_comparison_csv_neutralises_labels_and_sources(client) -> None:
    answer = client.post("/v1/price-comparisons", json={"gpus": 8, "utilization": 0.5, "horizon_years": 1})
    assert answer.status_code == 200
    doc = msgspec.convert(answer.json(), ComparisonRead, strict=False)
    item = doc.items[0]
    line = msgspec.structs.replace(
        item.breakdown[0],
        label='=HYPERLINK("http://x")',
        sources=[msgspec.structs.replace(item.breakdown[0].sources[0], table="+cmd")],
    )
    hostile = msgspec.structs.replace(item, name="-2+3+cmd", error="@SUM(1)", breakdown=[line])
    rows = list(
        csv.reader(io.StringIO(comparison_csv(msgspec.structs.replace(doc, items=[hostile])).decode("utf-8-sig")))
    )
    header, total, line_row = rows[0], rows[1], rows[2]
    assert total[header.index("name")] == "'-2+3+cmd"
    assert total[header.index("error")] == "'@SUM(1)"
    assert line_row[header.index("label")] == '\'=HYPERLINK("http://x")'
    assert line_row[header.index("sources")].startswith("'+cmd:")
    figures = [c for c in total[header.index("annual_cost_low_cny") : header.index("provider")] if c]
    assert figures and all(not c.startswith("'") for c in figures)  # numbers untouched
    for cell in (c for row in rows for c in row):
        assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell


def test_workbook_text_cells_are_never_formulas() -> None:
    from openpyxl import load_workbook

    from app.web.spreadsheets import Sheet, workbook

    book = workbook([Sheet("summary", ["name", "price"], [["=1+1", -3.5], ["ok", 2.0]])], "en")
    ws = load_workbook(io.BytesIO(book)).worksheets[0]
    assert ws["A2"].value == "'=1+1" and ws["A2"].data_type == "s"
    assert ws["B2"].value == -3.5


def test_request_fields_are_neutralised_in_the_csv_and_the_workbook(client) -> None:
    """A request's text reaches the spreadsheets now (``regions`` may begin with ``-``): shown, never run."""
    from openpyxl import load_workbook

    from app.domain.decisions.csv import comparison_workbook
    from app.domain.shared.demand import ComparisonCreate

    body = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}
    answer = client.post("/v1/price-comparisons", json=body)
    assert answer.status_code == 200
    doc = msgspec.convert(answer.json(), ComparisonRead, strict=False)
    req = ComparisonCreate.model_validate({**body, "regions": ["-cmd", "CN"]})
    rows = list(csv.DictReader(io.StringIO(comparison_csv(doc, req).decode("utf-8-sig"))))
    assert rows and {r["request_regions"] for r in rows} == {"'-cmd, CN"}
    ws = load_workbook(io.BytesIO(comparison_workbook(doc, "en", req)))["Request"]
    headings = [c.value for c in ws[1]]
    cell = ws[2][headings.index("Regions")]
    assert cell.value == "'-cmd, CN" and cell.data_type == "s"
