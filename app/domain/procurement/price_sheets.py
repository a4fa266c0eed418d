"""An upload of private price rows read into the rows it holds: a JSON body ``{"prices": [row, …]}``, a CSV
file or an XLSX workbook (its first sheet) whose header row names the columns of a price row. Each row becomes
the dict of fields a seed file's row is (an empty cell is an absent field), with where it was in its file (``line
3`` of a CSV, ``row 3`` of a workbook) for the messages; validating the rows is ``app.domain.procurement.prices``'s.

A file that cannot be read as rows (not UTF-8, not CSV, not a workbook, a header naming an unknown column twice
or lacking a required one, more than ``MAX_ROWS`` rows) is refused as a whole (``Refused``, field ``prices``).
A downloaded CSV can be uploaded again: the columns a stored row has beyond its upload's (``STORED_COLUMNS``) are
passed over, and a text cell a download protected from spreadsheets' formulas (``'=…``) is read as it was.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from app.core.text import msg
from app.domain.procurement.price_schemas import MAX_ROWS, STORED_COLUMNS, UPLOAD_COLUMNS, PriceRowsCreate
from app.kb import csv_text
from app.kb.seeds import PriceSeed, validation_problems
from app.web.spreadsheets import FORMULA_STARTS

#: the columns an upload must have: the fields every price row has
REQUIRED = tuple(name for name in UPLOAD_COLUMNS if PriceSeed.model_fields[name].is_required())
#: the most bytes a workbook may unpack to (its XML); a 1 MiB upload of 500 rows unpacks to a few MB
MAX_UNPACKED_BYTES = 33_554_432
#: how a ``regions`` cell separates its regions
_REGIONS = re.compile(r"[\s,;]+")


@dataclasses.dataclass(frozen=True, slots=True)
class Sent:
    """One row as sent: its fields, and where it was in its file (None in a JSON body)."""

    values: dict[str, Any]
    where: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class RowProblem:
    """What is wrong with a row or with the upload: ``field`` is a path of the body (``prices.3.unit``)."""

    field: str
    message: str


class Refused(Exception):
    """The upload is refused: every problem found (nothing was stored)."""

    def __init__(self, problems: Sequence[RowProblem], *, status: int = 422) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = list(problems)
        self.status = status


def _whole(message: str) -> Refused:
    """The upload as a whole cannot be read (400: not the rows, the file)."""
    return Refused([RowProblem("prices", message)], status=400)


def rows_of_json(value: Any) -> list[Sent]:
    """The rows of a JSON body ``{"prices": [row, …]}`` (400 when it is not that shape)."""
    if not isinstance(value, dict):
        said = msg("procurement.prices.body", "the body is a JSON object whose prices are a list of price rows")
        raise Refused([RowProblem("body", said)], status=400)
    try:
        body = PriceRowsCreate.model_validate(value)
    except ValidationError as exc:
        found = validation_problems(exc, PriceRowsCreate.model_fields)
        raise Refused([RowProblem(p.field_name or "body", p.message) for p in found], status=400) from None
    return [Sent(row) for row in body.prices]


def rows_of_csv(body: bytes) -> list[Sent]:
    """The rows of a CSV file (UTF-8, a byte-order mark allowed), each with its line."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        said = msg("procurement.prices.not_utf8", f"not UTF-8 text (byte {exc.start})", byte=str(exc.start))
        raise _whole(said) from None
    return _records(csv_text.records(text, _not_csv), "line")


def _not_csv(line: int, exc: csv.Error) -> Refused:
    """``line 3: not CSV: …``: a record the file cannot be read past."""
    said = msg("procurement.prices.not_csv", f"not CSV: {exc}", error=str(exc))
    return _whole(_at("line", line, said))


