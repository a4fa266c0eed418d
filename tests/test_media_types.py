"""Every operation answers in the media types its OpenAPI document declares, and only in those: each
operation is called with each declared type of its 200 answer (and answers in it), and with a type it
does not declare (``406`` problem details, or ``400`` for a malformed ``Accept``). Health probes answer
whatever ``Accept`` says: a load balancer's probe is never refused for its headers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import create_key, make_client
from litestar.testing import TestClient

from app.settings import Settings

METHODS = ("get", "post")
#: operations whose path names an object that must exist first, with the value that names one
PATH_VALUES = {"key": "h100_sxm"}
#: a client of the app, and the OpenAPI document it serves
Api = tuple[TestClient, dict[str, Any]]  # type: ignore[type-arg]


@pytest.fixture(scope="module")
def api(databases: Any) -> Iterator[Api]:
    url = databases.seeded("sqlite")
    # an admin key of an organisation: the private price book's operations are an organisation's
    _, key = create_key(url, ["admin"], name="media types", org="media-types")
    # the watch example's host, allowed (a name is never resolved when the watch is made)
    settings = Settings(
        database_url=url,
        knowledge_refresh_seconds=0.2,
        rate_limit=None,
        gc_freeze=False,
        watch_allowed_hosts=("procurement.example.com",),
        watch_poll_seconds=3600.0,
    )
    with make_client(url, api_key=key, settings=settings) as client:
        document = client.get("/docs/openapi.json").json()
        yield client, document


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op)
        for path, item in sorted(document["paths"].items())
        for method, op in sorted(item.items())
        if method in METHODS and path.startswith("/v1/")
    ]


def _example(document: dict[str, Any], path: str) -> Any:
    return document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["example"]


def _stored(client: TestClient, document: Any) -> str:  # type: ignore[type-arg]
    """A stored recommendation's id (one stored for the purpose)."""
    created = client.post("/v1/recommendations", json=_example(document, "/v1/recommendations"))
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _call(client: TestClient, method: str, path: str, op: dict[str, Any], accept: str, document: Any) -> Any:  # type: ignore[type-arg]
    if "{rec_id}" in path:  # a stored recommendation: store one first
        path = path.replace("{rec_id}", _stored(client, document))
    if "{watch_id}" in path:  # a watch: make one first
        watch = {**_example(document, "/v1/watches"), "recommendation_id": _stored(client, document)}
        made = client.post("/v1/watches", json=watch)
        assert made.status_code == 201, made.text
        path = path.replace("{watch_id}", str(made.json()["id"]))
    body = _example(document, path) if method == "post" else None
    if method == "post" and path == "/v1/watches":  # a watch names a stored recommendation
        body = {**body, "recommendation_id": _stored(client, document)}
    path = re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES[m.group(1)], path)
    headers = {"Accept": accept}
    if method == "get":
        return client.get(path, headers=headers)
    return client.post(path, json=body, headers=headers)


def test_every_operation_answers_each_declared_media_type_and_refuses_others(api: Api) -> None:
    client, document = api
    checked: list[str] = []
    for method, path, op in _operations(document):
        name = op["operationId"]
        ok = op["responses"].get("200") or op["responses"].get("201")
        declared = set(ok.get("content", {"application/json": {}}))
        for media in sorted(declared):
            answer = _call(client, method, path, op, media, document)
            assert answer.status_code in (200, 201), (
                f"{name} with Accept {media}: {answer.status_code} {answer.text[:300]}"
            )
            got = answer.headers["content-type"].split(";")[0].strip()
            assert got == media, f"{name} with Accept {media} answered {got}"
            checked.append(f"{name} {media}")
        refused = _call(client, method, path, op, "application/x-foo", document)
        assert refused.status_code == 406, f"{name} with Accept application/x-foo: {refused.status_code}"
        assert refused.headers["content-type"].startswith("application/problem+json")
        malformed = _call(client, method, path, op, "application/json;q=1e400", document)
        assert malformed.status_code == 400, f"{name} with a malformed Accept: {malformed.status_code}"
    # the operations that answer in more than JSON are among those checked
    assert {"computeCapacityPlan text/csv", "computeCapacityPlan image/svg+xml", "listOffers text/csv"} <= set(checked)


def test_health_probes_answer_whatever_accept_says(api: Api) -> None:
    client, _ = api
    for path in ("/health/live", "/health/ready"):
        assert client.get(path, headers={"Accept": "application/x-foo"}).status_code == 200


def test_metrics_content_type_is_well_formed(api: Api) -> None:
    client, _ = api
    answer = client.get("/metrics")
    assert answer.status_code == 200
    content_type = answer.headers["content-type"]
    params = [p.strip().split("=")[0] for p in content_type.split(";")[1:]]
    assert len(params) == len(set(params)), content_type
    assert content_type.startswith("text/plain") and "charset=utf-8" in content_type
