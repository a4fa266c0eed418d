"""Watches through the API, on SQLite and PostgreSQL: made, read, listed and deleted by the keys that may see
them (another organisation's answers 404), bad input refused with 422 naming the field — a short secret, a
URL outside ``WATCH_ALLOWED_HOSTS``, a link-local or metadata address even with ``*``, a recommendation of
another organisation — the allow-list itself, and ``recommendations prune`` taking watches and deliveries
with the recommendations it deletes. Deliveries: tests/test_watch_delivery.py (the helpers here are its too).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import http.server
import ipaddress
import threading
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import pytest
from conftest import SME_PROFILE, Databases, create_key, free_port, make_client
from litestar.testing import TestClient
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.domain.procurement.watch_hosts import AllowList, Refused
from app.domain.procurement.watches_dispatch import behind
from app.kb import models as m
from app.kb import recommendations as rec_store
from app.kb import service_records as sr
from app.settings import Settings

PROBLEM_JSON = "application/problem+json"
SECRET = "a-secret-of-32-characters-......"
#: the article's profile on a fixed day: its rented option is priced by one list row (cloud, article_8gpu, CN)
PROFILE = {**SME_PROFILE, "as_of": "2026-12-01"}
RENTED = {"option": "rented_gpu_instances", "provider": "cloud", "subject": "article_8gpu", "region": "CN"}


# ---- helpers (tests/test_watch_delivery.py uses them too) -------------------------------------------------


def settings(url: str, hosts: Sequence[str] = ("127.0.0.1",), **more: Any) -> Settings:
    """A test app's settings: watches to this host, looked for every 0.1 s, retried within 1.6 s."""
    values: dict[str, Any] = {
        "database_url": url,
        "knowledge_refresh_seconds": 0.2,
        "rate_limit": None,
        "gc_freeze": False,
        "watch_allowed_hosts": tuple(hosts),
        "watch_poll_seconds": 0.1,
        "watch_timeout_seconds": 5.0,
        "watch_retry_seconds": (0.05, 0.1, 0.2, 0.4, 0.8),
    }
    return Settings(**(values | more))


def client(url: str, key: str, **more: Any) -> TestClient:  # type: ignore[type-arg]
    return make_client(url, api_key=key, settings=settings(url, **more))


def run_sql(url: str, work: Any) -> Any:
    """``await work(session)`` in one transaction on the database at ``url``."""

    async def go() -> Any:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                return await work(session)
        finally:
            await engine.dispose()

    return asyncio.run(go())


def quote(url: str, org: str, factor: float, **where: str) -> int:
    """The organisation is quoted the list rows matching ``where`` (default: the article's rented offer) at
    ``factor`` times their price: rows added to its book in a new version, as POST /v1/price-books/prices
    would. Returns the book's new version."""
    where = where or RENTED
    columns = [c.key for c in m.PriceItem.__table__.columns if c.key != "id"]

    async def work(session: Any) -> int:
        organisation = await session.get(sr.Organisation, org)
        version = organisation.book_version + 1
        rows = (await session.scalars(select(m.PriceItem).filter_by(**where))).all()
        assert rows, where
        for row in rows:
            values = {c: getattr(row, c) for c in columns}
            for c in ("low", "expected", "high"):
                if values[c] is not None:
                    values[c] = values[c] * Decimal(str(factor))
            session.add(
                sr.OrgPrice(
                    **values,
                    org=org,
                    added_in=version,
                    created_at=dt.datetime.now(dt.UTC),
                    created_by="tests",
                )
            )
        organisation.book_version = version
        return int(version)

    return int(run_sql(url, work))


def scalar(url: str, sql: str, **params: Any) -> Any:
    async def work(session: Any) -> Any:
        return await session.scalar(text(sql), params)

    return run_sql(url, work)


def problem(r: Any, field: str, status: int = 422) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    body = dict(r.json())
    assert body["field"] == field, body
    return body


def recommend(c: TestClient) -> str:  # type: ignore[type-arg]
    r = c.post("/v1/recommendations", json=PROFILE)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def watch(c: TestClient, rec_id: str, url: str, **more: Any) -> dict[str, Any]:  # type: ignore[type-arg]
    r = c.post("/v1/watches", json={"recommendation_id": rec_id, "url": url, "secret": SECRET, **more})
    assert r.status_code == 201, r.text
    return dict(r.json())


class Receiver:
    """An HTTP server on a free port of 127.0.0.1 that records each POST (headers, raw body) and answers
    ``answers`` in turn (the last one from then on); ``"hang"`` holds the answer until ``close()``."""

    def __init__(self, answers: Sequence[int | str] = (200,)) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.released = threading.Event()
        lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    answer = receiver.answers[min(len(receiver.requests), len(receiver.answers)) - 1]
                if answer == "hang":
                    receiver.released.wait(60)
                    answer = 200
                try:
                    self.send_response(int(answer))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender is gone

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/compute-advisor"

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


@pytest.fixture
def db(databases: Databases, backend: str) -> str:
    """A seeded database of the test's own (watches write)."""
    return databases.seeded(backend)


# ---- the API ---------------------------------------------------------------------------------------------


def test_a_watch_is_made_read_listed_and_deleted_never_showing_its_secret(db: str, receiver: Receiver) -> None:
    key = create_key(db, ["recommendations:write"], org="acme")[1]
    with client(db, key) as c:
        rec_id = recommend(c)
        made = watch(c, rec_id, receiver.url, min_cost_change=0.1, on_rank_change=False)
        assert set(made) == {
            "id",
            "recommendation_id",
            "url",
            "min_cost_change",
            "on_rank_change",
            "created_at",
            "checked_version",
            "org",
        }
        assert (made["recommendation_id"], made["url"], made["org"]) == (rec_id, receiver.url, "acme")
        assert (made["min_cost_change"], made["on_rank_change"]) == (0.1, False)
        assert made["checked_version"].startswith("kv")  # checked as of now: events are of later changes
        defaults = watch(c, rec_id, receiver.url)
        assert (defaults["min_cost_change"], defaults["on_rank_change"]) == (0.05, True)
        assert c.get(f"/v1/watches/{made['id']}").json() == made
        listed = c.get("/v1/watches", params={"limit": 1}).json()
        assert (listed["total"], listed["limit"], listed["offset"], len(listed["items"])) == (2, 1, 0, 1)
        assert c.get(f"/v1/watches/{made['id']}/deliveries").json() == {
            "total": 0,
            "limit": 100,
            "offset": 0,
            "items": [],
        }
        assert c.delete(f"/v1/watches/{made['id']}").status_code == 204
        assert c.get(f"/v1/watches/{made['id']}").status_code == 404
        assert c.delete(f"/v1/watches/{made['id']}").status_code == 404
        assert [w["id"] for w in c.get("/v1/watches").json()["items"]] == [defaults["id"]]
    actions = ["watch.create", "watch.create", "watch.delete"]
    sql = "SELECT count(*) FROM audit_events WHERE action LIKE 'watch.%'"
    assert scalar(db, sql) == len(actions)
    assert scalar(db, "SELECT count(*) FROM audit_events WHERE CAST(detail AS TEXT) LIKE :s", s=f"%{SECRET}%") == 0
    assert scalar(db, "SELECT count(*) FROM watches WHERE deleted_at IS NOT NULL") == 1  # kept, for the record


BAD_INPUT: list[tuple[dict[str, Any], str]] = [
    ({"secret": "fifteen-chars.."}, "secret"),
    ({"secret": "x" * 201}, "secret"),
    ({"min_cost_change": -0.01}, "min_cost_change"),
    ({"min_cost_change": 10.5}, "min_cost_change"),
    ({"url": "ftp://127.0.0.1/hook"}, "url"),
    ({"url": "not a url"}, "url"),
    ({"url": "http://10.1.2.3/hook"}, "url"),  # outside the allow-list
    ({"url": "http://[::1]:8080/hook"}, "url"),
    ({"recommendation_id": "00000000-0000-0000-0000-000000000000"}, "recommendation_id"),
]


