"""The market as it is sold (fidelity v4, issue 34 item 2): training fabrics of every multi-node offer
(GPUDirect-TCPX/TCPXO as their own values, with a scaling factor), short reservations priced as renewals
with their risk stated, spot capacity per offer from data, and an answer's alternatives as the best offer
of each provider (docs/methodology.md "The market as it is sold")."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import BACKENDS, Databases
from seed_snapshot import knowledge_from_seeds
from sqlalchemy.ext.asyncio import create_async_engine

from app.core.errors import NoOffer
from app.core.text import num
from app.core.types import Assessment, Profile
from app.engine import decision
from app.host.manager import create_option_host
from app.kb import price_import as pi
from app.kb.seeds import PriceSeed
from app.settings import Settings

KB = knowledge_from_seeds()
HOST = create_option_host()
AS_OF = dt.date(2026, 12, 5)
RENTED = "rented_gpu_instances"
HOURS = 8760


def assess(**fields: Any) -> Assessment:
    base: dict[str, Any] = {
        "gpus": 64,
        "utilization": 0.9,
        "horizon_years": 3,
        "as_of": AS_OF,
        "gpu_model": "h100_sxm",
        "currency": "USD",
        "buyer_country": "US",
    }
    return HOST.assess(RENTED, Profile(**{**base, **fields}), KB)


def broken(a: Assessment) -> list[str]:
    return [str(r) for r in decision.broken(a)]


def value(option: str, key: str) -> Any:
    return KB.assumption_value(option, key)[0]


# ---- fabrics ----------------------------------------------------------------------------------------


def test_every_gpu_cloud_multi_node_offer_states_its_fabric() -> None:
    """CoreWeave HGX and Nebius 8-GPU VMs are InfiniBand, GCP A3 Mega TCPXO, A3 High TCPX, A3 Ultra RoCE."""
    rows = [p for p in KB.prices if p.item == "instance_hour" and p.plan == "on_demand" and p.valid_on(AS_OF)]
    fabric = {(p.provider, p.subject.split(" ")[0], p.gpu_model): p.interconnect for p in rows}
    assert fabric[("coreweave", "HGX", "h100_sxm")] == "infiniband"
    assert fabric[("coreweave", "HGX", "b200")] == "infiniband"
    assert fabric[("nebius", "gpu-h100-sxm_8gpu-128vcpu-1600gb", "h100_sxm")] == "infiniband"
    assert fabric[("gcp", "a3-megagpu-8g", "h100_sxm")] == "tcpxo"
    assert fabric[("gcp", "a3-highgpu-8g", "h100_sxm")] == "tcpx"
    assert fabric[("gcp", "a3-ultragpu-8g", "h200_sxm")] == "roce"
    assert fabric[("aws", "p5.48xlarge", "h100_sxm")] == "efa"


@pytest.mark.parametrize("provider", ["coreweave", "nebius"])
def test_a_gpu_cloud_runs_a_job_across_nodes(provider: str) -> None:
    """64 H100 in one job: an InfiniBand GPU cloud qualifies (before 4.0 its null fabric refused it)."""
    a = assess(providers=(provider,))
    assert not broken(a), broken(a)
    assert a.offer is not None and a.offer.provider == provider and a.offer.gpus_per_unit == 8


def test_gcp_a3_mega_qualifies_as_tcpxo_at_a_lower_scaling_factor() -> None:
    """A3 Mega runs 64 H100 across nodes at execution_efficiency × multi_node_scaling_tcpxo; a job of one
    node runs at execution_efficiency alone."""
    a = assess(providers=("gcp",), regions=("us-east4",), rental_plan="on_demand")
    assert not broken(a), broken(a)
    assert a.offer is not None and a.offer.subject.startswith("a3-megagpu-8g")
    execution, tcpxo = value(RENTED, "execution_efficiency"), value("*", "multi_node_scaling_tcpxo")
    assert tcpxo.expected < 1.0 and value("*", "multi_node_scaling_tcpx").expected < tcpxo.expected
    for end in range(3):
        assert a.efficiency.execution_efficiency[end] == pytest.approx(execution[end] * tcpxo[end])
    assert any(ref.ref == "*/multi_node_scaling_tcpxo" for ref in a.efficiency.sources)
    one_node = assess(providers=("gcp",), regions=("us-east4",), rental_plan="on_demand", largest_job_gpus=8)
    assert one_node.efficiency.execution_efficiency.expected == pytest.approx(execution.expected)
    # an InfiniBand offer's factor is 1: its efficiency is the option's
    cw = assess(providers=("coreweave",))
    assert cw.efficiency.execution_efficiency.expected == pytest.approx(execution.expected)


def test_a3_high_tcpx_scales_below_a3_mega() -> None:
    high = assess(providers=("gcp",), regions=("us-central1",), rental_plan="on_demand")
    assert high.offer is not None and high.offer.subject.startswith("a3-highgpu-8g")
    tcpx = value("*", "multi_node_scaling_tcpx")
    assert high.efficiency.execution_efficiency.expected == pytest.approx(
        value(RENTED, "execution_efficiency").expected * tcpx.expected
    )


# ---- short reservations: renewals with their risk ----------------------------------------------------


def test_a_capacity_block_beyond_182_days_is_renewals_at_its_price_with_the_risk_stated() -> None:
    """64 H100 on p5 Capacity Blocks (us-east-1, 31.464 USD per instance-hour from 2026-01-31) for 3 years:
    64 GPUs × 8,760 h × 31.464 / 8 × 3 years = 6,614,991.36 USD, bought as ceil(1,095 / 182) = 7 terms."""
    a = assess(providers=("aws",), regions=("us-east-1",), rental_plan="capacity_block")
    assert a.offer is not None and a.offer.plan == "capacity_block"
    hours = a.cost.breakdown[0]
    assert hours.key == "instance_hours"
    assert hours.total.expected == pytest.approx(64 * HOURS * 31.464 / 8 * 3)
    risk = [n for n in a.notes if getattr(n, "code", "") == "reason.renewal-risk"]
    assert len(risk) == 1 and "182 days" in str(risk[0]) and "7 terms" in str(risk[0])
    assert not broken(a)  # a soft reason, not a refusal
    short = assess(providers=("aws",), regions=("us-east-1",), rental_plan="capacity_block", horizon_years=0.25)
    assert not [n for n in short.notes if getattr(n, "code", "") == "reason.renewal-risk"]


def test_capacity_block_rows_carry_their_longest_term() -> None:
    blocks = [p for p in KB.prices if p.plan == "capacity_block"]
    assert blocks and all(p.max_term_days == 182 for p in blocks)
    assert all(p.max_term_days is None for p in KB.prices if p.plan != "capacity_block")


def test_a_commitment_is_chosen_over_renewed_blocks_when_it_is_cheaper() -> None:
    """Whatever plan wins for 64 H100 over 3 years at 90 %, it is the cheapest feasible quote per effective
    GPU-hour among AWS's plans: a renewed block is never preferred to a cheaper commitment."""
    chosen = assess(providers=("aws",), regions=("us-east-1",))
    for plan in ("capacity_block", "savings_plan_3y", "on_demand"):
        other = assess(providers=("aws",), regions=("us-east-1",), rental_plan=plan)
        if not broken(other):
            assert chosen.cost.per_effective_gpu_hour.expected <= other.cost.per_effective_gpu_hour.expected + 1e-9


