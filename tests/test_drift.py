"""Drift of a stored recommendation (issue 37, part 3): GET /v1/recommendations/{id}/drift prices the stored
request again on the knowledge of now and its organisation's private book, beside the stored answer; GET
/v1/recommendations lists the recommendations a key may read.

The private quote used here prices the offer the stored answer rented (Nebius HGX H100 on demand, 3.85 USD per
GPU-hour on the list, seeds/42-offers-gpu-clouds.yaml) at half the list's price. The rented option's total is
its GPU-hours at that price plus its storage (unchanged), so its expected total falls by exactly half of its
instance-hour line: 64 GPUs × 8,760 hours × (3.85 − 1.925) USD = 1,079,232 USD."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import datetime as dt
import io
import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from conftest import Databases, admin_key, create_key, make_client
from litestar import Litestar
from litestar.testing import TestClient
from seed_snapshot import knowledge_from_seeds
from sqlalchemy import update
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.domain.decisions.service import DecisionService
from app.domain.procurement import drift_controller
from app.domain.procurement.drift import NotRepriceable, drift, event_worthy
from app.domain.procurement.drift_schemas import CostChangeRead, DriftRead, DriftSideRead, RankChangeRead
from app.domain.shared.advisor import Advisor
from app.domain.shared.demand import RecommendationCreate
from app.host.manager import create_option_host
from app.kb import service_records as sr
from app.kb.books import Books, book_of
from app.openapi.document import ALTERNATIVE_MEDIA
from app.settings import Settings

AS_OF = "2026-12-01"
BODY: dict[str, Any] = {
    "team_size": 20,
    "gpus": 64,
    "utilization": 0.5,
    "horizon_years": 1,
    "currency": "USD",
    "gpu_model": "h100_sxm",
    "as_of": AS_OF,
}
RENTED, PLATFORM = "rented_gpu_instances", "ai_compute_platform"
LIST_PRICE, QUOTE = 3.85, 1.925
GPU_HOURS = 64 * 8760
SAVING = (LIST_PRICE - QUOTE) * GPU_HOURS  # 1,079,232 USD
NEBIUS = {
    "option": RENTED,
    "provider": "nebius",
    "item": "instance_hour",
    "subject": "HGX H100 (nebius.com/prices)",
    "gpu_model": "h100_sxm",
    "plan": "on_demand",
    "unit": "per_gpu_hour",
    "gpus_per_unit": None,
    "currency": "USD",
    "region": "global",
    "residency": "public_multi_tenant",
    "interconnect": "infiniband",
}
Client = TestClient[Litestar]


# ---- the database, as another process (the price book's endpoints, an operator) would change it -------------


def _run(url: str, work: Any) -> Any:
    async def go() -> Any:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with async_sessionmaker(engine, expire_on_commit=False)() as session, session.begin():
                return await work(session)
        finally:
            await engine.dispose()

    return asyncio.run(go())


def add_quote(url: str, org: str, price: float) -> None:
    """A private row for ``org`` pricing the Nebius offer at ``price``, in its book's next version."""

    async def work(session: Any) -> None:
        version = (await session.get(sr.Organisation, org)).book_version + 1
        session.add(
            sr.OrgPrice(
                **NEBIUS,
                low=Decimal(str(price)),
                expected=None,
                high=Decimal(str(price)),
                regions=None,
                valid_from=dt.date(2026, 11, 1),
                valid_to=None,
                source="Acme's negotiated Nebius quote (private)",
                source_quality="verified",
                org=org,
                added_in=version,
                created_at=dt.datetime.now(dt.UTC),
                created_by="tests",
            )
        )
        await session.execute(update(sr.Organisation).where(sr.Organisation.key == org).values(book_version=version))

    _run(url, work)


def set_request(url: str, rec_id: str, **fields: Any) -> None:
    async def work(session: Any) -> None:
        row = await session.get(sr.Recommendation, rec_id)
        row.request = {**row.request, **fields}

    _run(url, work)


def set_created_at(url: str, rec_id: str, at: dt.datetime) -> None:
    async def work(session: Any) -> None:
        await session.execute(update(sr.Recommendation).where(sr.Recommendation.id == rec_id).values(created_at=at))

    _run(url, work)


