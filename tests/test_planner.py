"""POST /v1/training-plans: hand calculations on the reference knowledge base (docs/training-plans.md)."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import make_client

from app.core.declarations import OptionSpec
from app.core.knowledge import Knowledge
from app.core.types import Assessment, Profile
from app.host.hookspecs import hookimpl
from app.host.manager import create_option_host
from plugins import rented_gpu_instances

URL = "/v1/training-plans"
# the RTX 4090 has no offer in the price book: its plans are priced on the article's reference server
GPU, GPU_TFLOPS = "rtx_4090", 165  # seeds/10-hardware.yaml
# 7B parameters, 2T tokens: 6 × 7e9 × 2e12
FLOPS_7B_2T = 8.4e22
# 8.4e22 ÷ (165e12 × 0.40 × 3600) = 8.4e22 ÷ 2.376e17
HOURS_AT_40 = 353_535.35
# at the seed's MFU 0.55 (low end) and 0.25 (high end)
HOURS_AT_55 = 257_116.62
HOURS_AT_25 = 565_656.57
BASE = {"parameters": 7e9, "tokens": 2e12, "gpu_model": GPU, "gpus": 256, "as_of": "2025-06-01"}
#: expected figures are the means of the rows' triangles, (low + most likely + high) ÷ 3: the failure rate
#: (0.10 + 0.17 + 0.25) ÷ 3 a GPU-year; the platform's detection (0.02 + 0.05 + 0.17) ÷ 3 = 0.08 h,
#: checkpoint write (0.1 + 0.25 + 1.0) ÷ 3 = 0.45 min, set-up (2 + 5 + 10) ÷ 3 min, lead time
#: (0.0007 + 0.0021 + 0.0069) ÷ 3 days
FAILURES = (0.10 + 0.17 + 0.25) / 3
PLATFORM_SETUP_MINUTES, PLATFORM_LEAD_DAYS = (2 + 5 + 10) / 3, (0.0007 + 0.0021 + 0.0069) / 3
#: the platform's hours lost per interruption at 256 GPUs (expected): detection 0.08 + restart 0.15 + half
#: the Young–Daly interval √(2 × MTBF × 0.45 min), MTBF = 8760 ÷ (FAILURES × 256) hours
PLATFORM_LOST_EACH = 0.08 + 0.15 + (2 * 8760 / (FAILURES * 256) * 0.45 / 60) ** 0.5 / 2


def plan(client, **changes):
    body = {**BASE, **changes}
    body = {k: v for k, v in body.items() if v is not None}
    return client.post(URL, json=body)


def items(doc):
    return {i["option"]: i for i in doc["items"]}


def ordered(r):
    return r["low"] <= r["expected"] <= r["high"]


def test_hand_calculation_at_given_mfu(client):
    r = plan(client, mfu=0.4)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["flops"] == pytest.approx(FLOPS_7B_2T)
    by_hand = FLOPS_7B_2T / (GPU_TFLOPS * 1e12 * 0.4 * 3600)
    assert abs(by_hand - HOURS_AT_40) < 0.01
    for end in ("low", "expected", "high"):
        assert doc["gpu_hours"][end] == pytest.approx(HOURS_AT_40, abs=1)
        assert doc["mfu"][end] == 0.4
    assert doc["gpu_model"] == GPU and doc["gpus"] == 256
    assert doc["knowledge_version"] and doc["methodology_version"]


def test_default_mfu_is_the_knowledge_base_range(client):
    doc = plan(client).json()
    assert doc["mfu"] == {"low": 0.25, "expected": 0.4, "high": 0.55}
    # the high MFU gives the low end of the GPU-hours
    assert doc["gpu_hours"]["low"] == pytest.approx(HOURS_AT_55, abs=1)
    assert doc["gpu_hours"]["expected"] == pytest.approx(HOURS_AT_40, abs=1)
    assert doc["gpu_hours"]["high"] == pytest.approx(HOURS_AT_25, abs=1)
    assert any("the knowledge base's assumption of model FLOPs utilization" in n for n in doc["notes"])


def test_flops_given_directly(client):
    same = plan(client, tokens=None, flops=FLOPS_7B_2T, mfu=0.4).json()
    assert same["flops"] == pytest.approx(FLOPS_7B_2T)
    assert same["gpu_hours"]["expected"] == pytest.approx(HOURS_AT_40, abs=1)
    other = plan(client, tokens=None, flops=1e23, mfu=0.5).json()
    assert other["gpu_hours"]["expected"] == pytest.approx(1e23 / (GPU_TFLOPS * 1e12 * 0.5 * 3600), abs=1)


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"flops": 1e22}, "flops"), ({"tokens": None}, "tokens")],
    ids=["both", "neither"],
)
def test_exactly_one_of_tokens_or_flops(client, changes, field):
    r = plan(client, **changes)
    assert r.status_code == 400, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["field"] == field
    assert "tokens or flops" in r.json()["detail"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"mfu": 0}, "mfu"),
        ({"mfu": 1.5}, "mfu"),
        # physical bounds: an MFU of 1e-300 answered with 300-digit numbers, 5e-324 parameters "0 GPU-hours"
        ({"mfu": 1e-300}, "mfu"),
        ({"mfu": 0.001}, "mfu"),
        ({"parameters": 5e-324}, "parameters"),
        ({"parameters": 1000.0}, "parameters"),
        ({"tokens": 5e-324}, "tokens"),
        ({"tokens": None, "flops": 1.0}, "flops"),
        ({"parameters": "7e9"}, "parameters"),
        ({"gpus": 0}, "gpus"),
        ({"ops_team": "huge"}, "ops_team"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_invalid_fields_are_named(client, changes, field):
    r = plan(client, **changes)
    assert r.status_code == 400, r.text
    assert field in r.json()["detail"]


def test_unknown_gpu_model_is_422(client):
    r = plan(client, gpu_model="tpu_v9")
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "gpu_model"


def test_unknown_currency_is_422(client):
    r = plan(client, currency="XYZ")
    assert r.status_code == 422
    assert r.json()["field"] == "currency"


def test_priced_on_the_reference_server(client):
    doc = plan(client).json()
    assert doc["pricing_basis"] == "article_8gpu"
    # the notes name the GPU and the server as people do (GeForce RTX 4090, the reference 8-GPU server)
    said = "the reference server (8-GPU server) because nothing for GeForce RTX 4090 is priced"
    assert any(said in n for n in doc["notes"]), doc["notes"]


def test_calendar_days_include_the_lead_time(client):
    doc = plan(client, mfu=0.4).json()
    by = items(doc)
    own, platform, rented = by["self_built_cluster"], by["ai_compute_platform"], by["rented_gpu_instances"]
    for item in (own, platform, rented):
        assert item["error"] is None
        assert ordered(item["calendar_days"]) and ordered(item["training_days"])
        assert item["calendar_days"]["low"] >= item["training_days"]["low"]
    # own cluster: 30–90 days of procurement before training starts
    assert own["lead_time_days"] == {"low": 30, "expected": 60, "high": 90}
    assert own["calendar_days"]["low"] >= 30 + own["training_days"]["low"]
    assert own["calendar_days"]["high"] >= 90 + own["training_days"]["high"]
    # the platform answers in minutes: far shorter on the calendar
    assert platform["calendar_days"]["high"] < own["calendar_days"]["low"]
    assert rented["calendar_days"]["high"] < own["calendar_days"]["low"]
    # platform by hand (expected): lead 0.00323 d; set-up 5.67 min; execution 0.90;
    # interruptions FAILURES ÷ 8760 × GPU-hours, each losing PLATFORM_LOST_EACH hours
    wall = HOURS_AT_40 / 256 / 0.90
    lost = FAILURES / 8760 * HOURS_AT_40 * PLATFORM_LOST_EACH
    assert platform["training_days"]["expected"] == pytest.approx(wall / 24, abs=0.01)
    assert platform["hours_lost"]["expected"] == pytest.approx(lost, abs=0.01)
    assert platform["calendar_days"]["expected"] == pytest.approx(
        PLATFORM_LEAD_DAYS + (PLATFORM_SETUP_MINUTES / 60 + wall + lost) / 24, abs=0.01
    )


def test_costs_are_positive_ranges(client):
    doc = plan(client).json()
    assert len(doc["items"]) == 3
    for item in doc["items"]:
        assert item["error"] is None
        for key in ("total_cost", "gpu_hours_billed", "calendar_days", "training_days"):
            assert item[key]["low"] > 0 and ordered(item[key]), (item["option"], key)
        assert item["gpu_hours_billed"]["low"] >= doc["gpu_hours"]["low"]
    # platform by hand at MFU 0.4 (expected): 12.5 CNY per GPU-hour at full load
    platform = items(plan(client, mfu=0.4).json())["ai_compute_platform"]
    lost = FAILURES / 8760 * HOURS_AT_40 * PLATFORM_LOST_EACH
    billed = HOURS_AT_40 / 0.90 + lost * 256
    assert platform["gpu_hours_billed"]["expected"] == pytest.approx(billed, abs=0.1)
    assert platform["total_cost"]["expected"] == pytest.approx(12.5 * billed, rel=1e-5)


def test_options_profile_settings_carry_over(client):
    base = items(plan(client, mfu=0.4).json())
    on_demand = items(plan(client, mfu=0.4, rental_plan="on_demand").json())
    reserved = items(plan(client, mfu=0.4, rental_plan="reserved_1y").json())
    # a two-month run on a one-year reservation pays for the whole year
    assert (
        reserved["rented_gpu_instances"]["total_cost"]["low"] > on_demand["rented_gpu_instances"]["total_cost"]["high"]
    )
    pro = items(plan(client, mfu=0.4, ops_team="professional").json())
    assert pro["self_built_cluster"]["hours_lost"]["expected"] < base["self_built_cluster"]["hours_lost"]["expected"]


class BrokenOption:
    sdk = ">=4,<5"

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [OptionSpec("broken_option", "Broken", "Raises on every assessment.", "0.1")]

    @hookimpl
    def compute_advisor_assess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
        if option != "broken_option":
            return None
        raise RuntimeError("boom")


class ThirdPartyOption:
    """A third party's option: rented instances under another key."""

    sdk = ">=4,<5"

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [OptionSpec("partner_cloud", "Partner cloud", "Rented instances from a partner.", "0.1")]

    @hookimpl
    def compute_advisor_assess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
        if option != "partner_cloud":
            return None
        plugin = rented_gpu_instances.plugin  # an SDK v2 plugin reusing the built-in's kernel
        kernel = plugin.kernel(plugin.spec, knowledge, profile.currency, profile.as_of, lambda *_: None)
        return dataclasses.replace(kernel.assess(profile), option="partner_cloud")


def test_failing_plugin_is_isolated_and_third_party_options_are_planned(seeded_db):
    host = create_option_host([BrokenOption(), ThirdPartyOption()])
    with make_client(seeded_db, option_host=host) as c:
        r = plan(c, mfu=0.4)
    assert r.status_code == 200, r.text
    by = items(r.json())
    assert set(by) == {
        "ai_compute_platform",
        "broken_option",
        "partner_cloud",
        "rented_gpu_instances",
        "self_built_cluster",
    }
    assert by["broken_option"]["error_code"] == "option-failed"
    assert "boom" not in r.text  # the exception is logged, never answered
    assert by["broken_option"]["total_cost"] is None
    assert by["partner_cloud"]["error"] is None
    assert by["partner_cloud"]["total_cost"] == by["rented_gpu_instances"]["total_cost"]
    assert by["self_built_cluster"]["error"] is None
