"""Content negotiation: which media type an answer comes in, and which body types are read."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec
from litestar import Request
from litestar.exceptions import HTTPException

from app.core.text import msg
from app.i18n import QVALUE
from app.web.bodies import body_media, quoted
from app.web.spreadsheets import csv_bytes

JSON = "application/json"
#: a CSV answer: UTF-8 with a byte-order mark, CRLF line ends (``app.web.spreadsheets``), sent as
#: ``text/csv; charset=utf-8`` (Litestar adds the charset of every ``text/`` answer)
CSV = "text/csv"


#: a media range's type or subtype (RFC 9110 token)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


class AcceptRange(NamedTuple):
    maintype: str
    subtype: str
    q: float


def _bad_accept(reason: str) -> HTTPException:
    return HTTPException(
        status_code=400,
        detail=msg("problem.detail.bad_accept", f"the Accept header is malformed: {reason}", reason=reason),
    )


def parse_accept(header: str) -> list[AcceptRange]:
    """``Accept`` (RFC 9110 §12.5.1) as its media ranges, in the order given. A malformed range (no
    ``type/subtype``, a quality value outside ``0``–``1`` or with more than three decimals: ``q=inf``,
    ``q=1e400``) is a 400."""
    ranges: list[AcceptRange] = []
    for part in header.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if not media and not params:  # an empty element of the list ("a, , b"): allowed by RFC 9110 §5.6.1
            continue
        maintype, slash, subtype = media.lower().partition("/")
        if not (slash and _TOKEN.match(maintype) and _TOKEN.match(subtype)) or (maintype == "*" != subtype):
            raise _bad_accept(f"{quoted(media)} is not a media range (type/subtype)")
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                value = value.strip()
                if not QVALUE.match(value):
                    raise _bad_accept(f"the quality value {quoted(value)} is not a number from 0 to 1")
                q = float(value)
        ranges.append(AcceptRange(maintype, subtype, q))
    return ranges


def _quality(media: str, ranges: list[AcceptRange]) -> float:
    """``media``'s quality: that of the most specific range matching it (0 when none does)."""
    maintype, _, subtype = media.partition("/")
    best, found = -1, 0.0
    for r in ranges:
        if r.maintype in ("*", maintype) and r.subtype in ("*", subtype):
            specific = (r.maintype != "*") + (r.subtype != "*")
            if specific > best:
                best, found = specific, r.q
    return found


def negotiate(request: Request[Any, Any, Any], offered: list[str]) -> str:
    """The best of ``offered`` for the request's ``Accept``: the highest quality, the first offered among
    equals (the first when it sends none); 406 when none is acceptable, 400 when the header is malformed."""
    header = request.headers.get("accept")
    if header is None or not header.strip():
        return offered[0]
    ranges = parse_accept(header)
    quality, media = max(((_quality(m, ranges), -i), m) for i, m in enumerate(offered))
    if quality[0] > 0:
        return media
    listed = ", ".join(offered)
    raise HTTPException(
        status_code=406,
        detail=msg("problem.detail.not_acceptable", f"this operation answers in {listed}", media=listed),
    )


async def require_json_body(request: Request[Any, Any, Any]) -> None:
    """App-level ``before_request``: a body must be declared ``application/json`` (or ``+json``) in UTF-8;
    415 otherwise — a body without ``Content-Type``, of another type or in another charset. A request
    without a body passes (the operation answers that a body is required), and so does a body of a type its
    route declares it reads itself (``app.web.bodies.BODY_MEDIA_OPT``: a CSV or XLSX upload)."""
    if request.method not in {"POST", "PUT", "PATCH"}:
        return
    media, params = request.content_type
    media = media.lower()
    if not media:
        if request.headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in request.headers:
            raise HTTPException(
                status_code=415,
                detail=msg(
                    "problem.detail.no_json_type",
                    "the body has no Content-Type: send Content-Type: application/json",
                ),
            )
        return
    if media != "application/json" and not media.endswith("+json") and media not in body_media(request):
        raise HTTPException(
            status_code=415,
            detail=msg(
                "problem.detail.not_json_type",
                f"the body must be application/json, not {media}: send that Content-Type",
                media=media,
            ),
        )
    charset = params.get("charset", "utf-8").strip().strip('"').lower()
    if charset not in {"utf-8", "utf8"}:
        raise HTTPException(
            status_code=415,
            detail=msg(
                "problem.detail.not_utf8",
                f"the body must be UTF-8, not charset={charset[:40]}: send it as UTF-8",
                charset=charset[:40],
            ),
        )


def rows_csv(rows: Sequence[msgspec.Struct]) -> bytes:
    """Flat Structs as CSV for spreadsheets: a header of their field names, a line each (BOM, CRLF)."""
    fields = rows[0].__struct_fields__ if rows else ()
    return csv_bytes(fields, ([getattr(row, f) for f in fields] for row in rows))