def test_bad_input_is_422_naming_the_field(db: str) -> None:
    key = create_key(db, ["recommendations:write"], org="acme")[1]
    with client(db, key) as c:
        good = {"recommendation_id": recommend(c), "url": "http://127.0.0.1:9/hook", "secret": SECRET}
        for body, field in BAD_INPUT:
            problem(c.post("/v1/watches", json={**good, **body}), field)
        # a value of the wrong type is refused by the schema, as everywhere (400)
        problem(c.post("/v1/watches", json={**good, "on_rank_change": "yes"}), "on_rank_change", 400)
        assert c.get("/v1/watches").json()["total"] == 0


def test_another_organisations_recommendation_is_422_and_its_watches_404(db: str) -> None:
    acme = create_key(db, ["recommendations:write"], org="acme")[1]
    globex = create_key(db, ["recommendations:write"], org="globex")[1]
    alone = create_key(db, ["recommendations:write"], name="no organisation")[1]
    with client(db, acme) as a, client(db, globex) as g, client(db, alone) as n:
        mine = recommend(a)
        theirs = recommend(g)
        body = problem(
            a.post("/v1/watches", json={"recommendation_id": theirs, "url": "http://127.0.0.1:9/", "secret": SECRET}),
            "recommendation_id",
        )
        assert body["detail"] == f"no recommendation '{theirs}'"
        watched = watch(a, mine, "http://127.0.0.1:9/")
        second_key = create_key(db, ["recommendations:write"], name="acme's other key", org="acme")[1]
        with client(db, second_key) as a2:  # a key of the same organisation sees it
            assert a2.get(f"/v1/watches/{watched['id']}").status_code == 200
        for other in (g, n):
            for path in (f"/v1/watches/{watched['id']}", f"/v1/watches/{watched['id']}/deliveries"):
                assert other.get(path).status_code == 404, path
            assert other.delete(f"/v1/watches/{watched['id']}").status_code == 404
            assert other.get("/v1/watches").json()["total"] == 0
        own = watch(n, recommend(n), "http://127.0.0.1:9/")
        assert own["org"] is None
        assert [w["id"] for w in n.get("/v1/watches").json()["items"]] == [own["id"]]
        assert a.get(f"/v1/watches/{own['id']}").status_code == 404
    with make_client(db) as admin:  # an admin key sees every one
        assert admin.get("/v1/watches").json()["total"] == 2


REFUSED_WITH_A_STAR = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://169.254.10.20/hook",
    "http://[fe80::1]/hook",
    "http://[::ffff:169.254.169.254]/hook",
    "http://127.0.0.1/hook",  # not a public address: * does not cover it
    "http://10.0.0.1/hook",
]


def test_link_local_metadata_and_private_addresses_are_refused_even_with_a_star(db: str) -> None:
    key = create_key(db, ["recommendations:write"], org="acme")[1]
    with client(db, key, hosts=("*",)) as c:
        rec_id = recommend(c)
        for url in REFUSED_WITH_A_STAR:
            problem(c.post("/v1/watches", json={"recommendation_id": rec_id, "url": url, "secret": SECRET}), "url")


def test_without_an_allow_list_every_watch_is_refused_naming_the_setting(db: str) -> None:
    key = create_key(db, ["recommendations:write"], org="acme")[1]
    with client(db, key, hosts=()) as c:
        body = {"recommendation_id": recommend(c), "url": "http://127.0.0.1:9/", "secret": SECRET}
        assert "WATCH_ALLOWED_HOSTS" in problem(c.post("/v1/watches", json=body), "url")["detail"]


# ---- the allow-list ----------------------------------------------------------------------------------------

ip = ipaddress.ip_address


def test_the_allow_list_reads_names_addresses_networks_and_a_star() -> None:
    allow = AllowList.parse(["Hooks.Example.COM.", "10.20.0.0/16", "127.0.0.1", " ", "*"])
    assert allow.names == {"hooks.example.com"} and allow.public
    assert allow.exact == {ip("127.0.0.1")}
    assert allow.address_refusal("hooks.example.com", ip("192.168.1.1")) is None  # a listed name: its addresses
    assert allow.address_refusal("x.example.com", ip("10.20.3.4")) is None
    assert allow.address_refusal("x.example.com", ip("8.8.8.8")) is None  # * : a public address
    assert allow.address_refusal("x.example.com", ip("192.168.1.1")) is not None
    assert AllowList.parse([]).empty
    for bad in ("10.0.0.0/33", "300.1.1.1", "hooks example", "fe80::/129"):
        with pytest.raises(ValueError, match="WATCH_ALLOWED_HOSTS"):
            AllowList.parse([bad])