# ---- spot capacity from data -------------------------------------------------------------------------


def test_spot_capacity_comes_from_the_row_where_it_states_one() -> None:
    """p5 spot in us-east-1 prices spot in 4 zones: an estimate of 32 GPUs (4 × 8) serves 32 H100 of
    preemptible work; 40 break its capacity. GCP's spot rows state none: the assumption (8) caps them."""
    ok = assess(gpus=32, providers=("aws",), regions=("us-east-1",), rental_plan="spot", preemptible_share=1.0)
    assert not broken(ok), broken(ok)
    too_many = assess(gpus=40, providers=("aws",), regions=("us-east-1",), rental_plan="spot", preemptible_share=1.0)
    assert any("sells at most 32 GPUs" in r for r in broken(too_many)), broken(too_many)
    capped = assess(gpus=16, providers=("gcp",), rental_plan="spot", preemptible_share=1.0)
    shown = num(value(RENTED, "spot_reliable_gpus").expected)
    assert any(f"can count on about {shown} GPUs" in r for r in broken(capped)), broken(capped)


# ---- alternatives: the best offer of each provider ------------------------------------------------------


@pytest.mark.parametrize("gpus", [64, 512])
def test_alternatives_are_the_best_offer_of_each_other_provider(gpus: int) -> None:
    """Every other provider's best feasible offer is listed before a second plan of any provider, and no
    plan of a provider is listed twice (another region of it is not an alternative)."""
    a = assess(gpus=gpus)
    assert a.offer is not None
    feasible = [(alt.offer.provider, alt.offer.plan) for alt in a.alternatives if alt.feasible]
    refused = [(alt.offer.provider, alt.offer.plan) for alt in a.alternatives if not alt.feasible]
    pairs = [(a.offer.provider, a.offer.plan), *feasible, *refused]
    assert len(pairs) == len(set(pairs)), pairs
    qualifying = set(per_provider(gpus)) - {a.offer.provider}
    assert len(qualifying) <= 6 and qualifying <= {p for p, _ in feasible}, (feasible, qualifying)
    assert {"coreweave", "nebius"} <= {a.offer.provider, *qualifying}


