"""The region hierarchy and the availability rules: what the seed loader refuses (naming the file, the
line and the field), the snapshot's two lookups (``region_chain``, ``within``), and the catalog reads
``GET /v1/regions`` and ``GET /v1/availability-rules`` on SQLite and PostgreSQL (docs/price-books.md,
"Regions" and "Availability rules")."""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from seed_snapshot import SEEDS, knowledge_from_seeds

from app.core.errors import MissingKnowledge
from app.core.knowledge import Knowledge, Region
from app.kb import seeds

REGIONS = "47-regions.yaml"
OFFERS = "41-offers-hyperscalers.yaml"
PLATFORMS = "44-platforms.yaml"
RULES = "48-availability-rules.yaml"
PROBLEM_JSON = "application/problem+json"


def copy_seeds(tmp_path: Path) -> Path:
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    return target


def edit(path: Path, change: Any) -> None:
    """Rewrite a seed file after ``change(doc)``."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=160), encoding="utf-8")


def line_of(path: Path, needle: str) -> int:
    """The line of ``path`` that starts the record whose first key line contains ``needle``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    hit = next(i for i, text in enumerate(lines) if needle in text)
    while not lines[hit].startswith("- "):
        hit -= 1
    return hit + 1


# ---- what the loader refuses ---------------------------------------------------------------------


def test_a_price_row_in_an_unknown_region_is_refused_with_its_file_and_line(tmp_path: Path) -> None:
    path = copy_seeds(tmp_path)

    def move(doc: dict[str, Any]) -> None:
        doc["prices"][0]["region"] = "mars-1"

    edit(path / OFFERS, move)
    with pytest.raises(seeds.SeedError) as caught:
        seeds.read_seeds(path)
    message = str(caught.value)
    assert f"{OFFERS}: prices" in message and "field 'region': unknown region 'mars-1'" in message, message
    assert f"(line {line_of(path / OFFERS, 'option: rented_gpu_instances')})" in message, message


def test_a_row_tied_to_no_region_is_accepted() -> None:
    """``*`` (a closed AWS Savings Plan row) is not a region: it matches every filter, like ``global``."""
    kb = knowledge_from_seeds()
    assert any(p.region == "*" for p in kb.prices)
    assert all(p.region == "*" or p.region in kb.regions for p in kb.prices)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("interconnect", "nvlink", "field 'interconnect'"),
        ("billing", "per_token", "field 'billing'"),
        ("plan", "Reserved-1Y", "field 'plan'"),
    ],
)
def test_an_unknown_interconnect_billing_or_plan_spelling_is_refused(
    tmp_path: Path, field: str, value: str, expected: str
) -> None:
    path = copy_seeds(tmp_path)

    def spoil(doc: dict[str, Any]) -> None:
        doc["prices"][0][field] = value

    edit(path / PLATFORMS, spoil)
    with pytest.raises(seeds.SeedError, match=re.escape(expected)) as caught:
        seeds.read_seeds(path)
    assert f"{PLATFORMS}: prices #1" in str(caught.value), caught.value
    # the first price row's line (the file's assumptions come first)
    first = (path / PLATFORMS).read_text(encoding="utf-8").splitlines().index("prices:") + 2
    assert str(caught.value).endswith(f"(line {first})"), caught.value


def test_a_region_chain_that_does_not_end_at_global_is_refused(tmp_path: Path) -> None:
    """Europe made to lie in Germany, which lies in Europe: a cycle, never reaching global."""
    path = copy_seeds(tmp_path)

    def loop(doc: dict[str, Any]) -> None:
        europe = next(r for r in doc["regions"] if r["key"] == "europe")
        europe["parent"] = "DE"

    edit(path / REGIONS, loop)
    with pytest.raises(seeds.SeedError) as caught:
        seeds.read_seeds(path)
    message = str(caught.value)
    assert "does not end at global" in message and "field 'parent'" in message, message
    assert re.search(rf"{REGIONS}: regions \S+: field .parent.: .* \(line \d+\)$", message), message


@pytest.mark.parametrize(
    ("key", "parent", "expected"),
    [
        ("us-east-1", "north_america", "a provider_region lies in a country, 'north_america' is a continent"),
        ("US-TX", "atlantis", "field 'parent': unknown region 'atlantis'"),
    ],
)
def test_a_region_in_the_wrong_kind_of_parent_or_an_unknown_one_is_refused(
    tmp_path: Path, key: str, parent: str, expected: str
) -> None:
    path = copy_seeds(tmp_path)

    def move(doc: dict[str, Any]) -> None:
        next(r for r in doc["regions"] if r["key"] == key)["parent"] = parent

    edit(path / REGIONS, move)
    with pytest.raises(seeds.SeedError, match=re.escape(expected)):
        seeds.read_seeds(path)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"key": "Texas", "kind": "subdivision", "parent": "US"}, "field 'key': 'Texas' is not the key of a"),
        ({"key": "world", "kind": "continent", "parent": None}, "field 'parent'"),
        ({"key": "DE-BY", "kind": "subdivision", "parent": "DE", "provider": "aws"}, "field 'provider'"),
    ],
)
def test_a_region_record_must_have_the_shape_of_its_kind(tmp_path: Path, record: dict[str, Any], expected: str) -> None:
    path = copy_seeds(tmp_path)

    def add(doc: dict[str, Any]) -> None:
        doc["regions"].append({"name": "x", "source": "test", **record})

    edit(path / REGIONS, add)
    with pytest.raises(seeds.SeedError, match=re.escape(expected)):
        seeds.read_seeds(path)


