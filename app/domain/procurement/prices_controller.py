"""The organisation's private price book over HTTP: add rows (JSON, CSV or an XLSX workbook), list them (JSON
or CSV), close one. Thin handlers over ``app.domain.procurement.prices``; every route is an organisation's key's
(a key of none: 403 ``…:no-organisation``), and another organisation's row is answered as a missing one (404)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from typing import Annotated, Any

from litestar import Controller, Request, Response, delete, get, post
from litestar.di import NamedDependency
from litestar.exceptions import ValidationException
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.procurement import price_schemas as s
from app.domain.procurement import price_sheets, prices
from app.domain.shared.advisor import Advisor
from app.domain.shared.represent import Formats, Representation
from app.i18n import Lang, language, render
from app.kb.books import Books
from app.web.auth import principal_of
from app.web.bodies import BODY_MEDIA_OPT, OFF_LOOP_BYTES, PRICE_BOOK_BODY_BYTES, StrictJsonRequest
from app.web.negotiation import CSV, JSON
from app.web.pagination import DEFAULT_LIMIT, Limit, Offset, window
from app.web.problems import COMMON_PROBLEMS, problem
from app.web.spreadsheets import XLSX, csv_bytes

#: an upload's cost in rate-limit units: a unit per this many rows, and one (checking 500 rows: 15 ms, writing
#: them: most of the 200 ms the request takes on SQLite; a comparison, one unit: about 1 ms)
ROWS_PER_UNIT = 10
#: a CSV file or a workbook, whose rows are not counted before it is read: as many rows as an upload may hold
SHEET_UNITS = 1 + s.MAX_ROWS // ROWS_PER_UNIT
NO_ORGANISATION = problem(
    403,
    "The API key lacks the scope, or (`…:no-organisation`) belongs to no organisation: a private price book is an "
    "organisation's (`compute-advisor keys create … --org ORG`).",
)
#: an upload's example: the organisation's negotiated quote for an instance the list prices
#: a book's rows as a download: named for the organisation and its book's version
PRIVATE_PRICES = Formats(file="private-prices", version=lambda doc: f"{doc.org}.{doc.book_version}")
EXAMPLE_ROW = {
    "option": "rented_gpu_instances",
    "provider": "aws",
    "item": "instance_hour",
    "subject": "p5.48xlarge",
    "gpu_model": "h100_sxm",
    "plan": "on_demand",
    "unit": "per_server_hour",
    "gpus_per_unit": 8,
    "low": 41.5,
    "high": 41.5,
    "currency": "USD",
    "region": "us-east-1",
    "valid_from": "2026-12-01",
    "residency": "public_multi_tenant",
    "interconnect": "efa",
    "source": "Acme ML's negotiated AWS quote, 2026-11-20 (private)",
    "source_quality": "verified",
    "retrieved_on": "2026-11-20",
}


def upload_cost(body: Any) -> int:
    """1 + a unit per ``ROWS_PER_UNIT`` rows of a JSON body (at most ``MAX_ROWS`` counted); ``SHEET_UNITS`` for a
    CSV file or a workbook (no JSON value: ``app.web.bodies.BODY_MEDIA_OPT``)."""
    if body is None:
        return SHEET_UNITS
    rows = body.get("prices") if isinstance(body, dict) else None
    return 1 + min(len(rows), s.MAX_ROWS) // ROWS_PER_UNIT if isinstance(rows, list) else 1


@dataclasses.dataclass
class UploadOperation(Operation):
    """The upload's body, which its handler reads itself (JSON here; CSV and XLSX in the description)."""

    def __post_init__(self) -> None:
        row = Schema(
            type=OpenAPIType.OBJECT,
            description="A price row of the seed files (docs/price-books.md): " + ", ".join(s.UPLOAD_COLUMNS) + ".",
        )
        prices = Schema(type=OpenAPIType.ARRAY, items=row, min_items=1, max_items=s.MAX_ROWS)
        body = Schema(type=OpenAPIType.OBJECT, required=["prices"], properties={"prices": prices})
        self.request_body = RequestBody(
            content={JSON: OpenAPIMediaType(schema=body, example={"prices": [EXAMPLE_ROW]})},
            required=True,
            description=f"1 to {s.MAX_ROWS} rows. The same rows may come as `text/csv` (UTF-8, a header line of "
            f"the column names) or as an XLSX workbook (`{XLSX}`: its first sheet, a header row), one row a line; "
            "an empty cell is an absent field, `regions` lists its regions separated by commas.",
        )


def _org(request: Request[Any, Any, Any]) -> str:
    org = principal_of(request).org
    if org is None:
        raise prices.no_organisation()
    return org


def _refused(exc: price_sheets.Refused, lang: Lang) -> ValidationException:
    """A refusal as a problem listing each field and what is wrong with it (``app.web.problems``)."""
    errors = [{"key": p.field, "message": render(p.message, lang)} for p in exc.problems]
    return ValidationException(detail=str(exc), status_code=exc.status, extra=errors)


def _read(media: str, body: bytes, value: Any, advisor: Advisor) -> tuple[list[price_sheets.Sent], list[prices.Loaded]]:
    """The rows of an upload, checked (``Refused``)."""
    if media == CSV:
        sent = price_sheets.rows_of_csv(body)
    elif media == XLSX:
        sent = price_sheets.rows_of_xlsx(body)
    else:
        sent = price_sheets.rows_of_json(value)
    return sent, prices.check_rows(sent, advisor.list_knowledge(), advisor.options)


