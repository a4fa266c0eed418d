"""Watch deliveries end to end, on SQLite and PostgreSQL: a private-book change makes one signed event per
watch and version, retried with backoff until a 2xx (``failed`` once the schedule is spent), checked against
the allow-list again at each delivery; one delivery per event with two app instances on one PostgreSQL
database, both dispatchers running; and a delivery in flight when its process stops is sent again, with the
same delivery id, by another instance once its lease ends.

Receivers are HTTP servers of the test (``Receiver``); events are triggered by a change of the organisation's
book (``quote``). Waits have deadlines; no duration is asserted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from conftest import Databases, create_key, require_backend
from litestar.testing import TestClient
from test_watches import SECRET, Receiver, client, quote, recommend, scalar, watch

from app.domain.procurement import watch_delivery

T = TypeVar("T")


@pytest.fixture
def db(databases: Databases, backend: str) -> str:
    return databases.seeded(backend)


@pytest.fixture
def key(db: str) -> str:
    return create_key(db, ["recommendations:write"], org="acme")[1]


def until(what: str, found: Callable[[], T | None], deadline: float = 60.0) -> T:
    """``found()`` once it is truthy, or a failure after ``deadline`` seconds."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = found()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"{what}: not within {deadline} s")


def deliveries(c: TestClient, watch_id: str) -> list[dict[str, Any]]:  # type: ignore[type-arg]
    r = c.get(f"/v1/watches/{watch_id}/deliveries")
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def settled(c: TestClient, watch_id: str, status: str) -> Callable[[], dict[str, Any] | None]:  # type: ignore[type-arg]
    def check() -> dict[str, Any] | None:
        found = deliveries(c, watch_id)
        return found[0] if found and found[0]["status"] == status else None

    return check


def test_a_book_change_sends_one_signed_event_retried_until_delivered(db: str, key: str) -> None:
    receiver = Receiver([500, 500, 200])
    try:
        with client(db, key) as c:
            rec_id = recommend(c)
            made = watch(c, rec_id, receiver.url)
            quote(db, "acme", 1.5)  # the rented offer's price rises by half
            done = until("delivered", settled(c, made["id"], "delivered"))
            assert done["attempts"] == 3 and done["last_status"] == 200 and done["last_error"] is None
            assert [a.get("status") for a in done["history"]] == [500, 500, 200]
            assert done["delivered_at"] is not None
            checked = c.get(f"/v1/watches/{made['id']}").json()["checked_version"]
        assert len(receiver.requests) == 3
        bodies = {body for _, body in receiver.requests}
        assert len(bodies) == 1  # serialised once: every attempt sends the same bytes
        for headers, body in receiver.requests:
            expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            assert hmac.compare_digest(headers["x-compute-advisor-signature"], expected)
            assert headers["x-compute-advisor-delivery"] == str(done["id"])
            assert headers["x-compute-advisor-event"] == "recommendation.drift"
            assert headers["content-type"] == "application/json"
        event = json.loads(bodies.pop())
        assert set(event) == {"event", "watch_id", "recommendation_id", "knowledge_version", "drift"}
        assert (event["event"], event["watch_id"], event["recommendation_id"]) == (
            "recommendation.drift",
            made["id"],
            rec_id,
        )
        assert event["knowledge_version"] == done["event"] == checked
        assert checked.endswith("+org:acme.1")
        drift = event["drift"]
        assert drift["recommendation_id"] == rec_id and drift["now"]["knowledge_version"] == checked
        assert drift["cost_changes"]["rented_gpu_instances"]["change"] > 0.05
    finally:
        receiver.close()


def test_a_delivery_is_failed_once_its_retries_are_spent(db: str, key: str) -> None:
    receiver = Receiver([500])
    try:
        with client(db, key) as c:
            made = watch(c, recommend(c), receiver.url)
            quote(db, "acme", 0.5)
            done = until("failed", settled(c, made["id"], "failed"))
        assert done["attempts"] == 6 and len(done["history"]) == 6  # one try and five retries
        assert done["last_status"] == 500 and "500" in done["last_error"]
        assert len(receiver.requests) == 6
    finally:
        receiver.close()