def test_an_availability_rule_names_a_known_jurisdiction_and_does_not_overlap(tmp_path: Path) -> None:
    path = copy_seeds(tmp_path)
    edit(path / RULES, lambda doc: doc["availability_rules"][0].update(jurisdiction="XX"))
    with pytest.raises(seeds.SeedError, match=r"field 'jurisdiction': unknown region 'XX'") as caught:
        seeds.read_seeds(path)
    assert f"{RULES}: availability_rules" in str(caught.value) and "(line " in str(caught.value)

    path = copy_seeds(tmp_path / "again")
    edit(path / RULES, lambda doc: doc["availability_rules"][0].update(valid_to=None))
    with pytest.raises(seeds.SeedError, match=r"field 'valid_to': the period from 2022-08-26 overlaps the one from"):
        seeds.read_seeds(path)


# ---- the snapshot's lookups ------------------------------------------------------------------------


def test_a_region_chain_runs_through_country_and_continent_to_global() -> None:
    kb = knowledge_from_seeds()
    assert kb.region_chain("us-east-1") == ("us-east-1", "US", "north_america", "global")
    assert kb.region_chain("US-TX") == ("US-TX", "US", "north_america", "global")
    assert kb.region_chain("cn-shanghai") == ("cn-shanghai", "CN", "asia", "global")
    assert kb.region_chain("europe-west4") == ("europe-west4", "NL", "europe", "global")
    assert kb.region_chain("global") == ("global",)
    with pytest.raises(MissingKnowledge, match="unknown region 'mars-1'"):
        kb.region_chain("mars-1")


@pytest.mark.parametrize(
    ("region", "filter_region", "inside"),
    [
        ("us-east-1", "us-east-1", True),
        ("us-east-1", "US", True),
        ("us-east-1", "north_america", True),
        ("us-east-1", "global", True),
        ("us-east-1", "europe", False),
        ("US", "us-east-1", False),  # a country row is not inside one of its provider regions
        ("US-TX", "US", True),
        ("eastus", "US-VA", False),  # provider regions lie in their country, not in a subdivision
        ("global", "CN", True),  # a global row matches every filter
        ("*", "us-west-2", True),  # so does a row tied to no region
        ("cn-beijing", "US", False),
    ],
)
def test_within_matches_a_row_to_every_filter_on_its_chain(region: str, filter_region: str, inside: bool) -> None:
    assert knowledge_from_seeds().within(region, filter_region) is inside


def test_every_region_a_price_row_names_is_in_the_hierarchy() -> None:
    kb = knowledge_from_seeds()
    for p in kb.prices:
        if p.region != "*":
            assert kb.region_chain(p.region)[-1] == "global", p


def test_a_snapshot_refuses_a_hierarchy_with_a_cycle() -> None:
    """The loader refuses it first; the snapshot does not loop for ever either."""
    regions = {
        "global": Region("global", "Global", "global", None, None, "test"),
        "a": Region("a", "A", "continent", "b", None, "test"),
        "b": Region("b", "B", "country", "a", None, "test"),
    }
    with pytest.raises(ValueError, match="does not end at global"):
        Knowledge(
            version="kv-test",
            created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            gpus={},
            servers={},
            prices=(),
            assumptions={},
            rules=(),
            regions=regions,
        )


