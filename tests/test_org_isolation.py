"""Object-level authorization, route by route: every route that names a stored object (a recommendation, its
drift, a watch, its deliveries, a private price row) or lists them answers each key exactly what its
organisation owns — another organisation's object is a 404 like a missing one, and never appears in a list.

Keys: two of organisation ``acme`` (``acme``, ``acme2``), one of ``globex``, two of no organisation (``loner``,
``loner2``), and an ``admin`` key of none. A key of an organisation sees its organisation's objects, whoever of
it made them; a key of none sees its own; ``admin`` sees every recommendation and watch, and has no private
price book (``403`` ``…:no-organisation`` on the book's routes). The private book prices its organisation's
answers only. Each test counts the cells it checks and pins the count (130 per backend in all)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Databases, admin_key, create_key, make_client
from litestar import Litestar
from litestar.testing import TestClient

from app.settings import Settings

Client = TestClient[Litestar]
SCOPES = ["recommendations:write", "prices:write", "catalog:read", "decisions:run"]
PROFILE = {
    "team_size": 20,
    "gpus": 64,
    "utilization": 0.5,
    "horizon_years": 1,
    "currency": "USD",
    "gpu_model": "h100_sxm",
    "as_of": "2026-12-01",
}
#: the list's Nebius H100 on demand (seeds), quoted privately at half its 3.85 USD per GPU-hour
QUOTE = {
    "option": "rented_gpu_instances",
    "provider": "nebius",
    "item": "instance_hour",
    "subject": "HGX H100 (nebius.com/prices)",
    "gpu_model": "h100_sxm",
    "plan": "on_demand",
    "unit": "per_gpu_hour",
    "low": 1.925,
    "high": 1.925,
    "currency": "USD",
    "region": "global",
    "valid_from": "2026-11-01",
    "residency": "public_multi_tenant",
    "interconnect": "infiniband",
    "source": "negotiated Nebius quote, 2026-11-20 (private)",
    "source_quality": "verified",
}
#: who owns what: a key's organisation, or None
ORGS = {"acme": "acme", "acme2": "acme", "globex": "globex", "loner": None, "loner2": None, "admin": None}


@dataclasses.dataclass
class As:
    """One app's client, sending one key: the keys share an app (and its worker's books) as they would in life."""

    client: Client
    key: str

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.client.get(path, headers={"X-API-Key": self.key}, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.client.post(path, headers={"X-API-Key": self.key}, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.client.delete(path, headers={"X-API-Key": self.key}, **kwargs)


@dataclasses.dataclass
class World:
    keys: dict[str, str]
    clients: dict[str, As]
    #: object ids by owner key
    recs: dict[str, str]
    watches: dict[str, str]
    prices: dict[str, int]


def _sees(viewer: str, owner: str) -> bool:
    """The rule: admin sees all; a key of an organisation its organisation's; a key of none its own."""
    if viewer == "admin":
        return True
    if ORGS[viewer] is not None:
        return ORGS[viewer] == ORGS[owner]
    return viewer == owner


@pytest.fixture
def world(databases: Databases, backend: str) -> Iterator[World]:
    url = databases.seeded(backend)
    keys = {name: create_key(url, SCOPES, name=name, org=ORGS[name])[1] for name in ORGS if name != "admin"}
    keys["admin"] = admin_key(url)
    settings = Settings(
        database_url=url,
        knowledge_refresh_seconds=0.2,
        rate_limit=None,
        gc_freeze=False,
        watch_allowed_hosts=("127.0.0.1",),
        watch_poll_seconds=3600.0,  # no event is wanted here: the matrix only reads
    )
    app = make_client(url, api_key=None, settings=settings)
    app.__enter__()
    clients = {name: As(app, key) for name, key in keys.items()}
    try:
        recs, watches, prices = {}, {}, {}
        for owner in ("acme", "globex", "loner"):
            r = clients[owner].post("/v1/recommendations", json=PROFILE)
            assert r.status_code == 201, r.text
            recs[owner] = r.json()["id"]
            w = clients[owner].post(
                "/v1/watches",
                json={"recommendation_id": recs[owner], "url": "http://127.0.0.1:9/hook", "secret": "s" * 32},
            )
            assert w.status_code == 201, w.text
            watches[owner] = w.json()["id"]
        for owner in ("acme", "globex"):
            p = clients[owner].post("/v1/price-books/prices", json={"prices": [QUOTE]})
            assert p.status_code == 201, p.text
            prices[owner] = p.json()["prices"][0]["id"]
        yield World(keys, clients, recs, watches, prices)
    finally:
        app.__exit__(None, None, None)


