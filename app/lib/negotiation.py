"""Content negotiation: which media type an answer comes in, and which body types are read."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import HTTPException

JSON = "application/json"
CSV = "text/csv"
#: a text cell beginning with one of these is read as a formula by spreadsheets (OWASP "CSV injection")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: ... unless it is just a number, which a spreadsheet reads as the number it is
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def negotiate(request: Request[Any, Any, Any], offered: list[str]) -> str:
    """The best of ``offered`` for the request's ``Accept`` (the first when it sends none); 406 when none fits."""
    if "accept" not in request.headers:
        return offered[0]
    best = request.accept.best_match(offered)
    if best is None:
        raise HTTPException(status_code=406, detail=f"this operation answers in {', '.join(offered)}")
    return best


async def require_json_body(request: Request[Any, Any, Any]) -> None:
    """App-level ``before_request``: a body declared as other than JSON gets 415; an undeclared one is read as JSON."""
    if request.method in {"POST", "PUT", "PATCH"}:
        media = request.content_type[0].lower()
        if media and media != "application/json" and not media.endswith("+json"):
            raise HTTPException(
                status_code=415, detail=f"the body must be application/json, not {media}: send that Content-Type"
            )


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


class SafeCsvWriter:
    """``csv.writer`` with every cell through ``csv_cell``: the one way the service writes CSV."""

    def __init__(self, out: io.StringIO) -> None:
        self._writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row: Sequence[object]) -> None:
        self._writer.writerow([csv_cell(v) for v in row])


def rows_csv(rows: Sequence[msgspec.Struct]) -> str:
    """Flat Structs as CSV: a header of their field names, a line each (cells through ``csv_cell``)."""
    out = io.StringIO()
    w = SafeCsvWriter(out)
    if rows:
        fields = rows[0].__struct_fields__
        w.writerow(fields)
        for row in rows:
            w.writerow([getattr(row, f) for f in fields])
    return out.getvalue()