class PriceBookController(Controller):
    path = "/v1/price-books"
    tags = ["price-books"]

    @post(
        "/prices",
        operation_id="addPrivatePrices",
        opt={"scope": "prices:write", "cost": upload_cost, BODY_MEDIA_OPT: (CSV, XLSX)},
        request_max_body_size=PRICE_BOOK_BODY_BYTES,
        status_code=201,
        summary="Add rows to the organisation's private price book, in one new book version",
        description="Each row is checked exactly as `compute-advisor seeds check` checks a seed file's price row, "
        "its references against the list knowledge served, and no row may overlap another of the same price or "
        "offer (among those sent, and in the book): any problem refuses every row (422, each `prices.<i>.<field>` "
        "named; a CSV's line or a workbook's row in its message) and nothing is stored. For the organisation's "
        "keys a private row prices the offer of its identity in place of the list's row, or adds an offer; "
        "`knowledge_version` names the book (`…+org:<org>.<book_version>`).",
        responses={
            **COMMON_PROBLEMS,
            403: NO_ORGANISATION,
            413: problem(413, "The body is larger than 1 MiB: send fewer rows at once."),
            415: problem(415, "The body must be `application/json`, `text/csv` or an XLSX workbook."),
            422: problem(422, "A row is not a valid price row, or overlaps another: `errors` names each field."),
        },
        operation_class=UploadOperation,
    )
    async def add_prices(
        self,
        request: Request[Any, Any, Any],
        advisor: NamedDependency[Advisor],
        db_session: NamedDependency[AsyncSession],
    ) -> Response[s.PriceBookChange]:
        body = await request.body()  # a body over the route's limit is a 413 whoever sends it
        org, lang = _org(request), language(request.scope)
        media = request.content_type[0].lower()
        assert isinstance(request, StrictJsonRequest), "the app's request_class reads bodies (app.web.bodies)"
        value = None if media in (CSV, XLSX) else await request.json_value()
        try:
            # a workbook (500 rows: ~120 ms) or a large body is read and checked off the event loop
            if media == XLSX or len(body) > OFF_LOOP_BYTES:
                sent, loaded = await asyncio.to_thread(_read, media, body, value, advisor)
            else:
                sent, loaded = _read(media, body, value, advisor)
            version, rows = await prices.add(db_session, org, principal_of(request).actor, sent, loaded)
        except price_sheets.Refused as exc:
            raise _refused(exc, lang) from None
        books: Books = request.app.state.books
        books.forget(org)
        snapshot = books.knowledge(advisor.list_knowledge(), await books.current(org))
        today = advisor.today()
        change = s.PriceBookChange(org, version, snapshot.version, [prices.read(row, today) for row in rows])
        return Response(change, status_code=201)

    @get(
        "/prices",
        operation_id="listPrivatePrices",
        opt={"scope": "catalog:read"},
        summary="The organisation's private price rows, newest first (CSV with Accept: text/csv)",
        responses={**COMMON_PROBLEMS, 403: NO_ORGANISATION},
    )
    async def list_prices(
        self,
        request: Request[Any, Any, Any],
        advisor: NamedDependency[Advisor],
        db_session: NamedDependency[AsyncSession],
        include_closed: Annotated[
            bool, Parameter(description="Also the rows closed by today (default: only the open ones).")
        ] = False,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> Response[s.PrivatePriceList]:
        shown = Representation(request, PRIVATE_PRICES)  # a 406 before a 403
        org, today = _org(request), advisor.today()
        doc = await prices.listing(
            db_session, org, include_closed=include_closed, window=window(limit, offset), today=today
        )
        return shown.answer(doc, _csv, day=today)

    @delete(
        "/prices/{price_id:int}",
        operation_id="closePrivatePrice",
        opt={"scope": "prices:write"},
        status_code=200,
        summary="Close a private price row from a day on, in a new book version (never erased)",
        responses={
            **COMMON_PROBLEMS,
            403: NO_ORGANISATION,
            409: problem(409, "The row was closed already."),
            422: problem(422, "`on` is before the row's valid_from."),
        },
    )
    async def close_price(
        self,
        request: Request[Any, Any, Any],
        advisor: NamedDependency[Advisor],
        db_session: NamedDependency[AsyncSession],
        price_id: Annotated[int, Parameter(ge=1, le=prices.MOST_INTEGER, description="A row's id.")],
        on: Annotated[
            dt.date | None, Parameter(description="The first day the row no longer holds (default: today, UTC).")
        ] = None,
    ) -> s.PrivatePriceRead:
        org, today = _org(request), advisor.today()
        row = await prices.close(db_session, org, price_id, on or today, principal_of(request).actor)
        request.app.state.books.forget(org)
        return prices.read(row, today)


def _csv(doc: s.PrivatePriceList, _media: str, _lang: Lang) -> bytes:
    """The rows as a CSV an upload takes again: the upload's columns first (``regions`` separated by commas)."""
    fields = s.PrivatePriceRead.__struct_fields__

    def cell(value: Any) -> Any:
        return ", ".join(value) if isinstance(value, list) else value

    return csv_bytes(fields, ([cell(getattr(row, f)) for f in fields] for row in doc.items))
