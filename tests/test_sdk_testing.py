"""``app.sdk.testing``: the snapshot of a seed directory is the one the service builds from it, a bad
seed file is refused with every problem named, ``as_of`` dates the snapshot, and ``assess`` prices a
built-in option as the service does (the golden answers recorded it)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest
from conftest import SEEDS
from seed_snapshot import knowledge_from_seeds

from app.core.errors import UnknownReference
from app.sdk import Knowledge
from app.sdk.testing import SeedError, assess, knowledge
from plugins.ai_compute_platform import plugin as platform
from plugins.rented_gpu_instances import plugin as rented
from plugins.self_built_cluster import plugin as own

#: a price comparison the golden answers hold whole (tests/test_golden.py)
GOLDEN = Path(__file__).parent / "data" / "golden" / "full" / "comparison-0000.txt"
GOLDEN_PROFILE = {"gpus": 4, "utilization": 0.05, "horizon_years": 3, "as_of": "2026-12-01", "currency": "CNY"}


@pytest.fixture(scope="module")
def reference() -> Knowledge:
    return knowledge(SEEDS, as_of=dt.date(2025, 1, 1))


def test_the_snapshot_is_the_one_the_service_builds(reference: Knowledge) -> None:
    built = knowledge_from_seeds()
    assert reference.prices == built.prices
    assert reference.assumptions == built.assumptions
    assert reference.gpus == built.gpus
    every = {f.name for f in dataclasses.fields(Knowledge) if f.init} - {"version", "created_at"}
    assert all(getattr(reference, name) == getattr(built, name) for name in every)


def test_a_bad_seed_file_is_refused_naming_every_problem(tmp_path: Path) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(
        "assumptions:\n"
        '  - {option: "*", key: queue_days, unit: days, low: 2, high: 1, source: s, source_quality: verified}\n'
        '  - {option: "*", key: queue_hours, unit: hours, low: 1, high: 2, source: s, source_quality: assumption}\n',
        encoding="utf-8",
    )
    with pytest.raises(SeedError) as refused:
        knowledge(tmp_path)
    assert [(p.line, p.field_name) for p in refused.value.problems] == [(2, "low"), (3, "rationale")]
    assert "field 'low': low (2) is above high (1)" in str(refused.value)


def test_as_of_is_the_day_the_snapshot_is_taken() -> None:
    hardware = SEEDS / "10-hardware.yaml"
    assert knowledge(hardware, as_of=dt.date(2026, 3, 1)).created_at == dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    assert knowledge(hardware).created_at.date() == dt.datetime.now(dt.UTC).date()


def test_assess_prices_the_built_ins_as_the_service_does(reference: Knowledge) -> None:
    answered = {i["option"]: i for i in json.loads(GOLDEN.read_text(encoding="utf-8"))["items"]}
    found = assess(reference, GOLDEN_PROFILE, own, rented, platform)
    assert set(found) == set(answered)
    for option, assessment in found.items():
        cost = assessment.cost
        assert round(cost.total.expected, 2) == answered[option]["total_cost"]["expected"], option
        assert round(cost.annual.expected, 2) == answered[option]["annual_cost"]["expected"], option
    # the own cluster rents on demand while it is installed: the kernel of the option given that declares
    # the role (``bridges_lead_time``); alone, it has no bridge and the team waits for its cluster
    alone = assess(reference, GOLDEN_PROFILE, own)["self_built_cluster"]
    assert alone.cost.total.expected < found["self_built_cluster"].cost.total.expected
    assert alone.efficiency.productive_share.expected < found["self_built_cluster"].efficiency.productive_share.expected


def test_assess_refuses_an_option_field_no_plugin_declares(reference: Knowledge) -> None:
    with pytest.raises(UnknownReference, match="no option declares the profile field 'hpc_queue'"):
        assess(reference, {**GOLDEN_PROFILE, "option_fields": {"hpc_queue": "priority"}}, rented)
