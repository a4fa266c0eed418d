"""API v1 schemas of an organisation's private price book: the body of an upload (its rows are seed price
rows, validated by ``app.kb.seeds.PriceSeed`` itself: ``app.domain.procurement.prices``), a stored row as read
back, a page of them, and the answer to a change."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
from pydantic import Field

from app.core.vocab import Billing, Currency, Interconnect, PriceUnit, Residency, SourceQuality
from app.kb.price_yaml import FIELD_ORDER
from app.web.schemas import RequestModel

#: the most rows one upload may hold
MAX_ROWS = 500
#: the columns of an upload: a seed file's price row, in the seed files' order (a downloaded CSV begins with them)
UPLOAD_COLUMNS = FIELD_ORDER
#: what a stored row says beyond its upload's columns: a downloaded CSV has them after those, and an upload
#: of such a file passes over them
STORED_COLUMNS = ("id", "added_in", "closed_in", "closed_on", "created_at", "created_by", "in_force")


class PriceRowsCreate(RequestModel):
    """``{"prices": [row, …]}``: each row a price row of the seed files (docs/price-books.md)."""

    prices: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_ROWS,
        description=f"1 to {MAX_ROWS} price rows in the seed files' format (seeds/4*.yaml, docs/price-books.md); "
        "each is checked exactly as `compute-advisor seeds check` checks a seed row.",
    )


class PrivatePriceRead(msgspec.Struct):
    """A row of the organisation's private book: its columns as uploaded (``*`` for a row tied to no GPU model
    or plan), and what the book says of it."""

    option: str
    provider: str
    item: str
    subject: str
    gpu_model: str
    plan: str
    unit: PriceUnit
    gpus_per_unit: int | None
    low: float
    high: float
    #: the source's most likely figure, as uploaded (null: none was given)
    expected: float | None
    currency: Currency
    region: str
    #: every region the one uploaded price held in, where it listed several (this row is the one of ``region``)
    regions: list[str] | None
    valid_from: dt.date
    valid_to: dt.date | None
    capacity_gpus: int | None
    lead_time_days_low: float | None
    lead_time_days_high: float | None
    min_gpus: int | None
    residency: Residency | None
    interconnect: Interconnect | None
    billing: Billing | None
    min_kw: float | None
    max_term_days: int | None
    source: str
    source_quality: SourceQuality
    retrieved_on: dt.date | None
    notes: str | None
    id: int
    #: the book version that added it
    added_in: int
    #: the book version that closed it (null: open)
    closed_in: int | None
    #: the day it stopped holding (null: open)
    closed_on: dt.date | None
    created_at: dt.datetime
    #: the API key that added it (``key:<id>``)
    created_by: str
    #: it prices the organisation's answers today: valid today, and not closed by today
    in_force: bool


class PrivatePriceList(msgspec.Struct):
    org: str
    #: the book's version now (0: no row was ever added)
    book_version: int
    total: int
    limit: int
    offset: int
    items: list[PrivatePriceRead]


class PriceBookChange(msgspec.Struct):
    """Rows added to the book, in one new book version."""

    org: str
    book_version: int
    #: the organisation's knowledge version after the change (``kvN-…+org:<org>.<book_version>``)
    knowledge_version: str
    prices: list[PrivatePriceRead]