def test_the_export_controls_apply_by_date() -> None:
    """H100 to China: a licence from 2022-08-26, denied from 2022-10-07, case by case from 2026-01-15;
    B200 never; nothing for a US buyer."""
    kb = knowledge_from_seeds()

    def effect(gpu: str, place: str, day: dt.date) -> str | None:
        found = [a for a in kb.availability if a.gpu_model == gpu and a.jurisdiction in kb.region_chain(place)]
        current = [a.effect for a in found if a.valid_on(day)]
        assert len(current) <= 1, (gpu, place, day, current)
        return current[0] if current else None

    assert effect("h100_sxm", "CN", dt.date(2022, 8, 1)) is None
    assert effect("h100_sxm", "CN", dt.date(2022, 9, 1)) == "licence_required"
    assert effect("h100_sxm", "CN", dt.date(2024, 6, 1)) == "unavailable"
    assert effect("h100_sxm", "CN", dt.date(2026, 6, 1)) == "licence_required"
    assert effect("h100_sxm", "HK", dt.date(2024, 6, 1)) == "unavailable"
    assert effect("h100_sxm", "MO", dt.date(2023, 6, 1)) is None  # Macau from the October 2023 rules
    assert effect("h800_sxm", "CN", dt.date(2023, 6, 1)) is None
    assert effect("h800_sxm", "CN", dt.date(2026, 6, 1)) == "unavailable"
    assert effect("h20", "CN", dt.date(2025, 5, 1)) == "licence_required"
    assert effect("b200", "CN", dt.date(2026, 6, 1)) == "unavailable"
    assert effect("h100_sxm", "US", dt.date(2026, 6, 1)) is None
    assert all(kb.regions[a.jurisdiction].kind == "country" for a in kb.availability)
    weak = {(a.gpu_model, a.valid_from) for a in kb.availability if a.source_quality == "weak"}
    assert ("h200_sxm", dt.date(2026, 1, 15)) in weak  # what followed the January 2026 rule is unclear


# ---- the catalog ---------------------------------------------------------------------------------


def ok(r: Any) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def test_regions_list_the_hierarchy_root_first_and_filter(client: Any) -> None:
    doc = ok(client.get("/v1/regions", params={"limit": 500}))
    items = doc["items"]
    assert items[0] == {**items[0], "key": "global", "kind": "global", "parent": None}
    assert doc["total"] == len(items) >= 60
    by_key = {r["key"]: r for r in items}
    assert by_key["us-east-1"]["parent"] == "US" and by_key["us-east-1"]["provider"] == "aws"
    assert by_key["us-central1"]["provider"] is None  # Google's and Nebius's
    countries = ok(client.get("/v1/regions", params={"kind": "country", "limit": 500}))["items"]
    assert {"US", "CN", "HK", "MO", "DE"} <= {r["key"] for r in countries}
    assert all(r["kind"] == "country" for r in countries)
    us = ok(client.get("/v1/regions", params={"parent": "US", "limit": 500}))["items"]
    assert {"us-east-1", "eastus", "US-TX"} <= {r["key"] for r in us}
    assert all(r["parent"] == "US" for r in us)


def test_availability_rules_filter_by_gpu_jurisdiction_and_date(client: Any) -> None:
    every = ok(client.get("/v1/availability-rules", params={"limit": 500}))
    assert every["total"] >= 30
    assert all(r["source"] and r["rationale"] for r in every["items"])
    params = {"gpu_model": "h100_sxm", "jurisdiction": "CN", "as_of": "2024-06-01"}
    then = ok(client.get("/v1/availability-rules", params=params))["items"]
    assert [(r["jurisdiction"], r["effect"]) for r in then] == [("CN", "unavailable")]
    # a buyer in a Chinese provider region is under China's rules
    inside = ok(client.get("/v1/availability-rules", params={**params, "jurisdiction": "cn-shanghai"}))["items"]
    assert inside == then
    assert ok(client.get("/v1/availability-rules", params={"jurisdiction": "US"}))["total"] == 0


def test_an_unknown_jurisdiction_is_a_not_found_problem_naming_it(client: Any) -> None:
    r = client.get("/v1/availability-rules", params={"jurisdiction": "XX"})
    assert r.status_code == 404, r.text
    assert r.headers["content-type"].split(";")[0] == PROBLEM_JSON
    assert r.json()["detail"] == "unknown jurisdiction 'XX' (see /v1/regions)"


def test_offers_and_prices_carry_interconnect_billing_and_kw_tiers(client: Any) -> None:
    platform = ok(client.get("/v1/offers", params={"option": "ai_compute_platform", "gpu_model": "h100_sxm"}))
    billing = {o["subject"]: o["billing"] for o in platform["items"]}
    assert billing["ml.p5.48xlarge (SageMaker training job)"] == "job_seconds"
    assert billing["ml.p5.48xlarge (HyperPod cluster)"] == "held_cluster"
    p5 = ok(client.get("/v1/offers", params={"provider": "aws", "gpu_model": "h100_sxm", "region": "us-east-1"}))
    assert {o["interconnect"] for o in p5["items"] if o["subject"] == "p5.48xlarge"} == {"efa"}
    colo = ok(client.get("/v1/prices", params={"item": "colocation", "region": "US", "limit": 100}))["items"]
    assert {o["min_kw"] for o in colo} == {0.0, 250.0}
    r = client.get("/v1/offers", params={"provider": "aws", "region": "us-east-1"}, headers={"Accept": "text/csv"})
    assert r.status_code == 200, r.text
    header = r.content.decode("utf-8-sig").splitlines()[0].split(",")
    assert header[-4:] == ["interconnect", "billing", "min_kw", "max_term_days"]
