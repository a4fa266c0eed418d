"""Rules that bind the right buyer (methodology 4.0, docs/methodology.md "Rules by buyer"): availability rules
bind the buyer (``buyer_country``) or the place the hardware is, never the region ``global``; China's import
side (customs refusing the H200 from 2026-01-13, guidance against buying the H20); grey-market quotes never
price a chosen own cluster; the catalog's scope and kind; the seed validator. Engine figures on the seeds,
the API on SQLite and PostgreSQL.

Public facts the tests are built from (each a seed row's source):
- US export rules bind buyers in China, Hong Kong and Macau; none binds a US buyer (BIS rules of
  2022-10-07, 2023-10-17 and 2026-01-15).
- China's customs told agents the H200 is 'not permitted' (Reuters, 2026-01-13/14); approvals from
  2026-01-28 went to three named platforms only (Reuters, 2026-01-28).
- Chinese regulators discouraged H20 purchases from August 2025 (Bloomberg, 2025-08-12): guidance, not a ban.
- The only China-bought H100 server quote is a 2024 dealer's grey-market quote (Huxiu).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from litestar.testing import TestClient
from seed_snapshot import SEEDS, knowledge_from_seeds

from app.core.knowledge import Knowledge
from app.core.text import Msg
from app.core.types import Assessment, Profile
from app.engine import decision
from app.host.manager import create_option_host
from app.kb import seeds

Client = TestClient  # type: ignore[type-arg]
KB = knowledge_from_seeds()
HOST = create_option_host()
AS_OF = dt.date(2026, 12, 3)
OWN, RENTED, PLATFORM = "self_built_cluster", "rented_gpu_instances", "ai_compute_platform"
RULES = "48-availability-rules.yaml"


def assess(option: str, kb: Knowledge = KB, **fields: Any) -> Assessment:
    base: dict[str, Any] = {"gpus": 64, "utilization": 0.6, "horizon_years": 3, "as_of": AS_OF}
    return HOST.assess(option, Profile(**{**base, **fields}), kb)


def codes(text: Any) -> set[str]:
    """Every message code of a sentence and the sentences nested in it."""
    if not isinstance(text, Msg):
        return set()
    nested = [v for v in text.params.values() if isinstance(v, Msg)]
    return {text.code, *(c for n in nested for c in codes(n))}


def every_reason(a: Assessment) -> list[str]:
    """The chosen offer's broken constraints and every listed alternative's reasons."""
    return [*decision.broken(a), *(r for alt in a.alternatives for r in alt.reasons)]


# ---- a US buyer -----------------------------------------------------------------------------------


def test_a_us_buyer_of_512_b200_sees_no_export_reason_on_any_offer() -> None:
    """No US rule binds a US buyer, and an offer priced in ``global`` lies in no jurisdiction: Lambda's
    and CoreWeave's B200 (priced ``global``) are not 'export-controlled for global' any more."""
    a = assess(RENTED, gpus=512, gpu_model="b200", currency="USD", buyer_country="US", utilization=0.9)
    offers = [a.offer, *(alt.offer for alt in a.alternatives)]
    assert {"lambda", "coreweave"} <= {o.provider for o in offers if o is not None}
    assert any(o is not None and o.region == "global" for o in offers)
    said = [*every_reason(a), *a.notes]
    assert not any("export-controlled" in s or "export licence" in s or "for global" in s for s in said), said
    assert not any({"violation.export-controlled", "violation.import-restricted"} & codes(s) for s in said)


@pytest.mark.parametrize("option", [RENTED, PLATFORM, OWN])
@pytest.mark.parametrize("gpu_model", ["h100_sxm", "h200_sxm"])
def test_a_us_buyer_needs_no_export_licence(option: str, gpu_model: str) -> None:
    a = assess(option, gpu_model=gpu_model, currency="USD", buyer_country="US")
    assert not any("export licence" in n for n in a.notes), a.notes
    assert not any(codes(r) & {"violation.export-controlled", "violation.not-procurable"} for r in decision.broken(a))


# ---- no buyer -------------------------------------------------------------------------------------