def test_one_provider_asked_lists_its_other_plans() -> None:
    """Narrowed to AWS in us-east-1, the answer lists AWS's other plans (on demand among them)."""
    a = assess(providers=("aws",), regions=("us-east-1",), utilization=1.0)
    plans = {alt.offer.plan for alt in a.alternatives}
    assert "on_demand" in plans and a.offer is not None and a.offer.plan not in plans


def per_provider(gpus: int) -> dict[str, Assessment]:
    providers = sorted({p.provider for p in KB.prices if p.option == RENTED and p.gpu_model == "h100_sxm"})
    found = {}
    for p in providers:
        try:
            a = assess(gpus=gpus, providers=(p,))
        except NoOffer:  # none valid for this buyer and day
            continue
        if not broken(a):
            found[p] = a
    return found


@pytest.mark.parametrize("gpus", [64, 512])
def test_the_cheapest_qualifying_offer_of_each_provider_includes_gpu_clouds(gpus: int) -> None:
    """64 and 512 H100 at 90 % for 3 years, US buyer: CoreWeave and Nebius qualify with their plans,
    beside AWS, GCP (TCPXO) and Azure; single-GPU clouds do not."""
    found = per_provider(gpus)
    assert {"aws", "gcp", "azure", "coreweave", "nebius"} <= set(found), sorted(found)
    assert not {"runpod", "verda", "vast"} & set(found)
    for a in found.values():
        assert a.offer is not None and a.offer.gpus_per_unit >= 8
        per_gpu_hour = a.cost.breakdown[0].total.expected / (a.offer and gpus * HOURS * 3)
        assert per_gpu_hour > 0 and math.isfinite(per_gpu_hour)


# ---- the columns round trip: seeds, writer, SQLite and PostgreSQL ---------------------------------------


def test_the_writer_states_max_term_days_only_where_a_row_has_one() -> None:
    base = {
        "option": RENTED,
        "provider": "aws",
        "item": "instance_hour",
        "subject": "p5.48xlarge",
        "gpu_model": "h100_sxm",
        "plan": "capacity_block",
        "unit": "per_server_hour",
        "gpus_per_unit": 8,
        "low": 31.464,
        "high": 31.464,
        "currency": "USD",
        "region": "us-east-1",
        "valid_from": dt.date(2026, 1, 31),
        "source": "x",
        "source_quality": "verified",
        "interconnect": "efa",
    }
    block = PriceSeed.model_validate({**base, "max_term_days": 182})
    plain = PriceSeed.model_validate({**base, "plan": "on_demand"})
    text = pi.to_yaml([block, plain])
    assert text.count("max_term_days: 182") == 1 and text.count("max_term_days") == 1
    assert PriceSeed.model_validate({**base, "interconnect": "tcpxo"}).interconnect == "tcpxo"


@pytest.mark.parametrize("backend", BACKENDS)
def test_fabrics_and_longest_terms_load_on_both_databases(backend: str, databases: Databases) -> None:
    """The migration's check constraint accepts TCPX/TCPXO and the seeds' longest terms load, on SQLite
    and PostgreSQL."""
    url = databases.seeded(backend)

    async def read() -> tuple[list[Any], set[Any]]:
        engine = create_async_engine(Settings(database_url=url).async_database_url)
        try:
            async with engine.connect() as db:
                blocks = "SELECT DISTINCT max_term_days FROM price_items WHERE plan = 'capacity_block'"
                terms = list((await db.execute(sa.text(blocks))).all())
                fabrics = {r[0] for r in (await db.execute(sa.text("SELECT interconnect FROM price_items"))).all()}
        finally:
            await engine.dispose()
        return terms, fabrics

    terms, fabrics = asyncio.run(read())
    assert [tuple(t) for t in terms] == [(182,)]
    assert {"tcpxo", "tcpx", "infiniband", "roce", "efa"} <= fabrics
