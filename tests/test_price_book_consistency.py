"""Checks across the price books that no single row can make (docs/price-books.md): a managed platform
never costs less per billed GPU-hour than the same provider's bare instance; "up to N %" discounts
carry no invented midpoint; no row was read in the future; offers that cannot span nodes claim no
fabric; a platform offer says how it bills."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.knowledge import Price

PLATFORM, RENTED = "ai_compute_platform", "rented_gpu_instances"
#: plans billed alike: a platform's pay-as-you-go is compared with the instance on demand
FAMILIES = {"pay_as_you_go": "pay_per_use", "on_demand": "pay_per_use", "spot": "spot"}


def per_gpu_hour(p: Price) -> float:
    gpus = (p.gpus_per_unit or 1) if p.unit == "per_server_hour" else 1
    return p.value.low / gpus


def family(plan: str) -> str:
    """A plan's family: pay per use, spot, or its commitment term (``reserved_1y``, ``committed_use_1y`` and
    ``savings_plan_1y`` are all one-year commitments)."""
    return FAMILIES.get(plan, plan.rsplit("_", 1)[-1])


def overlap(a: Price, b: Price) -> dt.date | None:
    """A day both rows are valid on, if any."""
    start = max(a.valid_from, b.valid_from)
    ends = [d for d in (a.valid_to, b.valid_to) if d is not None]
    return start if not ends or start < min(ends) else None


def test_a_platform_never_costs_less_per_gpu_hour_than_its_providers_bare_instance() -> None:
    kb = knowledge_from_seeds()
    platform = [p for p in kb.prices if p.option == PLATFORM and p.item == "gpu_hour" and p.gpu_model != "*"]
    bare = [p for p in kb.prices if p.option == RENTED and p.item == "instance_hour"]
    compared = []
    for plat, inst in itertools.product(platform, bare):
        same = (plat.provider, plat.gpu_model, plat.region, family(plat.plan)) == (
            inst.provider,
            inst.gpu_model,
            inst.region,
            family(inst.plan),
        )
        if same and overlap(plat, inst) is not None:
            compared.append((plat, inst))
            assert per_gpu_hour(plat) >= per_gpu_hour(inst) - 1e-9, (plat.subject, inst.subject, inst.region)
    # SageMaker (jobs, HyperPod) on H100/A100/H200, Vertex AI jobs and persistent resources, Azure ML H100/A100
    providers = {p.provider for p, _ in compared}
    assert providers == {"aws", "gcp", "azure"}, providers
    assert len({p.id for p, _ in compared}) >= 10


def test_a_platform_premium_is_at_least_met_where_it_applies_to_the_whole_instance() -> None:
    kb = knowledge_from_seeds()
    premium = {p.provider: p.value.low for p in kb.prices if p.item == "platform_premium"}
    assert premium == {"aws": 0.15, "azure": 0.0, "gcp": 0.15}
    whole = [p for p in kb.prices if p.option == PLATFORM and p.item == "gpu_hour" and p.provider in ("aws", "azure")]
    for plat in whole:
        bare = [
            b
            for b in kb.prices
            if b.option == RENTED
            and b.plan == "on_demand"
            and (b.provider, b.gpu_model, b.region) == (plat.provider, plat.gpu_model, plat.region)
            and overlap(plat, b)
        ]
        assert bare, plat.subject
        ratio = per_gpu_hour(plat) / per_gpu_hour(bare[0])
        assert ratio >= 1 + premium[plat.provider] - 1e-6, (plat.subject, ratio)


def test_up_to_discounts_are_low_zero_and_expected_low() -> None:
    """The pinned rule: an open discount known only as "up to N %" is low 0, high N, most likely 0 (the row's
    ``mode``: read without it, the snapshot would take the midpoint, a figure no source gives); the figure
    answers compute with is the mean of that triangle, N / 3 (methodology "One story per answer")."""
    kb = knowledge_from_seeds()
    up_to = [
        p
        for p in kb.prices
        if p.item == "reservation_discount" and p.valid_to is None and p.value.low == 0 < p.value.high
    ]
    assert {p.provider for p in up_to} >= {"aws", "coreweave", "gcp"}
    for p in up_to:
        assert p.mode == 0, (p.provider, p.subject, p.plan, p.mode)
        assert p.value.expected == pytest.approx(p.value.high / 3), (p.provider, p.subject, p.plan, p.value)


def test_no_row_was_read_or_starts_in_the_future() -> None:
    kb = knowledge_from_seeds()
    today = dt.date.today()
    assert all(p.retrieved_on is None or p.retrieved_on <= today for p in kb.prices)
    assert all(p.valid_from <= today for p in kb.prices)


def test_offers_that_cannot_span_nodes_claim_no_fabric_and_platform_offers_say_how_they_bill() -> None:
    kb = knowledge_from_seeds()
    offers = [p for p in kb.prices if p.item in ("instance_hour", "gpu_hour")]
    for p in offers:
        if p.gpus_per_unit is not None and p.gpus_per_unit < 8:
            assert p.interconnect is None, (p.provider, p.subject)
        if p.option == PLATFORM and p.gpu_model != "*":
            assert p.billing is not None, p.subject
        if p.option != PLATFORM:
            assert p.billing is None, p.subject
    named = {p.gpu_model for p in offers if p.option == PLATFORM and p.gpu_model != "*"}
    assert {"h100_sxm", "a100_80gb", "h200_sxm"} <= named
    fabrics = {p.interconnect for p in offers if p.interconnect is not None}
    assert fabrics == {"infiniband", "roce", "efa", "tcpxo", "tcpx", "ethernet"}


def test_a_us_buyer_is_priced_on_us_servers_and_a_chinese_one_on_chinese_quotes() -> None:
    """Server quotes carry the country they were quoted in: the grey-market H100 quote is China's."""
    kb = knowledge_from_seeds()
    h100 = [p for p in kb.prices if p.item == "server_hardware" and p.gpu_model == "h100_sxm" and p.valid_to is None]
    by_region = {p.region: p for p in h100}
    assert set(by_region) == {"US", "CN"}
    assert (by_region["US"].currency, by_region["CN"].currency) == ("USD", "CNY")
    assert "grey-market" in (by_region["CN"].notes or "").lower()