def test_without_a_buyer_no_rule_for_buyers_applies_and_the_answer_says_so() -> None:
    """B200 is unavailable for buyers in China; without ``buyer_country`` no buyer rule binds, a
    ``global`` offer meets no rule of a place, and a note names what was not applied."""
    a = assess(RENTED, gpus=512, gpu_model="b200", currency="USD", utilization=0.9)
    assert not any(codes(r) & {"violation.export-controlled"} for r in every_reason(a))
    notes = [n for n in a.notes if isinstance(n, Msg) and n.code == "note.no_buyer_rules"]
    assert len(notes) == 1 and "China (mainland)" in notes[0] and " CN" not in notes[0], a.notes
    own = assess(OWN, gpu_model="h100_sxm", currency="USD")
    assert not any("export licence" in n for n in own.notes)
    with_buyer = assess(RENTED, gpus=512, gpu_model="b200", currency="USD", utilization=0.9, buyer_country="DE")
    assert not any(isinstance(n, Msg) and n.code == "note.no_buyer_rules" for n in with_buyer.notes)


# ---- a Chinese buyer ------------------------------------------------------------------------------


def test_a_chinese_buyer_s_own_h100_cluster_is_never_priced_on_a_grey_market_quote() -> None:
    """The only H100 server bought in China is a 2024 dealer's grey-market quote (2.7 M CNY for 8 GPUs): the
    own cluster is infeasible, not procurable, naming the quote; it never comes out as a priced option."""
    grey = [p for p in KB.prices if p.source_quality == "grey_market"]
    assert [(p.gpu_model, p.region, float(p.value.expected)) for p in grey] == [("h100_sxm", "CN", 2_700_000.0)]
    a = assess(OWN, gpu_model="h100_sxm", currency="CNY", buyer_country="CN")
    broken = decision.broken(a)
    assert a.offer is not None and a.offer.region == "CN" and broken
    (reason,) = [r for r in broken if "violation.not-procurable" in codes(r)]
    assert "procurement.grey-market" in codes(reason)
    assert "cannot be bought legally in China (mainland): its only price is a grey-market quote of 2024-06-01" in reason
    assert a.offer.source == grey[0].source and a.offer.source_quality == "grey_market"  # cited with the offer
    # the whole answer: the own cluster is never the recommended option
    profile = Profile(gpus=64, utilization=0.6, horizon_years=3, as_of=AS_OF, gpu_model="h100_sxm", buyer_country="CN")
    outcomes = decision.assess_all(list(HOST.options), lambda o: HOST.assess(o, profile, KB))
    result = decision.decide(profile, outcomes, KB, decision.default_weights(KB))
    assert result.recommended_option != OWN
    own = next(r for r in result.ranking if r.option == OWN)
    assert not own.feasible


def test_without_a_buyer_a_grey_market_quote_is_listed_but_never_chosen() -> None:
    a = assess(OWN, gpu_model="h100_sxm", currency="USD")
    assert not decision.broken(a) and a.offer is not None and a.offer.region == "US"
    listed = [alt for alt in a.alternatives if alt.offer.region == "CN"]
    assert listed and all(not alt.feasible for alt in listed)
    assert all(any("grey-market quote" in r for r in alt.reasons) for alt in listed)


def test_h200_cannot_be_imported_into_china_so_a_chinese_buyer_s_own_cluster_is_not_procurable() -> None:
    """No H200 server is priced in China; one bought elsewhere would be imported, and China's customs refuse
    it (2026-01-13, approvals from 2026-01-28 only for three named platforms): not procurable, with the
    import rule and its source — not 'no offer'."""
    a = assess(OWN, gpu_model="h200_sxm", currency="CNY", buyer_country="CN")
    (reason,) = [r for r in decision.broken(a) if "violation.not-procurable" in codes(r)]
    assert "violation.import-restricted" in codes(reason)
    assert "H200 SXM may not be imported into China (mainland) (Reuters report of 2026-01-28" in reason
    assert " CN " not in reason and "global" not in reason
    # the US export side only needs a licence since 2026-01-15: a note, not a refusal
    assert any("needs an export licence for China (mainland)" in n for n in a.notes)
    # a German buyer imports no H200 into China: no offer bought in Germany, and none refused, as before
    with pytest.raises(Exception, match="no offer"):
        assess(OWN, gpu_model="h200_sxm", currency="EUR", buyer_country="DE")


