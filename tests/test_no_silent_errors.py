"""No silent option errors: profiles swept over every GPU model, currency and rental plan through
every computing endpoint must never meet an exception inside an option's plugin.

A plugin exception is answered as ``error_code: "option-failed"`` (tests/test_plugins.py shows how),
logged and counted in ``compute_advisor_option_failures_total``. Here the built-in options must not
produce one anywhere: not in one profile's answer, not in a vectorised batch, not in the Monte Carlo
draws of a recommendation's confidence or of ``/v1/uncertainty``, not in the varied profiles of
break-even, sensitivity and cost curves, not in a training plan. Each request also gets a problem,
never a 500.

The profiles are drawn from a seeded generator so that a failure names a reproducible request.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Databases, make_client
from litestar.testing import TestClient

from app.core.vocab import CURRENCIES, DATA_SECURITY_LEVELS, OPS_TEAMS
from app.web.metrics import OPTION_FAILURES

Client = TestClient  # type: ignore[type-arg]
AS_OF = ["2026-12-01", "2026-06-15", "2025-12-31"]
#: the providers and regions of the price books, which a profile may narrow to
Narrowing = tuple[list[str], list[str]]


@pytest.fixture(scope="module")
def client(databases: Databases) -> Iterator[Client]:
    url = databases.seeded("sqlite")
    with make_client(url) as c:
        yield c


@pytest.fixture(scope="module")
def gpu_models(client: Client) -> list[str | None]:
    found = client.get("/v1/gpus", params={"limit": 500}).json()["items"]
    return [None, *sorted(g["key"] for g in found)]


@pytest.fixture(scope="module")
def narrowing(client: Client) -> Narrowing:
    """The providers and regions the price books name (a profile may narrow to some of them)."""
    offers = client.get("/v1/offers", params={"limit": 500}).json()["items"]
    return sorted({o["provider"] for o in offers}), sorted({o["region"] for o in offers})


@pytest.fixture(scope="module")
def plans(client: Client) -> list[str | None]:
    """No plan, and every plan the loaded options let a profile name (``rental_plans`` of /v1/options)."""
    options = client.get("/v1/options").json()["items"]
    return [None, *dict.fromkeys(p for o in options for p in o["rental_plans"])]


def _failures() -> float:
    return sum(
        float(m.value) for metric in OPTION_FAILURES.collect() for m in metric.samples if m.name.endswith("_total")
    )


def profile(
    rng: random.Random, gpu_model: str | None, currency: str, plan: str | None, narrowing: Narrowing
) -> dict[str, Any]:
    p: dict[str, Any] = {
        "gpus": rng.choice([1, 3, 8, 16, 64, 100, 512, 4096, rng.randint(1, 3000)]),
        "utilization": rng.choice([0.001, 0.2, 0.5, 0.95, 1.0, round(rng.uniform(0.01, 1), 3)]),
        "horizon_years": rng.choice([0.1, 0.5, 1, 3, 5, 10, round(rng.uniform(0.05, 10), 2)]),
        "currency": currency,
        "as_of": rng.choice(AS_OF),
        "team_size": rng.choice([1, 5, 20, 200]),
        "ops_team": rng.choice(OPS_TEAMS),
        "data_security": rng.choice(DATA_SECURITY_LEVELS),
        "start_within_days": rng.choice([0, 7, 30, 90, 365]),
    }
    if gpu_model is not None:
        p["gpu_model"] = gpu_model
    if plan is not None:
        p["rental_plan"] = plan
    if rng.random() < 0.3:
        p["delay_cost_per_day"] = rng.choice([0, 1_000.0, 50_000.0])
    if rng.random() < 0.2:
        p["capex_budget"] = rng.choice([1e5, 1e7, 1e9])
    providers, regions = narrowing
    if providers and rng.random() < 0.15:
        p["providers"] = rng.sample(providers, rng.randint(1, 3))
    if regions and rng.random() < 0.15:
        p["regions"] = rng.sample(regions, rng.randint(1, 3))
    return p


def check(r: Any, request: dict[str, Any]) -> None:
    """200, or a problem that says no option could be assessed (a profile the price books cannot
    serve at all); never a plugin failure and never a 500."""
    assert r.status_code != 500, (request, r.text)
    if r.status_code != 200:
        assert r.status_code == 422, (request, r.text)
        assert r.headers["content-type"].startswith("application/problem+json"), (request, r.text)
        assert r.json()["type"].endswith("no-option-assessable"), (request, r.text)
    assert "option-failed" not in r.text, (request, r.text[:2000])
    assert "Error:" not in r.text, (request, r.text[:2000])  # no exception text of any kind


def test_comparisons_and_recommendations_over_every_gpu_currency_and_plan(
    client: Client, gpu_models: list[str | None], narrowing: Narrowing, plans: list[str | None]
) -> None:
    rng = random.Random(20261203)
    before = _failures()
    assert len(plans) > 7, plans  # the rented option's commitments beyond on_demand/spot/reserved/monthly/blocks
    grid = itertools.product(gpu_models, enumerate(CURRENCIES), enumerate(plans))
    for gpu_model, (c, currency), (k, plan) in grid:
        p = profile(rng, gpu_model, currency, plan, narrowing)
        comparison = {k: v for k, v in p.items() if k not in ("team_size", "ops_team", "data_security")}
        comparison.pop("start_within_days")
        comparison.pop("delay_cost_per_day", None)
        comparison.pop("capex_budget", None)
        check(client.post("/v1/price-comparisons", json=comparison), comparison)
        # a recommendation's work (ranking, break-even sentence, confidence over 1,000 draws), not stored:
        # on half the grid, each GPU model and plan with every other currency
        if (c + k) % 2 == 0:
            check(client.post("/v1/recommendations", params={"store": "false"}, json=p), p)
    assert _failures() == before


@pytest.mark.slow
def test_batches_draws_and_insights_over_every_gpu_and_currency(
    client: Client, gpu_models: list[str | None], narrowing: Narrowing, plans: list[str | None]
) -> None:
    rng = random.Random(7)
    before = _failures()
    for gpu_model, currency in itertools.product(gpu_models, CURRENCIES):
        # a batch large enough to be vectorised, every plan in it
        batch = [profile(rng, gpu_model, currency, plan, narrowing) for plan in plans for _ in range(2)]
        check(client.post("/v1/evaluations", json={"profiles": batch}), {"profiles": batch})
        p = profile(rng, gpu_model, currency, rng.choice(plans), narrowing)
        check(client.post("/v1/uncertainty", json={**p, "draws": 200, "seed": rng.randrange(2**16)}), p)
        if currency == "CNY" or gpu_model is None:  # the heavier insights on a third of the grid
            for path in ("/v1/break-even", "/v1/sensitivity", "/v1/cost-curves"):
                check(client.post(path, json=p), {"path": path, **p})
        if gpu_model is not None:
            plan_request = {
                "parameters": rng.choice([1e9, 7e9, 7e10]),
                "tokens": rng.choice([1e11, 2e12]),
                "gpu_model": gpu_model,
                "gpus": rng.choice([8, 64, 512]),
                "currency": currency,
            }
            check(client.post("/v1/training-plans", json=plan_request), plan_request)
    assert _failures() == before