def _check(cells: Counter[str], route: str, response: Any, visible: bool) -> None:
    cells[route] += 1
    if visible:
        assert response.status_code == 200, (route, response.text)
    else:
        assert response.status_code == 404, (route, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["type"].endswith(":not-found")


def test_every_route_that_names_an_object_answers_only_what_the_keys_organisation_owns(world: World) -> None:
    cells: Counter[str] = Counter()
    for viewer, c in world.clients.items():
        for owner, rec in world.recs.items():
            visible = _sees(viewer, owner)
            _check(cells, "GET /v1/recommendations/{id}", c.get(f"/v1/recommendations/{rec}"), visible)
            _check(cells, "GET /v1/recommendations/{id}/drift", c.get(f"/v1/recommendations/{rec}/drift"), visible)
            watch = c.post(
                "/v1/watches", json={"recommendation_id": rec, "url": "http://127.0.0.1:9/", "secret": "t" * 16}
            )
            cells["POST /v1/watches"] += 1
            assert (watch.status_code == 201) is visible, (viewer, owner, watch.text)
        for owner, watch_id in world.watches.items():
            visible = _sees(viewer, owner)
            _check(cells, "GET /v1/watches/{id}", c.get(f"/v1/watches/{watch_id}"), visible)
            _check(cells, "GET /v1/watches/{id}/deliveries", c.get(f"/v1/watches/{watch_id}/deliveries"), visible)
        listed = {item["id"] for item in c.get("/v1/recommendations", params={"limit": 100}).json()["items"]}
        cells["GET /v1/recommendations"] += 1
        assert listed == {rec for owner, rec in world.recs.items() if _sees(viewer, owner)}, viewer
        watched = {item["recommendation_id"] for item in c.get("/v1/watches", params={"limit": 100}).json()["items"]}
        cells["GET /v1/watches"] += 1
        assert watched == {rec for owner, rec in world.recs.items() if _sees(viewer, owner)}, viewer
    # 6 keys × 3 recommendations × 3 routes, 6 × 3 watches × 2 routes, 6 × 2 lists
    assert cells == {
        "GET /v1/recommendations/{id}": 18,
        "GET /v1/recommendations/{id}/drift": 18,
        "POST /v1/watches": 18,
        "GET /v1/watches/{id}": 18,
        "GET /v1/watches/{id}/deliveries": 18,
        "GET /v1/recommendations": 6,
        "GET /v1/watches": 6,
    }


def test_a_private_price_row_is_its_organisations_alone(world: World) -> None:
    cells: Counter[str] = Counter()
    for viewer, c in world.clients.items():
        book = c.get("/v1/price-books/prices")
        cells["GET /v1/price-books/prices"] += 1
        if ORGS[viewer] is None:  # admin included: a private book is an organisation's
            assert book.status_code == 403 and book.json()["type"].endswith(":no-organisation"), book.text
        else:
            assert {row["id"] for row in book.json()["items"]} == {world.prices[ORGS[viewer]]}
        for owner, price_id in world.prices.items():
            if ORGS[viewer] is None or ORGS[viewer] == owner:
                continue  # the owner's close is checked below; a key of none is refused above
            closed = c.delete(f"/v1/price-books/prices/{price_id}")
            cells["DELETE /v1/price-books/prices/{id}"] += 1
            assert closed.status_code == 404 and closed.json()["type"].endswith(":not-found"), closed.text
    # nothing above closed a row of another organisation
    for owner, price_id in world.prices.items():
        rows = world.clients[owner].get("/v1/price-books/prices").json()["items"]
        assert [(r["id"], r["closed_on"]) for r in rows] == [(price_id, None)]
    # the owner's second key closes it
    cells["DELETE /v1/price-books/prices/{id}"] += 1
    assert world.clients["acme2"].delete(f"/v1/price-books/prices/{world.prices['acme']}").status_code == 200
    assert cells == {"GET /v1/price-books/prices": 6, "DELETE /v1/price-books/prices/{id}": 4}


def test_a_private_book_prices_its_organisations_answers_only(world: World) -> None:
    cells: Counter[str] = Counter()
    offers = {}
    for viewer, c in world.clients.items():
        doc = c.post("/v1/price-comparisons", json=PROFILE).json()
        cells["POST /v1/price-comparisons"] += 1
        (rented,) = [i for i in doc["items"] if i["option"] == "rented_gpu_instances"]
        offers[viewer] = (doc["knowledge_version"].partition("+")[2], rented["offer"]["price_book"])
    assert offers == {
        "acme": ("org:acme.1", "org"),
        "acme2": ("org:acme.1", "org"),
        "globex": ("org:globex.1", "org"),
        "loner": ("", "list"),
        "loner2": ("", "list"),
        "admin": ("", "list"),
    }
    assert cells == {"POST /v1/price-comparisons": 6}


def test_deleting_a_watch_is_for_its_organisation_alone(world: World) -> None:
    cells: Counter[str] = Counter()
    for viewer, c in world.clients.items():
        for owner, watch_id in world.watches.items():
            if _sees(viewer, owner):
                continue
            cells["DELETE /v1/watches/{id}"] += 1
            gone = c.delete(f"/v1/watches/{watch_id}")
            assert gone.status_code == 404 and gone.json()["type"].endswith(":not-found"), gone.text
    for owner, watch_id in world.watches.items():
        assert world.clients[owner].get(f"/v1/watches/{watch_id}").status_code == 200  # still there
    cells["DELETE /v1/watches/{id}"] += 1
    assert world.clients["acme2"].delete(f"/v1/watches/{world.watches['acme']}").status_code == 204
    assert cells == {"DELETE /v1/watches/{id}": 12}  # 11 (key, watch) pairs a key cannot see, and the owner's