def _h200_in_china() -> Knowledge:
    """The seeds with one rented H200 offer moved into a Chinese region (no such offer is sold: the test
    asks what the location rule does to one)."""
    row = next(
        p
        for p in KB.prices
        if p.option == RENTED and p.gpu_model == "h200_sxm" and p.provider == "aws" and p.plan == "on_demand"
    )
    moved = dataclasses.replace(row, region="cn-shanghai", provider="alibaba_cloud")
    return dataclasses.replace(KB, prices=(*KB.prices, moved))


@pytest.mark.parametrize("buyer", [None, "US", "CN"])
def test_an_h200_in_china_on_2026_06_01_is_import_restricted_for_every_buyer(buyer: str | None) -> None:
    """China's customs rule binds the place (scope ``location``): hardware in China, whoever rents it."""
    kb = _h200_in_china()
    day = dt.date(2026, 6, 1)
    a = assess(RENTED, kb, gpus=8, gpu_model="h200_sxm", currency="USD", providers=("alibaba_cloud",), as_of=day,
               buyer_country=buyer)  # fmt: skip
    (reason,) = [r for r in decision.broken(a) if "violation.import-restricted" in codes(r)]
    assert str(reason).startswith("H200 SXM may not be imported into China (mainland) (Reuters report of 2026-01-28")


def test_a_chinese_buyer_renting_h200_abroad_imports_nothing() -> None:
    a = assess(RENTED, gpus=8, gpu_model="h200_sxm", currency="USD", buyer_country="CN", as_of=dt.date(2026, 6, 1))
    assert not any("violation.import-restricted" in codes(r) for r in every_reason(a))
    assert any("needs an export licence for China (mainland)" in n for n in a.notes)


def test_h20_purchases_are_discouraged_in_china_said_not_refused() -> None:
    """Guidance against buying the H20 (from 2025-08-12) is a note for a Chinese buyer; the China-bought H20
    server (a legal 2024 quote, 1.2 M CNY for 8) stays feasible. Before the guidance: no note."""
    a = assess(OWN, gpu_model="h20", currency="CNY", buyer_country="CN")
    assert not decision.broken(a) and a.offer is not None and a.offer.region == "CN"
    (note,) = [n for n in a.notes if isinstance(n, Msg) and n.code == "note.discouraged"]
    assert note.startswith("Authorities in China (mainland) discourage buying H20") and "Bloomberg" in note
    before = assess(OWN, gpu_model="h20", currency="CNY", buyer_country="CN", as_of=dt.date(2025, 8, 1))
    assert not any(isinstance(n, Msg) and n.code == "note.discouraged" for n in before.notes)
    us = assess(RENTED, gpus=8, gpu_model="h20", currency="USD", buyer_country="US")
    assert not any(isinstance(n, Msg) and n.code == "note.discouraged" for n in us.notes)


def test_the_rules_are_dated_and_none_names_global() -> None:
    def effects(gpu: str, day: dt.date) -> set[tuple[str, str, str]]:
        return {(r.kind, r.scope, r.effect) for r in KB.availability if r.gpu_model == gpu and r.jurisdiction == "CN"
                and r.valid_on(day)}  # fmt: skip

    assert effects("h200_sxm", dt.date(2026, 1, 10)) == {("export", "buyer", "unavailable")}
    assert effects("h200_sxm", dt.date(2026, 1, 14)) == {("export", "buyer", "unavailable"),
                                                         ("import", "location", "unavailable")}  # fmt: skip
    assert effects("h200_sxm", dt.date(2026, 6, 1)) == {("export", "buyer", "licence_required"),
                                                        ("import", "location", "unavailable")}  # fmt: skip
    assert effects("h20", dt.date(2025, 9, 1)) == {("export", "buyer", "licence_required"),
                                                   ("import", "buyer", "discouraged")}  # fmt: skip
    assert all(KB.regions[r.jurisdiction].kind in ("country", "bloc") for r in KB.availability)
    assert {r.kind for r in KB.availability if r.jurisdiction != "CN"} == {"export"}  # HK, MO: own customs


