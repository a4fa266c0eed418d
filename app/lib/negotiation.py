"""Content negotiation: which media type an answer comes in, and which body types are read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import HTTPException

from app.core.text import msg
from app.lib.spreadsheets import csv_bytes

JSON = "application/json"
#: a CSV answer: UTF-8 with a byte-order mark, CRLF line ends (``app.lib.spreadsheets``), sent as
#: ``text/csv; charset=utf-8`` (Litestar adds the charset of every ``text/`` answer)
CSV = "text/csv"


def negotiate(request: Request[Any, Any, Any], offered: list[str]) -> str:
    """The best of ``offered`` for the request's ``Accept`` (the first when it sends none); 406 when none fits."""
    if "accept" not in request.headers:
        return offered[0]
    best = request.accept.best_match(offered)
    if best is None:
        media = ", ".join(offered)
        raise HTTPException(
            status_code=406,
            detail=msg("problem.detail.not_acceptable", f"this operation answers in {media}", media=media),
        )
    return best


async def require_json_body(request: Request[Any, Any, Any]) -> None:
    """App-level ``before_request``: a body declared as other than JSON gets 415; an undeclared one is read as JSON."""
    if request.method in {"POST", "PUT", "PATCH"}:
        media = request.content_type[0].lower()
        if media and media != "application/json" and not media.endswith("+json"):
            raise HTTPException(
                status_code=415,
                detail=msg(
                    "problem.detail.not_json_type",
                    f"the body must be application/json, not {media}: send that Content-Type",
                    media=media,
                ),
            )


def rows_csv(rows: Sequence[msgspec.Struct]) -> bytes:
    """Flat Structs as CSV for spreadsheets: a header of their field names, a line each (BOM, CRLF)."""
    fields = rows[0].__struct_fields__ if rows else ()
    return csv_bytes(fields, ([getattr(row, f) for f in fields] for row in rows))