def test_a_change_that_moves_nothing_records_the_check_and_sends_nothing(db: str, key: str) -> None:
    receiver = Receiver()
    try:
        with client(db, key) as c:
            rec_id = recommend(c)
            made = watch(c, rec_id, receiver.url)
            deleted = watch(c, rec_id, receiver.url, min_cost_change=0)
            assert c.delete(f"/v1/watches/{deleted['id']}").status_code == 204
            # a quote for an offer this recommendation does not use: a new book version, no drift
            quote(db, "acme", 0.5, provider="aws", subject="p5.48xlarge", plan="on_demand", region="us-east-1")

            def checked() -> str | None:
                version = str(c.get(f"/v1/watches/{made['id']}").json()["checked_version"])
                return version if version.endswith("+org:acme.1") else None

            until("checked on the new book", checked)
            quote(db, "acme", 1.5)  # then a change that moves it: the live watch's event only
            until("delivered", settled(c, made["id"], "delivered"))
            (event,) = [d["event"] for d in deliveries(c, made["id"])]
            assert event.endswith("+org:acme.2")
        sql = "SELECT count(*) FROM watch_deliveries WHERE watch_id = :w"
        assert scalar(db, sql, w=deleted["id"]) == 0
        assert len(receiver.requests) == 1
    finally:
        receiver.close()


def test_the_address_is_checked_again_at_each_delivery(db: str, key: str) -> None:
    receiver = Receiver()
    try:
        with client(db, key) as c:
            made = watch(c, recommend(c), receiver.url)  # 127.0.0.1 allowed when it was made
        quote(db, "acme", 1.5)
        with client(db, key, hosts=("10.0.0.0/8",)) as c:  # and no more
            refused = until("refused", lambda: (d := deliveries(c, made["id"])) and d[0]["attempts"] >= 1 and d[0])
        assert refused["last_error"].startswith("refused: 127.0.0.1 is not in WATCH_ALLOWED_HOSTS")
        assert refused["last_status"] is None and refused["history"][0]["error"] == refused["last_error"]
        assert receiver.requests == []
    finally:
        receiver.close()


def test_one_delivery_per_event_with_two_app_instances(databases: Databases) -> None:
    require_backend("postgresql")
    db = databases.seeded("postgresql")
    key = create_key(db, ["recommendations:write"], org="acme")[1]
    receiver = Receiver()
    try:
        with client(db, key, watch_poll_seconds=0.05) as a, client(db, key, watch_poll_seconds=0.05) as b:
            recs = [recommend(a), recommend(b)]
            made = [watch((a, b)[i % 2], recs[i % 2], receiver.url) for i in range(6)]
            quote(db, "acme", 1.5)
            # besides both dispatchers' own loops, each instance checks the watches again and again at once
            barrier = threading.Barrier(2)
            recorded: dict[str, int] = {"a": 0, "b": 0}

            def hammer(app: TestClient, name: str) -> None:  # type: ignore[type-arg]
                barrier.wait()
                for _ in range(5):
                    recorded[name] += app.blocking_portal.call(app.app.state.watches.check_watches)

            threads = [threading.Thread(target=hammer, args=(x, n)) for x, n in ((a, "a"), (b, "b"))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for w in made:
                until(f"watch {w['id']} delivered", settled(a, w["id"], "delivered"))
            every = [d for w in made for d in deliveries(b, w["id"])]
        assert len(every) == 6 and all(d["attempts"] == 1 for d in every)
        assert scalar(db, "SELECT count(*) FROM watch_deliveries") == 6
        sent = [h["x-compute-advisor-delivery"] for h, _ in receiver.requests]
        assert sorted(sent) == sorted(str(d["id"]) for d in every)  # each delivery sent once
        assert sum(recorded.values()) <= 6  # the checks these calls won (the rest: the instances' own loops)
        print(f"\nchecks recorded by the concurrent calls: {recorded}")
    finally:
        receiver.close()


def test_a_delivery_in_flight_when_its_process_stops_is_sent_again_after_its_lease(
    db: str, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch_delivery, "LEASE_MARGIN_SECONDS", 1.0)  # a lease of the timeout + 1 s
    receiver = Receiver(["hang", 200])  # the first attempt is never answered
    try:
        with client(db, key, watch_timeout_seconds=5.0) as a:
            made = watch(a, recommend(a), receiver.url)
            quote(db, "acme", 1.5)
            until("the first attempt", lambda: receiver.requests)
        # stopped mid-delivery: the delivery is still claimed by the stopped instance, nothing recorded
        held = "SELECT count(*) FROM watch_deliveries WHERE claimed_by IS NOT NULL AND attempts = 0"
        assert scalar(db, held) == 1
        with client(db, key, watch_timeout_seconds=5.0) as b:
            done = until("delivered by the new instance", settled(b, made["id"], "delivered"))
        assert done["attempts"] == 1 and [a["status"] for a in done["history"]] == [200]
        assert scalar(db, "SELECT count(*) FROM watch_deliveries WHERE status = 'delivered'") == 1
        assert scalar(db, "SELECT count(*) FROM watch_deliveries") == 1
        ids = [h["x-compute-advisor-delivery"] for h, _ in receiver.requests]
        assert ids == [str(done["id"])] * 2  # the receiver sees the same delivery id again: it deduplicates
    finally:
        receiver.close()
