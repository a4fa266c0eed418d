"""Answers for spreadsheets: CSV that Excel opens cleanly, and XLSX workbooks.

CSV: UTF-8 with a byte-order mark (Excel on Windows otherwise reads "×" and Chinese as mojibake),
CRLF line ends (RFC 4180), a header of field names (machine-readable, in English; a money field's
name ends with its currency, ``annual_cost_expected_usd``), numbers unformatted. XLSX: one sheet per
section, numbers as numbers with a number format by field (``FORMATS``: money ``#,##0.00``, a cost
per GPU-hour ``#,##0.0000``, a share ``0.0%``, a count ``#,##0``), dates as dates, column headers and
sheet names in the request's language (``column.*`` and ``sheet.*`` codes), a money header naming its
currency ("Annual cost, expected (USD)"). Both come as an attachment whose file name names the
knowledge version and the day.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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

MONEY_FORMAT = "#,##0.00"
#: a cost per GPU-hour: the four decimals the JSON answers give it
RATE_FORMAT = "#,##0.0000"
#: a unit price: two decimals, up to four where it has them (per GPU-hour beside per server)
PRICE_FORMAT = "#,##0.00##"
SHARE_FORMAT = "0.0%"
COUNT_FORMAT = "#,##0"
SCORE_FORMAT = "0.0"
DATE_FORMAT = "yyyy-mm-dd"
#: amounts of money: their heading names the currency (a range's ends take their field's)
MONEY = frozenset(
    {
        "annual_cost",
        "total_cost",
        "upfront_cost",
        "npv_cost",
        "equivalent_annual_cost",
        "effective_npv_cost",
        "saving_npv_cost",
        "annual",
        "upfront",
        "total",
        "capex_budget",
        "delay_cost_per_day",
    }
)
RATES = frozenset(
    {"cost_per_useful_gpu_hour", "cost_per_effective_gpu_hour", "cost_per_useful_pflop_hour", "cost_per_million_tokens"}
)
#: unit prices: per GPU-hour, per server, per kW … as the offer's unit says
PRICES = frozenset({"price", "quoted_price", "low", "expected", "high"})
#: every field whose heading names a currency
MONEY_FIELDS = MONEY | RATES | PRICES
#: the XLSX number format of a field's cells, by field name (a range's ends take their field's)
FORMATS: dict[str, str] = {
    **dict.fromkeys(MONEY, MONEY_FORMAT),
    **dict.fromkeys(RATES, RATE_FORMAT),
    **dict.fromkeys(PRICES, PRICE_FORMAT),
    **dict.fromkeys(("utilization", "preemptible_share", "saving_share"), SHARE_FORMAT),
    **dict.fromkeys(
        (
            "gpus",
            "demand_gpus",
            "useful_gpu_hours_per_year",
            "team_size",
            "largest_job_gpus",
            "start_within_days",
            "capacity_gpus",
            "min_gpus",
            "gpus_per_unit",
            "min_kw",
            "months",
            "start_month",
            "profiles",
        ),
        COUNT_FORMAT,
    ),
    **dict.fromkeys(("score", "cost", "efficiency", "stability", "usability", "fit"), SCORE_FORMAT),
    "lead_time_days": "#,##0.0",
    "horizon_years": "0.0#",
    "exchange_rate": "0.0000##",
    "time_limit_seconds": "0.0#",
}


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


def split_end(column: str) -> tuple[str, str | None]:
    """A range's column as its field and end (``annual_cost_low`` → ``annual_cost``, ``low``); any other
    column as itself and ``None``."""
    base, _, end = column.rpartition("_")
    return (base, end) if end in RANGE_ENDS and base else (column, None)


def header(column: str, lang: Lang, currency: str | None = None) -> str:
    """The heading of ``column`` in ``lang``: ``annual_cost_low`` → "Annual cost (low)"; with the
    ``currency`` of a money field, "Annual cost, low (USD)" (``currency`` may be words: "the row's
    currency")."""
    base, end = split_end(column)
    name = word(f"column.{base}", lang, base)
    if currency is not None and base in MONEY_FIELDS:
        if end is None:
            return word("column.with_currency", lang, "{column} ({currency})").format(column=name, currency=currency)
        return word("column.with_end_and_currency", lang, "{column}, {end} ({currency})").format(
            column=name, end=word(f"column.end.{end}", lang, end), currency=currency
        )
    if end is None:
        return name
    return word("column.with_end", lang, "").format(column=name, end=word(f"column.end.{end}", lang, end))


def csv_header(column: str, currency: str | None) -> str:
    """A CSV column's name: the field name, a money field's followed by its currency code
    (``annual_cost_expected_usd``)."""
    base, _ = split_end(column)
    return f"{column}_{currency.lower()}" if currency is not None and base in MONEY_FIELDS else column


def number_format(column: str) -> str | None:
    """The XLSX number format of ``column``'s cells (``FORMATS``); ``None``: General."""
    base, _ = split_end(column)
    return FORMATS.get(column) or FORMATS.get(base)


def word(code: str, lang: Lang, default: str) -> str:
    """The catalog's ``code`` in ``lang``, else in English, else ``default``."""
    return catalog(lang).get(code) or catalog("en").get(code) or default


@dataclass(frozen=True, slots=True)
class Sheet:
    """One section: a name code (``sheet.<name>``), its columns (field names) and rows. ``currency``:
    what the money columns' headings name (a code, or words such as "the row's currency"), and per
    field where one differs (``currency_of``: ``{"quoted_price": …}``)."""

    name: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    currency: str | None = None
    currency_of: Mapping[str, str] = field(default_factory=dict)

    def heading(self, column: str, lang: Lang) -> str:
        return header(column, lang, self.currency_of.get(split_end(column)[0], self.currency))


def workbook(sheets: Sequence[Sheet], lang: Lang) -> bytes:
    """An XLSX workbook: a sheet per section, a bold frozen header row in ``lang``, numbers as numbers
    in their field's number format (``FORMATS``), dates as dates. Written as a stream (openpyxl's
    write-only mode: a row at a time, no cell kept), so a batch's workbook takes no cell objects' memory."""
    # openpyxl (~11 MB resident) loads with the first workbook a worker writes
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    wb = Workbook(write_only=True)
    bold = Font(bold=True)
    for sheet in sheets:
        ws = wb.create_sheet(word(f"sheet.{sheet.name}", lang, sheet.name)[:31])
        headings = [sheet.heading(c, lang) for c in sheet.columns]
        # column widths and the frozen header come before the rows in a stream
        for i, heading in enumerate(headings, start=1):
            longest = max([len(heading), *(len(str(r[i - 1])) for r in sheet.rows[:200] if r[i - 1] is not None)])
            ws.column_dimensions[get_column_letter(i)].width = min(MAX_WIDTH, longest + 2)
        ws.freeze_panes = "A2"
        titles = []
        for heading in headings:
            title = WriteOnlyCell(ws, value=heading)
            title.font = bold
            titles.append(title)
        ws.append(titles)
        formats = [number_format(c) for c in sheet.columns]
        for row in sheet.rows:
            cells: list[Any] = []
            for v, fmt in zip(row, formats, strict=False):
                value = _cell(v)
                shown = _shown(value, fmt)
                if shown is None:
                    cells.append(value)
                    continue
                cell = WriteOnlyCell(ws, value=value)
                cell.number_format = shown
                cells.append(cell)
            ws.append(cells)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def _shown(value: Any, fmt: str | None) -> str | None:
    """The number format of a cell holding ``value`` in a column of format ``fmt``: dates as dates,
    numbers (not booleans) in ``fmt``; ``None``: General."""
    if isinstance(value, dt.datetime):
        return f"{DATE_FORMAT} hh:mm:ss"
    if isinstance(value, dt.date):
        return DATE_FORMAT
    if fmt is not None and isinstance(value, int | float) and not isinstance(value, bool):
        return fmt
    return None


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
    """Offer rows (``PriceRead``) as sheets ``offers`` (a row each, the columns of the JSON items; each
    row's prices in its own currency, which the price headings say) and ``sources`` (each distinct
    source with the offers citing it)."""
    fields = rows[0].__struct_fields__ if rows else ("id",)
    cited: dict[str, list[Any]] = {}
    for row in rows:
        entry = cited.setdefault(row.source, [row.source, row.source_quality, row.retrieved_on, 0])
        entry[3] += 1
    own = word("column.row_currency", lang, "the row's currency")
    return workbook(
        [
            Sheet("offers", fields, [[getattr(row, f) for f in fields] for row in rows], currency=own),
            Sheet("sources", ["source", "quality", "retrieved_on", "offers"], list(cited.values())),
        ],
        lang,
    )
