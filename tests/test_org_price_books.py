"""An organisation's private price book over HTTP (app.domain.procurement): rows added as JSON, CSV or an XLSX
workbook in one new book version, checked exactly as seed rows are (422 naming ``prices.<i>.<field>``, nothing
stored); listed newest first (JSON, CSV that uploads again); closed in a new version, never erased; audited; an
organisation's keys only, another organisation's row answered as a missing one. A stored row prices the
organisation's answers in place of the list's row (or adds an offer), everyone else's stay as they were, and a
stored answer is replayed on the book of its version."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from conftest import create_key, make_client
from litestar import Litestar
from litestar.testing import TestClient

from app.domain.decisions.service import DecisionService
from app.domain.procurement.price_schemas import STORED_COLUMNS, UPLOAD_COLUMNS, PrivatePriceRead
from app.domain.procurement.prices_controller import SHEET_UNITS, upload_cost
from app.domain.shared.demand import ComparisonCreate
from app.kb import books
from app.kb.price_yaml import FIELD_ORDER
from app.settings import Settings, parse_rate_limit
from app.web.spreadsheets import XLSX

PRICES = "/v1/price-books/prices"
COMPARE = "/v1/price-comparisons"
WRITE = ["prices:write", "catalog:read", "decisions:run"]
TODAY = dt.datetime.now(dt.UTC).date()
#: the list's on-demand p5.48xlarge in us-east-1 (seeds/41-offers-hyperscalers.yaml, 55.04 USD per server-hour),
#: quoted lower to the organisation
QUOTE: dict[str, Any] = {
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
    "valid_from": "2026-11-01",
    "residency": "public_multi_tenant",
    "interconnect": "efa",
    "source": "Acme ML's negotiated AWS quote, 2026-11-20 (private)",
    "source_quality": "verified",
    "retrieved_on": "2026-11-20",
}
#: a comparison the quote prices (as of a day it holds)
REQUEST = {
    "team_size": 20,
    "gpus": 64,
    "utilization": 0.5,
    "horizon_years": 1,
    "currency": "USD",
    "as_of": "2026-12-01",
    "gpu_model": "h100_sxm",
    "providers": ["aws"],
    "regions": ["us-east-1"],
    "rental_plan": "on_demand",
}


def quote(**changes: Any) -> dict[str, Any]:
    return {**QUOTE, **changes}


@pytest.fixture
def db(databases: Any) -> str:
    return str(databases.seeded("sqlite"))


@pytest.fixture
def both_db(databases: Any, backend: str) -> str:
    return str(databases.seeded(backend))


def client_of(url: str, org: str | None = "acme", scopes: list[str] = WRITE, **kwargs: Any) -> TestClient[Litestar]:
    key_id, key = create_key(url, scopes, name=f"{org} key", org=org)
    client = make_client(url, api_key=key, **kwargs)
    client.key_id = key_id  # type: ignore[attr-defined]
    return client


@pytest.fixture
def acme(db: str) -> Iterator[TestClient[Litestar]]:
    with client_of(db) as c:
        yield c


def problem(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text[:800]
    assert r.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = r.json()
    return body


def fields(r: Any, status: int = 422) -> dict[str, str]:
    """The problem's field errors: field → message."""
    return {e["field"]: e["message"] for e in problem(r, status)["errors"]}


def listing(c: TestClient[Litestar], **params: Any) -> dict[str, Any]:
    r = c.get(PRICES, params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def audit_events(url: str, action: str) -> list[dict[str, Any]]:
    with make_client(url) as admin:
        r = admin.get("/v1/audit", params={"action": action})
        assert r.status_code == 200, r.text
        items: list[dict[str, Any]] = r.json()["items"]
        return items


def csv_text(rows: list[dict[str, Any]], columns: tuple[str, ...] = UPLOAD_COLUMNS) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([row.get(c, "") for c in columns])
    return out.getvalue()


def workbook(rows: list[list[Any]]) -> bytes:
    from openpyxl import Workbook

    wb = Workbook()
    for row in rows:
        wb.active.append(row)  # type: ignore[union-attr]
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


# ---- adding rows ----------------------------------------------------------------------------------------------


def test_added_rows_answer_201_in_one_new_book_version(both_db: str) -> None:
    with client_of(both_db) as c:
        r = c.post(PRICES, json={"prices": [QUOTE, quote(region="us-west-2", low=40, high=44, expected=42)]})
        assert r.status_code == 201, r.text
        doc = r.json()
        assert (doc["org"], doc["book_version"]) == ("acme", 1)
        assert doc["knowledge_version"].startswith("kv") and doc["knowledge_version"].endswith("+org:acme.1")
        first, second = doc["prices"]
        assert {k: first[k] for k in QUOTE if k not in ("valid_from", "retrieved_on")} == {
            k: v for k, v in QUOTE.items() if k not in ("valid_from", "retrieved_on")
        }
        assert (first["valid_from"], first["expected"], first["valid_to"], first["regions"]) == (
            "2026-11-01",
            None,
            None,
            None,
        )
        assert (second["low"], second["expected"], second["high"]) == (40, 42, 44)
        assert first["added_in"] == second["added_in"] == 1
        assert first["closed_in"] is first["closed_on"] is None
        assert first["created_by"] == f"key:{c.key_id}"  # type: ignore[attr-defined]
        assert first["in_force"] is True
        assert list(first) == list(PrivatePriceRead.__struct_fields__)
        (event,) = audit_events(both_db, "prices.add")
        assert event["actor"] == f"key:{c.key_id}"  # type: ignore[attr-defined]
        assert event["detail"] == {"org": "acme", "book_version": 1, "ids": [first["id"], second["id"]]}


def test_a_row_of_several_regions_is_one_row_per_region(acme: TestClient[Litestar]) -> None:
    row = quote(region=None, regions=["us-west-2", "eu-north-1"])
    del row["region"]
    r = acme.post(PRICES, json={"prices": [row]})
    assert r.status_code == 201, r.text
    assert [(p["region"], p["regions"]) for p in r.json()["prices"]] == [
        ("us-west-2", ["us-west-2", "eu-north-1"]),
        ("eu-north-1", ["us-west-2", "eu-north-1"]),
    ]


@pytest.mark.parametrize(
    ("rows", "field", "words"),
    [
        ([quote(unit="per_hour")], "prices.0.unit", "is not one of"),
        ([quote(low=50, high=40)], "prices.0.low", "above high"),
        ([quote(provider="acme_cloud")], "prices.0.provider", "unknown provider 'acme_cloud'"),
        ([quote(gpu_model="h900")], "prices.0.gpu_model", "unknown GPU model 'h900'"),
        ([quote(region="atlantis")], "prices.0.region", "unknown region 'atlantis'"),
        ([quote(plan="pay_as_you_go")], "prices.0.plan", "not a plan option rented_gpu_instances sells"),
        ([quote(option="rented_moon_instances")], "prices.0.option", "no loaded option"),
        # how a row bills is the platform plugin's word alone (OptionSpec.billings)
        ([quote(billing="held_cluster")], "prices.0.billing", "rented_gpu_instances does not say how its rows bill"),
        ([quote(capacity_gpus=2**40)], "prices.0.capacity_gpus", "more than the book holds"),
        ([quote(retrieved_on="2999-01-01")], "prices.0.retrieved_on", "in the future"),
        ([quote(colour="blue")], "prices.0.colour", "unknown field"),
        (
            [quote(), quote(valid_from="2026-11-15", low=39, high=39)],
            "prices.0.valid_to",
            "overlaps the one from 2026-11-15 of row 1 sent",
        ),
        # the same offer in another currency: one offer of the book, two prices of it on a day
        ([quote(), quote(currency="EUR")], "prices.0.valid_to", "overlaps"),
    ],
)
def test_a_row_seeds_check_would_refuse_is_422_naming_it_and_nothing_is_stored(
    acme: TestClient[Litestar], rows: list[dict[str, Any]], field: str, words: str
) -> None:
    errors = fields(acme.post(PRICES, json={"prices": rows}))
    assert field in errors, errors
    assert words in errors[field], errors[field]
    after = listing(acme, include_closed=True)
    assert (after["book_version"], after["total"]) == (0, 0)


def test_every_failing_row_is_named_and_none_is_stored(acme: TestClient[Litestar]) -> None:
    rows = [quote(), quote(region="us-west-2", unit="per_hour"), quote(region="us-east-2", provider="nope")]
    body = problem(acme.post(PRICES, json={"prices": rows}), 422)
    assert body["type"].endswith(":unprocessable")
    assert [e["field"] for e in body["errors"]] == ["prices.1.unit", "prices.2.provider"]
    assert body["field"] == "prices.1.unit"
    assert "prices.1.unit: " in body["detail"] and "prices.2.provider: " in body["detail"]
    assert listing(acme, include_closed=True)["total"] == 0


def test_a_row_overlapping_the_books_row_of_its_offer_is_refused(acme: TestClient[Litestar]) -> None:
    assert acme.post(PRICES, json={"prices": [QUOTE]}).status_code == 201
    (stored,) = listing(acme)["items"]
    errors = fields(acme.post(PRICES, json={"prices": [quote(valid_from="2026-12-01", low=39, high=39)]}))
    assert errors.keys() == {"prices.0.valid_from"}
    assert f"row {stored['id']} prices the same offer from 2026-11-01" in errors["prices.0.valid_from"]
    assert f"DELETE /v1/price-books/prices/{stored['id']}?on=2026-12-01" in errors["prices.0.valid_from"]
    # closed from that day on, the new quote follows it
    assert acme.delete(f"{PRICES}/{stored['id']}", params={"on": "2026-12-01"}).status_code == 200
    r = acme.post(PRICES, json={"prices": [quote(valid_from="2026-12-01", low=39, high=39)]})
    assert r.status_code == 201, r.text
    assert r.json()["book_version"] == 3
    # a row ending before the book's begins is no overlap; one into it is
    earlier = quote(valid_from="2026-01-01", valid_to="2026-11-01")
    assert acme.post(PRICES, json={"prices": [earlier]}).status_code == 201
    errors = fields(acme.post(PRICES, json={"prices": [quote(valid_from="2025-01-01", valid_to="2026-02-01")]}))
    assert "to 2026-11-01" in errors["prices.0.valid_from"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"prices": []}, "prices"),
        ({"prices": [QUOTE] * 501}, "prices"),
        ({"rows": [QUOTE]}, "rows"),
        ([QUOTE], "body"),
        ({"prices": [5]}, "prices.0"),
    ],
)
def test_a_body_of_another_shape_is_400(acme: TestClient[Litestar], body: Any, field: str) -> None:
    assert field in fields(acme.post(PRICES, json=body), 400)