def rows_of_xlsx(body: bytes) -> list[Sent]:
    """The rows of an XLSX workbook's first sheet, each with its row number."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise _not_xlsx(exc) from None
    if unpacked > MAX_UNPACKED_BYTES:
        most = f"{MAX_UNPACKED_BYTES:,}"
        raise _whole(
            msg("procurement.prices.xlsx_too_large", f"the workbook unpacks to more than {most} bytes", most=most)
        )
    # openpyxl (~11 MB resident) loads with the first workbook a worker reads
    from openpyxl import load_workbook

    try:
        book = load_workbook(io.BytesIO(body), read_only=True, data_only=True)
    except Exception as exc:  # a third party's reader of a file anyone may send: whatever it raises, the file is bad
        raise _not_xlsx(exc) from None
    try:
        if not book.worksheets:
            raise _not_xlsx(ValueError("no sheet"))
        sheet = book.worksheets[0]
        try:
            lines = [(n, [_text(v) for v in cells]) for n, cells in _sheet_rows(sheet.iter_rows(values_only=True))]
        except Refused:
            raise
        except Exception as exc:  # as above: a malformed sheet
            raise _not_xlsx(exc) from None
    finally:
        book.close()
    return _records(iter(lines), "row")


def _sheet_rows(rows: Iterable[Sequence[Any]]) -> Iterator[tuple[int, Sequence[Any]]]:
    """A sheet's rows with their numbers, refused once past the header and ``MAX_ROWS`` rows with a value."""
    filled = 0
    for number, cells in enumerate(rows, start=1):
        if any(c is not None and c != "" for c in cells):
            filled += 1
            if filled > MAX_ROWS + 1:
                raise _too_many()
        yield number, cells


def _not_xlsx(exc: BaseException) -> Refused:
    error = (str(exc) or type(exc).__name__)[:120]
    return _whole(msg("procurement.prices.not_xlsx", f"not an XLSX workbook ({error})", error=error))


def _text(value: Any) -> str:
    """A workbook cell as the text a CSV file would hold: numbers as written (``8``, ``55.04``), a day as
    ``2026-12-01``, a moment as ISO 8601, nothing as the empty cell."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time(0) else value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _place(kind: str, number: int) -> str:
    """``line 3`` (of a CSV file) or ``row 3`` (of a workbook)."""
    if kind == "line":
        return msg("procurement.prices.line", f"line {number}", number=str(number))
    return msg("procurement.prices.row", f"row {number}", number=str(number))


def _at(kind: str, number: int, message: str) -> str:
    """``line 3: …`` or ``row 3: …``."""
    place = _place(kind, number)
    return msg("procurement.prices.at", f"{place}: {message}", place=place, message=message)


def _too_many() -> Refused:
    most = str(MAX_ROWS)
    return _whole(
        msg("procurement.prices.too_many_rows", f"more than {most} rows: send at most {most} at once", most=most)
    )


def _records(lines: Iterator[tuple[int, list[str]]], kind: str) -> list[Sent]:
    """The rows below a header line, each a dict of its non-empty cells by column."""
    first = next(lines, None)
    if first is None:
        raise _whole(msg("procurement.prices.empty", "the file is empty: a header of the columns is needed"))
    number, header = first[0], [h.strip() for h in first[1]]
    while header and not header[-1]:
        header.pop()
    _check_header(header, kind, number)
    found: list[Sent] = []
    for number, cells in lines:
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue
        if any(cells[len(header) :]) or (kind == "line" and len(cells) < len(header)):
            said = msg(
                "procurement.prices.cells",
                f"{len(cells)} cells, the header has {len(header)}",
                cells=str(len(cells)),
                header=str(len(header)),
            )
            raise _whole(_at(kind, number, said))
        if len(found) == MAX_ROWS:
            raise _too_many()
        values: dict[str, Any] = {
            h: _unprotected(c) for h, c in zip(header, cells, strict=False) if c and h not in STORED_COLUMNS
        }
        if "regions" in values:
            values["regions"] = [r for r in _REGIONS.split(values["regions"]) if r]
        found.append(Sent(values, _place(kind, number)))
    if not found:
        raise _whole(msg("procurement.prices.no_rows", "no rows below the header"))
    return found


def _check_header(header: list[str], kind: str, number: int) -> None:
    known = (*UPLOAD_COLUMNS, *STORED_COLUMNS)
    unknown = [h for h in header if h not in known]
    if unknown:
        columns = ", ".join(UPLOAD_COLUMNS)
        said = msg(
            "procurement.prices.unknown_column",
            f"unknown column '{unknown[0][:40]}' (the columns are the fields of a price row: {columns})",
            column=unknown[0][:40],
            columns=columns,
        )
        raise _whole(_at(kind, number, said))
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        said = msg("procurement.prices.column_twice", f"the column '{twice[0]}' appears twice", column=twice[0])
        raise _whole(_at(kind, number, said))
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        columns = ", ".join(missing)
        said = msg("procurement.prices.missing_columns", f"missing columns: {columns}", columns=columns)
        raise _whole(_at(kind, number, said))


def _unprotected(cell: str) -> str:
    """A text a download wrote as ``'=…`` (``app.web.spreadsheets.csv_cell``) as it was."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell
