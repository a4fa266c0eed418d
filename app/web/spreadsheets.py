"""Answers for spreadsheets: CSV that Excel opens cleanly, and XLSX workbooks.

CSV: UTF-8 with a byte-order mark (Excel on Windows otherwise reads "×" and Chinese as mojibake),
CRLF line ends (RFC 4180), a header of field names (machine-readable, in English). XLSX: one sheet
per section, numbers as numbers, dates as dates, column headers and sheet names in the request's
language (``column.*`` and ``sheet.*`` codes). Both come as an attachment whose file name names the
knowledge version and the day.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.i18n import Lang, catalog

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
BOM = "\ufeff"
#: a text cell beginning with one of these is read as a formula by spreadsheets (OWASP "CSV injection")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: ... unless it is just a number, which a spreadsheet reads as the number it is
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
RANGE_ENDS = ("low", "expected", "high")
#: widest column an XLSX sheet gets, in characters
MAX_WIDTH = 60


def csv_bytes(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    """A CSV document: BOM, ``header``, one line per row, CRLF; ``None`` as an empty cell."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(header)
    for row in rows:
        w.writerow([csv_cell(v) for v in row])
    return (BOM + out.getvalue()).encode("utf-8")


def attachment(kind: str, knowledge_version: str, day: dt.date, extension: str) -> dict[str, str]:
    """``Content-Disposition`` naming what the file is, the knowledge version and the day, e.g.
    ``price-comparison_kv-20261201-1a2b_2026-12-03.csv``."""
    version = re.sub(r"[^A-Za-z0-9.-]+", "-", knowledge_version).strip("-") or "unknown"
    return {"Content-Disposition": f'attachment; filename="{kind}_{version}_{day.isoformat()}.{extension}"'}


def header(column: str, lang: Lang) -> str:
    """The heading of ``column`` in ``lang``: ``annual_cost_low`` → "Annual cost (low)"."""
    base, _, end = column.rpartition("_")
    if end in RANGE_ENDS and base:
        return word("column.with_end", lang, "").format(
            column=header(base, lang), end=word(f"column.end.{end}", lang, end)
        )
    return word(f"column.{column}", lang, column)


def word(code: str, lang: Lang, default: str) -> str:
    """The catalog's ``code`` in ``lang``, else in English, else ``default``."""
    return catalog(lang).get(code) or catalog("en").get(code) or default


@dataclass(frozen=True, slots=True)
class Sheet:
    """One section: a name code (``sheet.<name>``), its columns (field names) and rows."""

    name: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]


def workbook(sheets: Sequence[Sheet], lang: Lang) -> bytes:
    """An XLSX workbook: a sheet per section, a bold frozen header row in ``lang``, numbers as numbers."""
    # openpyxl (~11 MB resident) loads with the first workbook a worker writes
    from openpyxl import Workbook
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    wb = Workbook()
    wb.remove(wb.active)  # type: ignore[arg-type]
    for sheet in sheets:
        ws = wb.create_sheet(word(f"sheet.{sheet.name}", lang, sheet.name)[:31])
        headings = [header(c, lang) for c in sheet.columns]
        ws.append(headings)
        for cell in ws[1]:
            cell.font = Font(bold=True)
        for row in sheet.rows:
            ws.append([_cell(v) for v in row])
        ws.freeze_panes = "A2"
        for i, heading in enumerate(headings, start=1):
            longest = max([len(heading), *(len(str(r[i - 1])) for r in sheet.rows[:200] if r[i - 1] is not None)])
            ws.column_dimensions[get_column_letter(i)].width = min(MAX_WIDTH, longest + 2)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def csv_cell(value: object) -> object:
    """A value safe in a spreadsheet cell: a text beginning with ``= + - @``, a tab or a carriage return
    gets a leading ``'`` (the OWASP rule: shown, never evaluated). Numbers stay numbers, the negative
    ones included, and so does a text that is only a number (``-3.5``): no spreadsheet runs it.
    ``None`` is the empty cell."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _cell(value: Any) -> Any:
    """Numbers and dates as themselves (numbers stay numbers), text through ``csv_cell`` (openpyxl would
    write a text beginning with ``=`` as a formula); anything else as its text."""
    if value is None or isinstance(value, (int, float, dt.date, dt.datetime)):
        return value
    return csv_cell(value if isinstance(value, str) else str(value))


def range_cells(r: Any) -> list[float | None]:
    """A ``RangeRead`` (or ``None``) as its low, expected and high cells."""
    return [None, None, None] if r is None else [r.low, r.expected, r.high]


def range_columns(*fields: str) -> list[str]:
    return [f"{f}_{end}" for f in fields for end in RANGE_ENDS]


def offers_workbook(rows: Sequence[Any], lang: Lang) -> bytes:
    """Offer rows (``PriceRead``) as sheets ``offers`` (a row each, the columns of the JSON items) and
    ``sources`` (each distinct source with the offers citing it)."""
    fields = rows[0].__struct_fields__ if rows else ("id",)
    cited: dict[str, list[Any]] = {}
    for row in rows:
        entry = cited.setdefault(row.source, [row.source, row.source_quality, row.retrieved_on, 0])
        entry[3] += 1
    return workbook(
        [
            Sheet("offers", fields, [[getattr(row, f) for f in fields] for row in rows]),
            Sheet("sources", ["source", "quality", "retrieved_on", "offers"], list(cited.values())),
        ],
        lang,
    )