# ---- fixtures ----------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class World:
    url: str
    acme: str
    globex: str
    loner: str
    admin: str

    def client(self, key: str) -> Client:
        return make_client(self.url, api_key=key)


@pytest.fixture
def world(databases: Databases, backend: str) -> World:
    url = databases.seeded(backend)
    scopes = ["recommendations:write"]
    return World(
        url=url,
        acme=create_key(url, scopes, name="acme", org="acme")[1],
        globex=create_key(url, scopes, name="globex", org="globex")[1],
        loner=create_key(url, scopes, name="loner")[1],
        admin=admin_key(url),
    )


@pytest.fixture
def acme(world: World) -> Iterator[Client]:
    with world.client(world.acme) as c:
        yield c


def store(client: Client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    created = client.post("/v1/recommendations", json=body or BODY)
    assert created.status_code == 201, created.text
    return dict(created.json())


def drift_of(client: Client, rec_id: str) -> dict[str, Any]:
    answer = client.get(f"/v1/recommendations/{rec_id}/drift")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _entry(doc: dict[str, Any], option: str) -> dict[str, Any]:
    return next(e for e in doc["ranking"] if e["option"] == option)


# ---- the endpoint ------------------------------------------------------------------------------------------------


def test_no_drift_right_after_storing(world: World, acme: Client) -> None:
    stored = store(acme)
    d = drift_of(acme, stored["id"])
    assert d["recommendation_id"] == stored["id"]
    assert d["changed"] is False
    assert d["rank_changes"] == [] and d["offers_gone"] == []
    assert {o: c["change"] for o, c in d["cost_changes"].items()} == dict.fromkeys(d["cost_changes"], 0.0)
    assert d["stored"] == d["now"]
    assert d["stored"]["knowledge_version"] == stored["knowledge_version"]
    assert "+org:" not in d["now"]["knowledge_version"]  # acme has no private row yet
    assert d["stored"]["recommended_option"] == stored["recommended_option"] == PLATFORM
    assert d["stored"]["as_of"] == AS_OF and d["currency"] == "USD"
    for e in stored["ranking"]:
        assert d["stored"]["costs"][e["option"]] == e["cost"]["total_cost"]
        assert d["stored"]["ranks"][e["option"]] == e["rank"]


def test_a_private_quote_shows_as_drift_with_the_hand_computed_change(world: World, acme: Client) -> None:
    stored = store(acme)
    rented = _entry(stored, RENTED)
    assert rented["offer"]["subject"] == NEBIUS["subject"]
    assert rented["offer"]["price"]["expected"] == LIST_PRICE and rented["rank"] == 3
    add_quote(world.url, "acme", QUOTE)
    acme.app.state.books.forget("acme")  # as the price book's endpoints do after a change
    d = drift_of(acme, stored["id"])
    assert d["changed"] is True
    assert d["stored"]["knowledge_version"] == stored["knowledge_version"]
    assert d["now"]["knowledge_version"] == f"{stored['knowledge_version']}+org:acme.1"
    before = rented["cost"]["total_cost"]["expected"]
    cost = d["cost_changes"][RENTED]
    assert cost["stored"] == before
    assert cost["now"] == pytest.approx(before - SAVING, abs=0.01)
    assert cost["change"] == pytest.approx(-SAVING / before, abs=1e-6)
    assert cost["change"] == round((cost["now"] - cost["stored"]) / cost["stored"], 6)
    assert d["cost_changes"][PLATFORM]["change"] == 0.0  # a platform is priced on its own rows
    # the quote makes renting the cheapest: it is recommended now
    assert (d["stored"]["recommended_option"], d["now"]["recommended_option"]) == (PLATFORM, RENTED)
    moved = {r["option"]: (r["stored_rank"], r["now_rank"]) for r in d["rank_changes"]}
    assert moved[RENTED] == (3, 1) and moved[PLATFORM] == (1, 2)
    # the same offer, priced by the organisation's book: not gone
    assert d["offers_gone"] == []
    # the stored answer itself is untouched (replayable at the version it names)
    again = acme.get(f"/v1/recommendations/{stored['id']}").json()
    assert again == stored


def test_drift_as_csv(world: World, acme: Client) -> None:
    if "getRecommendationDrift" not in ALTERNATIVE_MEDIA:
        pytest.fail("app/openapi/document.py ALTERNATIVE_MEDIA lacks getRecommendationDrift's text/csv")
    stored = store(acme)
    add_quote(world.url, "acme", QUOTE)
    acme.app.state.books.forget("acme")
    answer = acme.get(f"/v1/recommendations/{stored['id']}/drift", headers={"Accept": "text/csv"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    assert "recommendation-drift_" in answer.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.content.decode("utf-8-sig"))))
    by_option = {r["option"]: r for r in rows}
    assert set(by_option) == {e["option"] for e in stored["ranking"]}
    r = by_option[RENTED]
    assert (r["stored_recommended"], r["now_recommended"], r["stored_rank"], r["now_rank"]) == (
        "False",
        "True",
        "3",
        "1",
    )
    assert float(r["stored_total_cost_expected_usd"]) == _entry(stored, RENTED)["cost"]["total_cost"]["expected"]
    assert float(r["change"]) == pytest.approx(-SAVING / float(r["stored_total_cost_expected_usd"]), abs=1e-6)
    assert r["now_knowledge_version"].endswith("+org:acme.1")


def test_another_organisations_or_a_missing_recommendation_is_not_found(world: World, acme: Client) -> None:
    rec_id = store(acme)["id"]
    for key in (world.globex, world.loner):
        with world.client(key) as other:
            answer = other.get(f"/v1/recommendations/{rec_id}/drift")
            assert answer.status_code == 404, answer.text
            assert answer.headers["content-type"].startswith("application/problem+json")
    missing = acme.get("/v1/recommendations/00000000-0000-0000-0000-000000000000/drift")
    assert missing.status_code == 404
    # an admin key reads it, priced on the organisation's book (not the admin's, which has none)
    add_quote(world.url, "acme", QUOTE)
    with world.client(world.admin) as admin:
        d = drift_of(admin, rec_id)
    assert d["now"]["knowledge_version"].endswith("+org:acme.1") and d["now"]["recommended_option"] == RENTED


def test_a_keys_own_recommendation_outside_any_organisation(world: World) -> None:
    with world.client(world.loner) as loner:
        rec_id = store(loner)["id"]
        assert drift_of(loner, rec_id)["changed"] is False
    with world.client(world.acme) as acme:
        assert acme.get(f"/v1/recommendations/{rec_id}/drift").status_code == 404


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"gpu_model": "h999_retired"}, "gpu_model", "unknown GPU model 'h999_retired'"),
        ({"retired_field": 1}, "retired_field", "no longer validates"),
    ],
)
def test_a_stored_request_that_no_longer_validates_is_a_409(
    world: World, acme: Client, fields: dict[str, Any], field: str, words: str
) -> None:
    rec_id = store(acme)["id"]
    set_request(world.url, rec_id, **fields)  # as a knowledge base without that GPU model, a service without the field
    answer = acme.get(f"/v1/recommendations/{rec_id}/drift")
    assert answer.status_code == 409, answer.text
    problem = answer.json()
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert problem["type"] == "urn:compute-advisor:problem:conflict"
    assert problem["field"] == field and words in problem["detail"]
    zh = acme.get(f"/v1/recommendations/{rec_id}/drift", headers={"Accept-Language": "zh"})
    assert zh.status_code == 409 and "已保存的请求" in zh.json()["detail"]