# ---- CSV and XLSX uploads ---------------------------------------------------------------------------------------


def test_a_csv_upload_adds_the_same_rows(acme: TestClient[Litestar]) -> None:
    text = "\ufeff" + csv_text([QUOTE, quote(region="us-west-2", regions="")])
    r = acme.post(PRICES, content=text.encode(), headers={"Content-Type": "text/csv; charset=utf-8"})
    assert r.status_code == 201, r.text
    assert [(p["region"], p["low"], p["expected"]) for p in r.json()["prices"]] == [
        ("us-east-1", 41.5, None),
        ("us-west-2", 41.5, None),
    ]


def test_a_bad_csv_row_names_the_row_field_and_line(acme: TestClient[Litestar]) -> None:
    text = csv_text([QUOTE, quote(region="us-west-2", unit="per_hour")])
    errors = fields(acme.post(PRICES, content=text.encode(), headers={"Content-Type": "text/csv"}))
    assert errors.keys() == {"prices.1.unit"}
    assert errors["prices.1.unit"].startswith("line 3: 'per_hour' is not one of")
    assert listing(acme)["total"] == 0


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"option,colour\r\nx,y\r\n", "line 1: unknown column 'colour'"),
        (b"option,option\r\n", "line 1: the column 'option' appears twice"),
        (
            b"option,provider\r\nx,y\r\n",
            "line 1: missing columns: item, unit, low, high, currency, valid_from, source,",
        ),
        (csv_text([]).encode(), "no rows below the header"),
        (b"", "the file is empty"),
        ("option\r\nR\u00e9gion".encode("latin-1"), "not UTF-8"),
        (csv_text([QUOTE]).encode() + b"a,b\r\n", "line 3: 2 cells, the header has 29"),
    ],
)
def test_a_csv_that_is_no_sheet_of_rows_is_400(acme: TestClient[Litestar], content: bytes, words: str) -> None:
    errors = fields(acme.post(PRICES, content=content, headers={"Content-Type": "text/csv"}), 400)
    assert words in errors["prices"], errors