def test_link_local_and_metadata_addresses_need_their_exact_address_listed() -> None:
    wide = AllowList.parse(["169.254.0.0/16", "fe80::/10", "metadata.google.internal", "*"])
    for address in ("169.254.169.254", "169.254.1.1", "fe80::1", "fd00:ec2::254", "::ffff:169.254.169.254"):
        assert wide.address_refusal("metadata.google.internal", ip(address)) is not None, address
    assert wide.name_refusal("metadata.google.internal") is not None
    exact = AllowList.parse(["169.254.169.254"])
    assert exact.address_refusal("169.254.169.254", ip("169.254.169.254")) is None
    assert exact.address_refusal("169.254.169.253", ip("169.254.169.253")) is not None


def test_a_name_is_checked_by_what_it_resolves_to() -> None:
    loopback = AllowList.parse(["127.0.0.0/8", "::1"])
    asyncio.run(loopback.check_new("127.0.0.1", 80))
    asyncio.run(loopback.check_new("localhost", 80))  # not listed by name: its addresses are
    with pytest.raises(Refused, match="not in WATCH_ALLOWED_HOSTS"):
        asyncio.run(AllowList.parse(["10.0.0.0/8"]).check_new("localhost", 80))
    with pytest.raises(Refused, match="does not resolve"):
        asyncio.run(loopback.check_new("no-such-host.invalid", 80))


def test_a_watch_is_never_moved_back_to_an_older_version() -> None:
    assert behind("kv3-abc", "kv3-abc+org:acme.1")  # a replica that has not seen the book's change yet
    assert behind("kv2-def+org:acme.4", "kv3-abc+org:acme.4")  # nor the new knowledge version
    assert not behind("kv3-abc+org:acme.1", "kv3-abc")
    assert not behind("kv4-def+org:acme.1", "kv3-abc+org:acme.1")
    assert behind("kv4-def", "kv3-abc+org:acme.1")  # a newer list, but the book not seen yet
    assert not behind("kv1-abc", None)


# ---- retention ------------------------------------------------------------------------------------------


def test_prune_deletes_the_watches_and_deliveries_of_the_recommendations_it_deletes(db: str) -> None:
    key = create_key(db, ["recommendations:write"], org="acme")[1]
    with client(db, key) as c:
        old, kept = recommend(c), recommend(c)
        for rec_id in (old, old, kept):
            watch(c, rec_id, "http://127.0.0.1:9/")
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=400)

    async def age_and_deliver(session: Any) -> None:
        await session.execute(
            sr.Recommendation.__table__.update().where(sr.Recommendation.id == old).values(created_at=long_ago)
        )
        for (watch_id,) in (await session.execute(select(sr.Watch.id))).all():
            now = dt.datetime.now(dt.UTC)
            session.add(
                sr.WatchDelivery(watch_id=watch_id, event="kv1-x", body="{}", next_attempt_at=now, created_at=now)
            )

    run_sql(db, age_and_deliver)

    async def prune(session: Any) -> rec_store.Pruned:
        return await rec_store.prune(session, days=30, now=dt.datetime.now(dt.UTC), actor="tests")

    assert run_sql(db, prune).recommendations == 1

    async def left(session: Any) -> tuple[int, int, list[str]]:
        watches = (await session.execute(select(sr.Watch.recommendation_id))).scalars().all()
        deliveries = await session.scalar(select(func.count()).select_from(sr.WatchDelivery))
        recs = await session.scalar(select(func.count()).select_from(sr.Recommendation))
        return recs, deliveries, watches

    assert run_sql(db, left) == (1, 1, [kept])

    async def audited(session: Any) -> Any:
        return await session.scalar(select(sr.AuditEvent.detail).where(sr.AuditEvent.action == "recommendations.prune"))

    assert run_sql(db, audited)["watches"] == 2