def test_drift_is_computed_off_the_event_loop(world: World, acme: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    rec_id = store(acme)["id"]
    threads: list[str] = []

    def watched(*args: Any, **kwargs: Any) -> DriftRead:
        threads.append(threading.current_thread().name)
        return drift(*args, **kwargs)

    monkeypatch.setattr(drift_controller, "drift", watched)
    drift_of(acme, rec_id)
    assert len(threads) == 1 and threads[0].startswith("compute")


# ---- the list ----------------------------------------------------------------------------------------------------


def test_the_list_holds_what_the_key_may_read_newest_first_paginated(world: World) -> None:
    with world.client(world.acme) as acme, world.client(world.globex) as globex, world.client(world.loner) as loner:
        mine = [store(acme, {**BODY, "gpus": 8 * (i + 1)})["id"] for i in range(3)]
        theirs = store(globex)["id"]
        own = store(loner)["id"]
        base = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
        for n, rec_id in enumerate([*mine, theirs, own]):  # one a minute: a definite order
            set_created_at(world.url, rec_id, base + dt.timedelta(minutes=n))

        page = acme.get("/v1/recommendations").json()
        assert page["total"] == 3 and (page["limit"], page["offset"]) == (100, 0)
        assert [i["id"] for i in page["items"]] == mine[::-1]
        first = page["items"][0]
        assert set(first) == {"id", "created_at", "knowledge_version", "recommended_option", "currency", "as_of",
                              "gpus", "horizon_years"}  # fmt: skip
        assert (first["currency"], first["as_of"], first["gpus"], first["horizon_years"]) == ("USD", AS_OF, 24, 1.0)
        assert first["recommended_option"] and first["created_at"].startswith("2026-12-01T12:02:00")
        # pages
        one = acme.get("/v1/recommendations", params={"limit": 2}).json()
        two = acme.get("/v1/recommendations", params={"limit": 2, "offset": 2}).json()
        assert [i["id"] for i in one["items"] + two["items"]] == mine[::-1] and one["total"] == two["total"] == 3
        assert acme.get("/v1/recommendations", params={"limit": 0}).status_code == 400
        # each key its own; an admin every one
        assert [i["id"] for i in globex.get("/v1/recommendations").json()["items"]] == [theirs]
        assert [i["id"] for i in loner.get("/v1/recommendations").json()["items"]] == [own]
    with world.client(world.admin) as admin:
        everything = admin.get("/v1/recommendations").json()
        assert everything["total"] >= 5 and {*mine, theirs, own} <= {i["id"] for i in everything["items"]}


def test_the_list_and_drift_need_the_recommendations_scope(world: World) -> None:
    reader = create_key(world.url, ["catalog:read"], name="reader", org="acme")[1]
    with world.client(reader) as c:
        assert c.get("/v1/recommendations").status_code == 403
        assert c.get("/v1/recommendations/x/drift").status_code == 403


# ---- drift itself, without a database ----------------------------------------------------------------------------


def _decisions() -> DecisionService:
    kb = knowledge_from_seeds()
    day = dt.date.fromisoformat(AS_OF)
    return DecisionService(Advisor(create_option_host(), lambda: kb, today=lambda: day, books=Books(lambda: None, 60)))  # type: ignore[arg-type, return-value]


def _stored(decisions: DecisionService, body: dict[str, Any]) -> SimpleNamespace:
    req = RecommendationCreate.model_validate_json(json.dumps(body))
    evaluation = decisions.evaluate(req, insights=True)
    return SimpleNamespace(
        id="r1",
        knowledge_version=evaluation.knowledge_version,
        request=req.model_dump(mode="json", exclude={"demand"}),
        response=json.loads(msgspec.json.encode(evaluation)),
    )


def _quote(price: float, **more: Any) -> Any:
    values = {**NEBIUS, "low": price, "expected": None, "high": price, "regions": None, "capacity_gpus": None,
              "lead_time_days_low": None, "lead_time_days_high": None, "min_gpus": None, "billing": None,
              "min_kw": None, "max_term_days": None, "source": "a quote", "source_quality": "verified",
              "retrieved_on": None, "notes": None, "closed_in": None, "closed_on": None, **more}  # fmt: skip
    return SimpleNamespace(id=1, valid_from=dt.date(2026, 11, 1), valid_to=None, added_in=1, **values)


def test_an_offer_replaced_by_another_is_gone() -> None:
    decisions = _decisions()
    row = _stored(decisions, BODY)
    # a cheaper offer of another identity (another region): the option rents it instead
    book = book_of("acme", 1, [_quote(1.0, region="eu-north1")])
    with decisions.advisor.priced_with(book):
        d = drift(decisions, row)
    (gone,) = d.offers_gone
    assert (gone.option, gone.provider, gone.region, gone.why) == (RENTED, "nebius", "global", "replaced")
    assert gone.name == _entry(row.response, RENTED)["offer"]["name"]
    assert gone.replaced_by and "eu-north1" in gone.replaced_by[0]
    assert d.changed


def test_a_request_no_option_prices_now_has_every_offer_gone() -> None:
    decisions = _decisions()
    row = _stored(decisions, BODY)
    kb = decisions.advisor.knowledge()
    bare = dataclasses.replace(kb, version="kv-bare", prices=())
    empty = DecisionService(Advisor(create_option_host(), lambda: bare, today=decisions.advisor.today))
    d = drift(empty, row)
    assert d.changed and d.now.recommended_option is None and d.now.knowledge_version == "kv-bare"
    assert set(d.now.costs.values()) == {None}
    assert {g.option for g in d.offers_gone} == {e["option"] for e in row.response["ranking"]}
    assert {g.why for g in d.offers_gone} == {"unpriced"}


def test_a_request_without_as_of_is_priced_as_of_today() -> None:
    decisions = _decisions()
    body = {k: v for k, v in BODY.items() if k != "as_of"}
    row = _stored(decisions, body)
    later = dt.date(2027, 3, 1)
    kb = decisions.advisor.knowledge()
    next_season = DecisionService(Advisor(create_option_host(), lambda: kb, today=lambda: later))
    d = drift(next_season, row)
    assert (d.stored.as_of, d.now.as_of) == (dt.date.fromisoformat(AS_OF), later)
    pinned = _stored(decisions, BODY)
    assert drift(next_season, pinned).now.as_of == dt.date.fromisoformat(AS_OF)


def test_a_stored_request_with_an_unknown_reference_is_not_repriceable() -> None:
    decisions = _decisions()
    row = _stored(decisions, BODY)
    row.request = {**row.request, "currency": "XYZ"}
    with pytest.raises(NotRepriceable) as raised:
        drift(decisions, row)
    assert raised.value.field == "currency"


def _drift(change: float | None, *, ranks: bool = False, gone: bool = False, recommended: str = "a") -> DriftRead:
    side = DriftSideRead(knowledge_version="kv", recommended_option="a", costs={})
    return DriftRead(
        recommendation_id="r",
        changed=True,
        currency="USD",
        stored=side,
        now=msgspec.structs.replace(side, recommended_option=recommended),
        rank_changes=[RankChangeRead("a", 1, 2)] if ranks else [],
        cost_changes={"a": CostChangeRead(100.0, None, change)},
        offers_gone=[object()] if gone else [],  # type: ignore[list-item]
    )


@pytest.mark.parametrize(
    ("d", "min_cost_change", "on_rank_change", "worthy"),
    [
        (_drift(0.05), 0.05, False, True),
        (_drift(-0.05), 0.05, False, True),
        (_drift(0.0499), 0.05, False, False),
        (_drift(None), 0.0, False, False),
        (_drift(0.0), 0.0, False, False),  # no change is never worth an event
        (_drift(0.0, ranks=True), 0.05, True, True),
        (_drift(0.0, ranks=True), 0.05, False, False),
        (_drift(0.0, recommended="b"), 0.05, True, True),
        (_drift(0.0, gone=True), 0.5, False, True),
    ],
)
def test_event_worthy(d: DriftRead, min_cost_change: float, on_rank_change: bool, worthy: bool) -> None:
    assert event_worthy(d, min_cost_change, on_rank_change) is worthy


def test_a_demand_over_time_reads_its_segments_offers_and_has_no_drift_on_the_same_knowledge() -> None:
    decisions = _decisions()
    body = {
        "horizon_years": 1,
        "team_size": 20,
        "as_of": AS_OF,
        "demand": [{"months": 6, "gpus": 16, "utilization": 0.6}, {"months": 6, "gpus": 48, "utilization": 0.8}],
    }
    req = RecommendationCreate.model_validate_json(json.dumps(body))
    evaluation = decisions.evaluate(req, insights=True)
    row = SimpleNamespace(
        id="r2",
        knowledge_version=evaluation.knowledge_version,
        request=req.model_dump(mode="json"),
        response=json.loads(msgspec.json.encode(evaluation)),
    )
    assert all(e["offer"] is None for e in row.response["ranking"] if e["cost"] is not None)  # offers in segments
    d = drift(decisions, row)
    assert not d.changed and d.offers_gone == [] and d.stored.costs == d.now.costs
    bare = dataclasses.replace(decisions.advisor.knowledge(), version="kv-bare", prices=())
    gone = drift(DecisionService(Advisor(create_option_host(), lambda: bare, today=decisions.advisor.today)), row)
    segment_offers = {
        (e["option"], g["offer"]["provider"], g["offer"]["subject"])
        for e in row.response["ranking"]
        for g in e.get("segments") or []
        if g.get("offer")
    }
    assert segment_offers and {(g.option, g.provider, g.subject) for g in gone.offers_gone} == segment_offers