def test_an_xlsx_upload_adds_the_same_rows_and_names_a_bad_rows_number(acme: TestClient[Litestar]) -> None:
    columns = list(UPLOAD_COLUMNS)
    typed = {**QUOTE, "valid_from": dt.datetime(2026, 11, 1), "retrieved_on": dt.date(2026, 11, 20)}
    good = workbook([columns, [typed.get(c) for c in columns], [], [quote(region="us-west-2").get(c) for c in columns]])
    r = acme.post(PRICES, content=good, headers={"Content-Type": XLSX})
    assert r.status_code == 201, r.text
    assert [(p["region"], p["valid_from"], p["gpus_per_unit"]) for p in r.json()["prices"]] == [
        ("us-east-1", "2026-11-01", 8),
        ("us-west-2", "2026-11-01", 8),
    ]
    bad = workbook([columns, [quote(region="us-east-2", low=9, high=3).get(c) for c in columns]])
    errors = fields(acme.post(PRICES, content=bad, headers={"Content-Type": XLSX}))
    assert errors["prices.0.low"].startswith("row 2: low (9) is above high (3)"), errors
    assert listing(acme)["book_version"] == 1


def test_a_file_that_is_no_workbook_is_400(acme: TestClient[Litestar]) -> None:
    errors = fields(acme.post(PRICES, content=b"PK\x03\x04 not a zip", headers={"Content-Type": XLSX}), 400)
    assert "not an XLSX workbook" in errors["prices"]


def test_another_media_type_is_415(acme: TestClient[Litestar]) -> None:
    r = acme.post(PRICES, content=b"option", headers={"Content-Type": "text/plain"})
    assert problem(r, 415)["type"].endswith(":unsupported-media-type")


def test_a_csv_upload_is_charged_under_a_rate_limit(db: str) -> None:
    settings = Settings(database_url=db, knowledge_refresh_seconds=0.2, rate_limit=parse_rate_limit("1000/minute"))
    with client_of(db, settings=settings) as c:
        r = c.post(PRICES, content=csv_text([QUOTE]).encode(), headers={"Content-Type": "text/csv"})
        assert r.status_code == 201, r.text
        assert "ratelimit-remaining" in r.headers


# ---- listing, closing --------------------------------------------------------------------------------------------


def test_the_list_is_newest_first_and_hides_closed_rows_unless_asked(both_db: str) -> None:
    with client_of(both_db) as c:
        first = c.post(PRICES, json={"prices": [QUOTE]}).json()["prices"][0]
        second = c.post(PRICES, json={"prices": [quote(region="us-west-2")]}).json()["prices"][0]
        shown = listing(c)
        assert (shown["org"], shown["book_version"], shown["total"]) == ("acme", 2, 2)
        assert [p["id"] for p in shown["items"]] == [second["id"], first["id"]]
        assert [p["id"] for p in listing(c, limit=1, offset=1)["items"]] == [first["id"]]
        closed = c.delete(f"{PRICES}/{first['id']}", params={"on": TODAY.isoformat()})
        assert closed.status_code == 200, closed.text
        assert (closed.json()["closed_in"], closed.json()["closed_on"], closed.json()["in_force"]) == (
            3,
            TODAY.isoformat(),
            False,
        )
        assert [p["id"] for p in listing(c)["items"]] == [second["id"]]
        everything = listing(c, include_closed=True)
        assert [p["id"] for p in everything["items"]] == [second["id"], first["id"]]  # never erased
        assert everything["book_version"] == 3
        assert problem(c.delete(f"{PRICES}/{first['id']}"), 409)["type"].endswith(":conflict")
        (event,) = audit_events(both_db, "prices.close")
        assert event["detail"] == {"org": "acme", "book_version": 3, "id": first["id"], "closed_on": TODAY.isoformat()}


