"""docs/worked-example.md, by hand: 64 × H100 at 60 % for 3 years, a US buyer, in USD. Every line of the
own cluster's bill and the rented and platform offers' costs are recomputed here from the price rows and
assumptions with plain arithmetic (expected ends), and must equal what the service answers."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.knowledge import Price
from app.core.types import Assessment, Profile
from app.host.manager import create_option_host

KB = knowledge_from_seeds()
HOST = create_option_host()
PROFILE = Profile(
    gpus=64,
    utilization=0.6,
    horizon_years=3,
    as_of=dt.date(2026, 12, 3),
    gpu_model="h100_sxm",
    currency="USD",
    buyer_country="US",
)
GPUS, SERVERS, HOURS = 64, 8, 8760


def row(item: str, subject: str | None = None, region: str | None = None, **fields: object) -> Price:
    found = [
        p
        for p in KB.rows("self_built_cluster", item, PROFILE.as_of)
        if (subject is None or p.subject == subject)
        and (region is None or p.region == region)
        and all(getattr(p, k) == v for k, v in fields.items())
    ]
    assert len(found) == 1, (item, subject, region, found)
    return found[0]


def a(key: str, option: str = "self_built_cluster") -> float:
    return KB.assumption(option, key).value.expected


def own() -> Assessment:
    return HOST.assess("self_built_cluster", PROFILE, KB)


def lines(assessment: Assessment) -> dict[str, tuple[float, float, float]]:
    return {
        li.key: (li.upfront.expected, li.annual.expected, (li.total or li.annual).expected)
        for li in assessment.cost.breakdown
    }


def test_the_own_cluster_line_by_line() -> None:
    got = own()
    # a built machine room is sunk (methodology 4.0): for 3 years colocation costs less than building one
    assert got.offer is not None and got.offer.variant == "colocation" and got.offer.region == "US"
    server = row("server_hardware", "hgx_h100_8gpu", "US")
    price = server.value.expected  # 313,500 USD a server
    it_kw = SERVERS * KB.servers["hgx_h100_8gpu"].power_kw  # 81.6 kW
    lead_years = a("lead_time_days") if server.lead_time_days is None else server.lead_time_days.expected
    lead_years /= 365
    serving = 3 - lead_years  # years in service after installation
    by_key = lines(got)

    hardware = SERVERS * price
    # resale at the horizon: the H100's market points, linear between them (age in service)
    points = sorted(
        (float(p.subject.removeprefix("age_").removesuffix("y")), p.value.expected)
        for p in KB.rows("self_built_cluster", "resale_value", PROFILE.as_of)
        if p.gpu_model == "h100_sxm" and p.subject.endswith("y") and p.subject[4:-1].replace(".", "").isdigit()
    )
    ages, shares = [0.0, *(x for x, _ in points)], [1.0, *(y for _, y in points)]
    # as a seller receives it: less the resale haircut, the days to sell older (methodology 4.0)
    sold_at, kept = serving + a("resale_days_to_sell") / 365, 1 - a("resale_haircut")
    assert sold_at > ages[-1]  # past the last point: the last segment's yearly rate goes on
    yearly = (shares[-1] / shares[-2]) ** (1 / (ages[-1] - ages[-2]))
    residual = shares[-1] * yearly ** (sold_at - ages[-1])
    assert by_key["server_hardware"] == pytest.approx((hardware, hardware / 3, hardware * (1 - kept * residual)))

    def declining(key: str, upfront: float) -> tuple[float, float, float]:
        left = (1 - a(f"residual_decline_{key}")) ** sold_at  # no market points: a constant decline a year
        return upfront, upfront / 3, upfront * (1 - kept * left)

    fabric = row("network_fabric", min_gpus=17).value.expected * GPUS  # the 17–512-GPU InfiniBand tier
    assert by_key["network_fabric"] == pytest.approx(declining("network_fabric", fabric))
    storage = row("storage", unit="per_tb").value.expected * a("storage_tb_per_gpu") * GPUS
    assert by_key["storage"] == pytest.approx(declining("storage", storage))
    installation = row("installation").value.expected * hardware  # sunk: nothing at resale
    assert by_key["installation"] == pytest.approx((installation, installation / 3, installation))
    rent = row("colocation", "retail", "US").value.expected * it_kw * 12  # 81.6 kW: the retail tier (< 250 kW)
    assert by_key["colocation"] == pytest.approx((0, rent, rent * serving))

    teams = math.ceil(SERVERS / a("nodes_per_ops_team"))
    staff = row("ops_staff", "gpu_infra_engineer", "US").value.expected
    ops = teams * a("ops_team_fte") * staff
    assert by_key["ops_team"] == pytest.approx((0, ops, ops * serving))
    kwh = it_kw * a("power_draw_share") * HOURS * a("pue")
    power = kwh * row("power", "*", "US").value.expected
    assert by_key["power"] == pytest.approx((0, power, power * serving))
    # support by warranty: the 3-year OEM warranty covers every year in service, at its small share
    assert serving <= a("warranty_years_server_hardware")
    support = a("support_share_in_warranty") * hardware
    assert by_key["hardware_support"] == pytest.approx((0, support, support * serving))

    total = sum(v[2] for v in by_key.values())
    # renting until the cluster is installed (a bridge line) serves the whole horizon; waiting serves after it
    useful = GPUS * 0.6 * HOURS * (3 if "bridge" in by_key else serving)
    assert got.cost.total.expected == pytest.approx(total)
    assert got.cost.per_useful_gpu_hour.expected == pytest.approx(total / useful)


def one(option: str, item: str, **fields: object) -> Price:
    """The one price row of ``option``'s ``item`` with these fields, as of the profile's day."""
    found = [p for p in KB.rows(option, item, PROFILE.as_of) if all(getattr(p, k) == v for k, v in fields.items())]
    assert len(found) == 1, (option, item, fields, found)
    return found[0]


def test_the_rented_and_platform_offers_by_hand() -> None:
    useful = GPUS * 0.6 * HOURS
    # the data a team keeps (methodology 4.0, storage on every side): GPUs × TB per GPU, rented by the TB-month
    volume = GPUS * a("storage_tb_per_gpu", "*")

    rented = HOST.assess("rented_gpu_instances", PROFILE, KB)
    # a GPU cloud whose nodes are joined by InfiniBand can run the 64-GPU job: Nebius on demand is the cheapest
    assert rented.offer is not None
    assert (rented.offer.provider, rented.offer.region, rented.offer.plan) == ("nebius", "eu-north1", "on_demand")
    nebius = {"provider": "nebius", "region": "eu-north1", "plan": "on_demand", "gpu_model": "h100_sxm"}
    offer = one("rented_gpu_instances", "instance_hour", **nebius)
    assert (offer.subject, offer.interconnect, offer.currency) == (rented.offer.subject, "infiniband", "USD")
    per_gpu = offer.value.expected / (offer.gpus_per_unit or 1)  # 23.60 USD an 8-GPU node-hour: 2.95 a GPU-hour
    # every hour of the 64 GPUs is held: useful hours ÷ the utilization of held instances exceed them
    assert useful / a("held_utilization", "rented_gpu_instances") > GPUS * HOURS
    instances = GPUS * HOURS * per_gpu
    # Nebius publishes no storage price: the lowest another provider of the option publishes, and no egress line
    published = [p for p in KB.rows("rented_gpu_instances", "storage", PROFILE.as_of) if p.unit == "per_tb_month"]
    assert published and "nebius" not in {p.provider for p in published} and {p.currency for p in published} == {"USD"}
    storage = volume * min(p.value.expected for p in published) * 12
    assert lines(rented) == {
        "instance_hours": pytest.approx((0, instances, instances * 3)),
        "storage": pytest.approx((0, storage, storage * 3)),
    }
    assert rented.cost.annual.expected == pytest.approx(instances + storage)
    assert rented.cost.per_useful_gpu_hour.expected == pytest.approx((instances + storage) / useful)

    platform = HOST.assess("ai_compute_platform", PROFILE, KB)
    assert platform.offer is not None and "SageMaker training job" in platform.offer.subject
    per_gpu = platform.offer.quoted_price.expected / 8
    startup = a("job_startup_minutes", "ai_compute_platform") / 60 / a("training_run_hours", "*")
    job_seconds = useful * (1 + startup) * per_gpu  # job-second billing: the jobs' time and a start-up a run
    # AWS publishes both: S3 by the TB-month, and the data moved out once at the horizon's end
    s3 = one("ai_compute_platform", "storage", provider="aws").value.expected
    out = one("ai_compute_platform", "egress", provider="aws").value.expected
    storage, egress = volume * s3 * 12, volume * a("egress_share", "*") * out
    assert lines(platform) == {
        "gpu_hours": pytest.approx((0, job_seconds, job_seconds * 3)),
        "storage": pytest.approx((0, storage, storage * 3)),
        "egress": pytest.approx((0, 0, egress)),
    }
    assert platform.cost.annual.expected == pytest.approx(job_seconds + storage)
    total = (job_seconds + storage) * 3 + egress
    assert platform.cost.total.expected == pytest.approx(total)
    assert platform.cost.per_useful_gpu_hour.expected == pytest.approx(total / (useful * 3))
