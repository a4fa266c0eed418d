"""Data residency by location (docs/methodology.md "Data residency by location"): each data_security
level says where data may sit (anywhere, the buyer's country or its bloc, the buyer's premises); rented
and platform offers elsewhere are infeasible with the reason ``residency``; a price that holds in every
region of its provider (OCI's) is stored once with its regions and offered in the region that qualifies,
nearest the buyer. Public facts the tests rest on: OCI's one global price (80 USD an hour for
BM.GPU.H100.8, 10 USD per GPU-hour), Frankfurt in Germany, Germany in the EU/EEA, South Africa outside it.
On the seed snapshot, and through the API on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from seed_snapshot import SEEDS, knowledge_from_seeds

from app.core.types import Assessment, Profile
from app.host.manager import create_option_host
from app.kb import seeds
from app.kb.price_import import to_yaml
from app.kb.seeds import PriceSeed

KB = knowledge_from_seeds()
HOST = create_option_host()
AS_OF = dt.date(2026, 12, 3)
RENTED, PLATFORM, OWN = "rented_gpu_instances", "ai_compute_platform", "self_built_cluster"
#: OCI's public list price of BM.GPU.H100.8 (the SkyPilot catalog at the commit the seeds cite): 80 USD an hour
OCI_H100_PER_GPU_HOUR = 80 / 8
EEA = {"AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT", "LV", "LT", "LU"}
EEA |= {"MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE", "IS", "LI", "NO"}
BODY = {"gpus": 64, "utilization": 0.6, "horizon_years": 3, "gpu_model": "h100_sxm", "currency": "USD"}


def assess(option: str, **fields: Any) -> Assessment:
    base: dict[str, Any] = {"gpus": 64, "utilization": 0.6, "horizon_years": 3, "as_of": AS_OF}
    base |= {"gpu_model": "h100_sxm", "currency": "USD"}
    return HOST.assess(option, Profile(**{**base, **fields}), KB)


def feasible_offers(a: Assessment) -> list[Any]:
    """The chosen offer (when it breaks nothing) and every feasible alternative."""
    chosen = [a.offer] if a.offer is not None and not any(v.violated is True for v in a.violations) else []
    return chosen + [alt.offer for alt in a.alternatives if alt.feasible]


def country(region: str) -> str | None:
    return KB.country_of(region)


# ---- the seeds: levels, the bloc, a price of many regions ---------------------------------------------


def test_each_level_says_where_data_may_sit() -> None:
    levels = {k: v.data_location for k, v in KB.security_levels.items()}
    assert levels == {"standard": "anywhere", "high": "jurisdiction", "extreme": "premises"}
    assert all(v.rationale and v.source for v in KB.security_levels.values())


def test_the_eea_is_a_bloc_beside_the_chains() -> None:
    eea = KB.regions["eea"]
    assert (eea.kind, eea.parent) == ("bloc", "global")
    assert set(eea.members or ()) == EEA and len(EEA) == 30  # 27 EU member states, Iceland, Liechtenstein, Norway
    assert KB.region_chain("CY") == ("CY", "asia", "global")  # Cyprus keeps its one parent (UN M49)
    assert KB.blocs_of("DE") == ("eea",) and KB.blocs_of("US") == () and KB.blocs_of("GB") == ()
    assert KB.within("eu-frankfurt-1", "eea") and KB.within("CY", "eea")
    assert not KB.within("uk-london-1", "eea") and not KB.within("af-johannesburg-1", "eea")
    assert "eea" not in KB.countries  # a bloc is no buyer jurisdiction
    assert KB.keeps_data_in("eu-paris-1", "DE") and KB.keeps_data_in("eu-frankfurt-1", "DE")
    assert not KB.keeps_data_in("af-johannesburg-1", "DE") and not KB.keeps_data_in("global", "DE")
    assert not KB.keeps_data_in("eu-frankfurt-1", "US") and KB.keeps_data_in("us-ashburn-1", "US")


def test_oci_s_one_price_is_stored_once_and_loaded_in_every_region_it_holds_in() -> None:
    shipped = seeds.read_seeds(SEEDS)
    rows = [p for p in shipped.records["prices"] if isinstance(p, PriceSeed) and p.provider == "oci"]
    assert len(rows) == 5 and all(p.region is None and p.regions and len(p.regions) == 37 for p in rows)
    h100 = next(p for p in rows if p.subject == "BM.GPU.H100.8")
    assert h100.regions is not None and h100.regions[0] == "af-johannesburg-1" and "eu-frankfurt-1" in h100.regions
    loaded = [k for k in shipped.rows("prices") if k[1] == "oci"]
    assert len(loaded) == 5 * 37  # identity per region: one row per region once loaded
    copies = [p for p in KB.prices if p.provider == "oci" and p.subject == "BM.GPU.H100.8"]
    assert {p.region for p in copies} == set(h100.regions)
    assert {p.value.expected for p in copies} == {80.0} and {p.regions for p in copies} == {tuple(h100.regions)}
    assert {country(p.region) for p in copies} >= {"DE", "US", "ZA", "FR", "GB", "JP"}


def test_a_row_of_many_regions_is_written_back_byte_for_byte() -> None:
    text = (SEEDS / "41-offers-hyperscalers.yaml").read_text(encoding="utf-8")
    rows = [PriceSeed.model_validate(r) for r in yaml.safe_load(text)["prices"]]
    assert to_yaml(rows) == text[text.index("\nprices:") + 1 :]
    many = [r for r in rows if r.regions]
    assert many and "  region: null\n  regions:\n  - af-johannesburg-1\n" in to_yaml(many)
    assert "regions:" not in to_yaml([r for r in rows if not r.regions][:3])  # written only where set


def _edited(tmp_path: Path, file: str, change: Any) -> Path:
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    doc = yaml.safe_load((target / file).read_text(encoding="utf-8"))
    change(doc)
    (target / file).write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=160), encoding="utf-8")
    return target


def _oci(doc: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in doc["prices"] if p["provider"] == "oci")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: _oci(d).update(regions=["eu-frankfurt-1", "mars-1"]), "field 'regions': unknown region 'mars-1'"),
        (lambda d: _oci(d).update(regions=["eu-frankfurt-1", "eea"]), "field 'regions': a bloc is no place"),
        (lambda d: _oci(d).update(regions=["eu-paris-1", "eu-paris-1"]), "field 'regions': a region is listed twice"),
        (lambda d: _oci(d).update(regions=None), "field 'region': give the region the price holds in"),
        (lambda d: _oci(d).update(region="us-east-1"), "field 'region': 'us-east-1' is not one of the row's"),
        # the same offer again in one of its regions: the same row there
        (lambda d: d["prices"].append({**_oci(d), "region": "eu-frankfurt-1", "regions": None}), "duplicates"),
        # … or from a later day: the periods overlap there
        (
            lambda d: d["prices"].append(
                {**_oci(d), "region": "eu-frankfurt-1", "regions": None, "valid_from": dt.date(2026, 12, 3)}
            ),
            "the period from 2026-12-02 overlaps the one from 2026-12-03",
        ),
    ],
)
def test_the_loader_refuses_a_bad_list_of_regions(tmp_path: Path, change: Any, expected: str) -> None:
    path = _edited(tmp_path, "41-offers-hyperscalers.yaml", change)
    with pytest.raises(seeds.SeedError) as caught:
        seeds.read_seeds(path)
    assert expected in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: next(r for r in d["regions"] if r["key"] == "eea").update(members=["DE", "europe"]), "no country"),
        (lambda d: next(r for r in d["regions"] if r["key"] == "DE").update(members=["FR"]), "field 'members'"),
        (lambda d: next(r for r in d["regions"] if r["key"] == "eea").update(members=None), "field 'members'"),
    ],
)
def test_a_bloc_lists_countries_and_only_a_bloc_has_members(tmp_path: Path, change: Any, expected: str) -> None:
    path = _edited(tmp_path, "47-regions.yaml", change)
    with pytest.raises(seeds.SeedError) as caught:
        seeds.read_seeds(path)
    assert expected in str(caught.value), str(caught.value)


# ---- the answers ----------------------------------------------------------------------------------


def test_a_german_buyer_at_high_rents_in_germany_or_the_eea_and_gets_oci_frankfurt() -> None:
    a = assess(RENTED, data_security="high", buyer_country="DE")
    assert a.offer is not None and (a.offer.provider, a.offer.region) == ("oci", "eu-frankfurt-1")
    assert not [v for v in a.violations if v.violated is True]
    # 64 GPUs × 8,760 h × 10 USD: OCI's one price, wherever it holds
    assert a.offer.price.expected == 80
    hours = next(line for line in a.cost.breakdown if line.key == "instance_hours")
    assert hours.annual.expected == pytest.approx(64 * 8760 * OCI_H100_PER_GPU_HOUR)  # 5,606,400 USD a year
    for option in (RENTED, PLATFORM):
        for offer in feasible_offers(assess(option, data_security="high", buyer_country="DE")):
            assert country(offer.region) in EEA, (option, offer.provider, offer.region)


def test_an_offer_outside_the_jurisdiction_is_refused_naming_where_it_is() -> None:
    a = assess(RENTED, data_security="high", buyer_country="DE", providers=("oci",), regions=("af-johannesburg-1",))
    assert a.offer is not None and a.offer.region == "af-johannesburg-1"
    said = [str(v.reason) for v in a.violations if v.violated is True]
    assert said == [
        "Oracle Cloud Infrastructure BM.GPU.H100.8, af-johannesburg-1, on demand is in South Africa, but high data "
        "security keeps data in Germany or European Economic Area (EU/EEA)"
    ], said
    unplaced = assess(
        RENTED, data_security="high", buyer_country="DE", providers=("coreweave",), rental_plan="on_demand"
    )
    reasons = [str(v.reason) for v in unplaced.violations if v.violated is True]
    said_so = "names no country its hardware is in, but high data security keeps data in Germany"
    assert any(said_so in r for r in reasons), reasons


def test_a_german_buyer_at_standard_rents_anywhere() -> None:
    a = assess(RENTED, data_security="standard", buyer_country="DE")
    offers = feasible_offers(a)
    assert any(country(o.region) not in EEA for o in offers)  # US regions and global rows stay feasible
    assert not any("keeps data in" in r for alt in a.alternatives for r in map(str, alt.reasons))
    oci = assess(RENTED, data_security="standard", buyer_country="DE", providers=("oci",))
    assert oci.offer is not None and oci.offer.region == "eu-frankfurt-1"  # the nearest of its regions


def test_without_a_buyer_high_filters_no_place_and_says_so() -> None:
    a = assess(RENTED, data_security="high")
    note = (
        "high data security keeps data in the buyer's country or its bloc, but no buyer country was given: "
        "no offer was refused for where it is."
    )
    assert note in [str(n) for n in a.notes]
    assert not any("keeps data in" in r for alt in a.alternatives for r in map(str, alt.reasons))
    oci = assess(RENTED, data_security="high", providers=("oci",))
    assert oci.offer is not None and oci.offer.region == "af-johannesburg-1"  # the first region the row lists
    with_buyer = assess(RENTED, data_security="high", buyer_country="DE")
    assert note not in [str(n) for n in with_buyer.notes]
    assert note not in [str(n) for n in assess(RENTED, data_security="standard").notes]


def test_extreme_keeps_data_on_the_buyer_s_premises() -> None:
    for option in (RENTED, PLATFORM):
        a = assess(option, data_security="extreme", buyer_country="DE")
        assert not feasible_offers(a), option
        assert any(v.violated is True for v in a.violations)
    own = assess(OWN, data_security="extreme", buyer_country="US")
    assert not [v for v in own.violations if v.violated is True]


def test_a_us_buyer_at_high_rents_in_the_us() -> None:
    a = assess(RENTED, data_security="high", buyer_country="US")
    assert a.offer is not None and (a.offer.provider, a.offer.region) == ("oci", "us-ashburn-1")
    for option in (RENTED, PLATFORM):
        for offer in feasible_offers(assess(option, data_security="high", buyer_country="US")):
            assert country(offer.region) == "US", (option, offer.provider, offer.region)


# ---- through the API, on SQLite and PostgreSQL ----------------------------------------------------------


def ok(r: Any) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def test_the_api_offers_oci_frankfurt_to_a_german_buyer_at_high(client: Any) -> None:
    body = {**BODY, "data_security": "high", "buyer_country": "DE"}
    items = {it["option"]: it for it in ok(client.post("/v1/price-comparisons", json=body))["items"]}
    rented = items[RENTED]
    assert (rented["offer"]["provider"], rented["offer"]["region"]) == ("oci", "eu-frankfurt-1")
    us = ok(client.post("/v1/price-comparisons", json={**body, "buyer_country": "US"}))["items"]
    assert next(it for it in us if it["option"] == RENTED)["offer"]["region"] == "us-ashburn-1"
    nobody = ok(client.post("/v1/recommendations?store=false", json={**BODY, "data_security": "high"}))
    reasons = [r for item in nobody["ranking"] for r in item["reasons"]]
    assert any("no buyer country was given: no offer was refused for where it is" in r for r in reasons)


def test_the_catalog_lists_a_price_of_many_regions_by_region_and_the_bloc(client: Any) -> None:
    params = {"provider": "oci", "gpu_model": "h100_sxm", "region": "eu-frankfurt-1"}
    (frankfurt,) = ok(client.get("/v1/offers", params=params))["items"]
    assert frankfurt["region"] == "eu-frankfurt-1" and frankfurt["low"] == 80
    assert len(frankfurt["regions"]) == 37 and frankfurt["regions"][0] == "af-johannesburg-1"
    every = ok(client.get("/v1/offers", params={"provider": "oci", "gpu_model": "h100_sxm", "limit": 100}))
    assert every["total"] == 37
    blocs = ok(client.get("/v1/regions", params={"kind": "bloc"}))["items"]
    assert [(b["key"], len(b["members"])) for b in blocs] == [("eea", 30)]


def test_an_unknown_data_security_level_names_the_field_and_the_levels(client: Any) -> None:
    r = client.post("/v1/price-comparisons", json={**BODY, "data_security": "secret"})
    # a value outside the field's list fails the request schema: 400, like every other closed list of a profile
    # (tests/test_api_errors.py), naming the field and every level
    assert r.status_code == 400, r.text
    problem = r.json()
    assert problem["field"] == "data_security", problem
    assert problem["detail"] == "data_security: Input should be 'standard', 'high' or 'extreme'", problem