def test_a_row_closed_on_a_later_day_is_in_force_until_then(acme: TestClient[Litestar]) -> None:
    row = acme.post(PRICES, json={"prices": [QUOTE]}).json()["prices"][0]
    later = (TODAY + dt.timedelta(days=30)).isoformat()
    closed = acme.delete(f"{PRICES}/{row['id']}", params={"on": later}).json()
    assert (closed["closed_on"], closed["in_force"]) == (later, True)
    assert [p["id"] for p in listing(acme)["items"]] == [row["id"]]


def test_closing_before_the_rows_first_day_is_422_naming_on(acme: TestClient[Litestar]) -> None:
    row = acme.post(PRICES, json={"prices": [QUOTE]}).json()["prices"][0]
    body = problem(acme.delete(f"{PRICES}/{row['id']}", params={"on": "2026-10-31"}), 422)
    assert body["field"] == "on" and "before the row's first day (2026-11-01)" in body["detail"]
    assert listing(acme)["book_version"] == 1  # no version spent


def test_the_csv_download_uploads_again(db: str) -> None:
    with client_of(db) as c:
        c.post(PRICES, json={"prices": [QUOTE, quote(region=None, regions=["us-west-2", "eu-north-1"], notes="=1+1")]})
        r = c.get(PRICES, headers={"Accept": "text/csv"})
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/csv")
        assert 'filename="private-prices_acme.1_' in r.headers["content-disposition"]
        text = r.content.decode("utf-8-sig")
        header = next(csv.reader(io.StringIO(text)))
        assert tuple(header) == (*UPLOAD_COLUMNS, *STORED_COLUMNS)
        stored = {(p["region"], p["low"], p["notes"]) for p in listing(c)["items"]}
    with client_of(db, org="other") as other:
        again = other.post(PRICES, content=r.content, headers={"Content-Type": "text/csv"})
        assert again.status_code == 201, again.text
        assert {(p["region"], p["low"], p["notes"]) for p in again.json()["prices"]} == stored


def test_the_upload_columns_are_the_seed_files(db: str) -> None:
    assert UPLOAD_COLUMNS == FIELD_ORDER
    assert PrivatePriceRead.__struct_fields__ == (*UPLOAD_COLUMNS, *STORED_COLUMNS)


# ---- who may ---------------------------------------------------------------------------------------------------


def test_a_key_of_no_organisation_is_403_on_every_route(db: str) -> None:
    with client_of(db, org=None) as c:
        for r in (c.post(PRICES, json={"prices": [QUOTE]}), c.get(PRICES), c.delete(f"{PRICES}/1")):
            body = problem(r, 403)
            assert body["type"].endswith(":no-organisation")
            assert "--org" in body["detail"]


def test_a_key_without_prices_write_may_read_but_not_change(db: str) -> None:
    with client_of(db, scopes=["catalog:read"]) as c:
        assert problem(c.post(PRICES, json={"prices": [QUOTE]}), 403)["type"].endswith(":forbidden")
        assert problem(c.delete(f"{PRICES}/1"), 403)["type"].endswith(":forbidden")
        assert c.get(PRICES).status_code == 200
    with client_of(db, scopes=["prices:write"], org="acme") as c:
        assert problem(c.get(PRICES), 403)["type"].endswith(":forbidden")


def test_another_organisations_row_is_404_as_a_missing_one(db: str) -> None:
    with client_of(db) as acme, client_of(db, org="other") as other:
        row = acme.post(PRICES, json={"prices": [QUOTE]}).json()["prices"][0]
        theirs = problem(other.delete(f"{PRICES}/{row['id']}"), 404)
        missing = problem(other.delete(f"{PRICES}/999"), 404)
        assert {k: v for k, v in theirs.items() if k not in ("detail", "instance", "request_id")} == {
            k: v for k, v in missing.items() if k not in ("detail", "instance", "request_id")
        }
        assert theirs["detail"] == missing["detail"].replace("999", str(row["id"]))
        assert listing(other, include_closed=True)["total"] == 0
        assert listing(acme)["items"][0]["closed_in"] is None