# ---- the seed validator ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jurisdiction", "expected"),
    [
        ("global", "'global' is not a jurisdiction: a rule names a country or bloc"),
        ("asia", "'asia' is a continent, not a jurisdiction: a rule names a country or bloc"),
    ],
)
def test_a_rule_of_global_or_a_continent_is_refused(tmp_path: Path, jurisdiction: str, expected: str) -> None:
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    path = target / RULES
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["availability_rules"][0]["jurisdiction"] = jurisdiction
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=160), encoding="utf-8")
    with pytest.raises(seeds.SeedError, match="field 'jurisdiction'") as caught:
        seeds.read_seeds(target)
    assert expected in str(caught.value) and RULES in str(caught.value)


def test_a_rule_without_scope_or_kind_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "seeds"
    shutil.copytree(SEEDS, target)
    path = target / RULES
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    del doc["availability_rules"][0]["scope"]
    doc["availability_rules"][1]["kind"] = "embargo"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=160), encoding="utf-8")
    with pytest.raises(seeds.SeedError) as caught:
        seeds.read_seeds(target)
    assert "field 'scope'" in str(caught.value) and "field 'kind'" in str(caught.value)


# ---- the API, on SQLite and PostgreSQL ------------------------------------------------------------


def ok(r: Any) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def test_the_catalog_lists_scope_and_kind_and_filters_by_them(client: Client) -> None:
    params = {"gpu_model": "h200_sxm", "jurisdiction": "CN", "as_of": "2026-06-01"}
    items = ok(client.get("/v1/availability-rules", params=params))["items"]
    assert {(r["kind"], r["scope"], r["effect"]) for r in items} == {("export", "buyer", "licence_required"),
                                                                     ("import", "location", "unavailable")}  # fmt: skip
    imports = ok(client.get("/v1/availability-rules", params={"kind": "import", "limit": 500}))["items"]
    assert imports and all(r["kind"] == "import" and r["jurisdiction"] == "CN" for r in imports)
    placed = ok(client.get("/v1/availability-rules", params={"scope": "location", "limit": 500}))["items"]
    assert {r["gpu_model"] for r in placed} == {"h200_sxm"}
    assert ok(client.get("/v1/availability-rules", params={"jurisdiction": "global"}))["total"] == 0
    assert client.get("/v1/availability-rules", params={"scope": "everyone"}).status_code == 400


def test_a_chinese_buyer_s_answer_for_h100_never_recommends_the_grey_market_cluster(client: Client) -> None:
    body = {"gpus": 64, "utilization": 0.6, "horizon_years": 3, "gpu_model": "h100_sxm", "buyer_country": "CN",
            "as_of": "2026-12-03"}  # fmt: skip
    answer = ok(client.post("/v1/recommendations", params={"store": "false"}, json=body))
    assert answer["recommended_option"] != OWN
    own = next(e for e in answer["ranking"] if e["option"] == OWN)
    nested = [c["params"].get("reason", {}) for c in own["reason_codes"]]
    assert any(n.get("code") == "violation.not-procurable" for n in nested), own["reason_codes"]
    assert any("grey-market quote" in r for r in own["reasons"])


def test_an_unknown_buyer_country_is_refused_naming_the_field_and_listing_the_countries(client: Client) -> None:
    body = {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "buyer_country": "XX"}
    r = client.post("/v1/price-comparisons", json=body)
    assert r.status_code == 422 and r.json()["field"] == "buyer_country", r.text
    detail = r.json()["detail"]
    assert "'XX'" in detail and all(c in detail for c in ("CN", "US", "DE", "HK", "MO"))
    assert "global" not in detail.split("knows")[-1]