def test_two_concurrent_uploads_get_versions_1_and_2(both_db: str) -> None:
    _, key = create_key(both_db, WRITE, org="acme")
    barrier, answers = threading.Barrier(2), []

    def upload(region: str) -> None:
        with make_client(both_db, api_key=key) as c:
            barrier.wait()
            answers.append(c.post(PRICES, json={"prices": [quote(region=region)]}))

    threads = [threading.Thread(target=upload, args=(r,)) for r in ("us-east-1", "us-west-2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [a.status_code for a in answers] == [201, 201], [a.text for a in answers]
    assert sorted(a.json()["book_version"] for a in answers) == [1, 2]
    with make_client(both_db, api_key=key) as c:
        assert (listing(c)["book_version"], listing(c)["total"]) == (2, 2)


# ---- the book prices the organisation's answers ----------------------------------------------------------------


def _offer(doc: dict[str, Any]) -> dict[str, Any]:
    (item,) = [i for i in doc["items"] if i["option"] == "rented_gpu_instances"]
    offer: dict[str, Any] = item["offer"]
    return offer


def _load_book(url: str, org: str, version: int) -> books.Book | None:
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    async def run() -> books.Book | None:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine)() as session:
                return await books.load(session, org, version=version)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_a_private_quote_prices_its_organisations_answers_only_and_replays(db: str) -> None:
    with client_of(db) as acme, client_of(db, org="other") as other, client_of(db, org=None) as nobody:
        listed = nobody.post(COMPARE, json=REQUEST)
        assert listed.status_code == 200, listed.text
        assert (_offer(listed.json())["price_book"], _offer(listed.json())["subject"]) == ("list", "p5.48xlarge")
        assert acme.post(PRICES, json={"prices": [QUOTE]}).status_code == 201
        mine = acme.post(COMPARE, json=REQUEST)
        assert mine.status_code == 200, mine.text
        assert mine.json()["knowledge_version"] == listed.json()["knowledge_version"] + "+org:acme.1"
        offer = _offer(mine.json())
        assert (offer["price_book"], offer["subject"], offer["price"]["expected"]) == ("org", "p5.48xlarge", 41.5)
        # everyone else: the list's answer, unchanged
        assert other.post(COMPARE, json=REQUEST).content == listed.content
        assert nobody.post(COMPARE, json=REQUEST).content == listed.content
        # closed from its first day on (book version 2): the list prices acme's answers again
        row_id = listing(acme)["items"][0]["id"]
        assert acme.delete(f"{PRICES}/{row_id}", params={"on": QUOTE["valid_from"]}).status_code == 200
        now = acme.post(COMPARE, json=REQUEST).json()
        assert now["knowledge_version"].endswith("+org:acme.2") and _offer(now)["price_book"] == "list"
        # the stored answer, replayed on the book of its version
        decisions = DecisionService(acme.app.state.advisor)
        book = _load_book(db, "acme", 1)
        with decisions.advisor.priced_with(book):
            replayed = decisions.compare(ComparisonCreate.model_validate(REQUEST))
        assert msgspec.json.encode(replayed) == mine.content


def test_a_private_row_of_an_offer_the_list_lacks_adds_it(db: str) -> None:
    with client_of(db) as acme, client_of(db, org="other") as other:
        listed = other.post(COMPARE, json=REQUEST).json()
        cluster = quote(subject="p5.48xlarge reserved cluster (Acme)", low=30, high=34)
        assert acme.post(PRICES, json={"prices": [cluster]}).status_code == 201
        offer = _offer(acme.post(COMPARE, json=REQUEST).json())
        assert (offer["price_book"], offer["subject"]) == ("org", cluster["subject"])
        assert json.loads(other.post(COMPARE, json=REQUEST).content) == listed


def test_an_upload_costs_a_unit_per_ten_rows() -> None:
    assert [upload_cost({"prices": [QUOTE] * n}) for n in (1, 10, 500, 5_000)] == [1, 2, 51, 51]
    assert upload_cost(None) == SHEET_UNITS == 51  # a CSV file or a workbook: its rows are not counted before
    assert upload_cost([1, 2]) == upload_cost({"prices": "x"}) == 1
