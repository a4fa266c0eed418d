"""Answers in Chinese and English: the core's sentences are message codes the catalogs render (English
too), the English catalog reproduces the English sentences the core writes (names aside: the core
writes an option, plan or provider by its key, the catalogs by its name), and every answer says its
language."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from typing import Any

import pytest
from conftest import SME_PROFILE
from litestar.testing import TestClient
from seed_snapshot import knowledge_from_seeds

from app import i18n
from app.core.text import Msg
from app.core.types import Profile
from app.engine import decision
from app.host.manager import create_option_host

Client = TestClient  # type: ignore[type-arg]
AS_OF = dt.date(2026, 12, 1)
CJK = re.compile(r"[\u4e00-\u9fff]")


def _profiles() -> list[Profile]:
    """Profiles that between them make every kind of sentence: fits and penalties, infeasible offers,
    budgets, short starts, reserved plans, one minute to hours to months of lead time."""
    out = []
    grid = itertools.product(
        (8, 256, 4096),
        (0.2, 1.0),
        ("none", "professional"),
        ("standard", "extreme"),
        (3, 3650),
        (None, "reserved_1y", "spot"),
    )
    for gpus, utilization, ops, security, start, plan in grid:
        out.append(
            Profile(
                gpus=gpus,
                utilization=utilization,
                horizon_years=1 if gpus == 8 else 4,
                team_size=10 if ops == "none" else 60,
                ops_team=ops,
                data_security=security,
                start_within_days=start,
                rental_plan=plan,
                capex_budget=100_000.0 if gpus == 256 else None,
                as_of=AS_OF,
            )
        )
    return out


def _messages() -> list[Msg]:
    kb = knowledge_from_seeds()
    host = create_option_host()
    found: list[Msg] = []
    for profile in _profiles():
        outcomes = decision.assess_all(list(host.options), lambda o, p=profile: host.assess(o, p, kb))  # type: ignore[misc]
        result = decision.decide(profile, outcomes, kb, decision.default_weights(kb))
        for r in result.ranking:
            found += [x for x in (*r.reasons, *(rule.reason for rule in r.rules)) if isinstance(x, Msg)]
            a = r.outcome.assessment
            if a is not None:
                lines = (
                    *a.cost.breakdown,
                    *a.cost.extras,
                    *(li for alt in a.alternatives for li in alt.cost.breakdown),
                )
                found += [li.label for li in lines if isinstance(li.label, Msg)]
    return found


@pytest.fixture(scope="module")
def messages() -> list[Msg]:
    return _messages()


def _walk(m: Msg) -> list[Msg]:
    nested = [v for v in m.params.values() if isinstance(v, Msg)]
    nested += [i for v in m.params.values() if isinstance(v, tuple) for i in v if isinstance(i, Msg)]
    return [m, *(x for n in nested for x in _walk(n))]


def _english(m: Msg) -> str:
    """``m`` rendered from the English catalog (not from its own text)."""
    template = i18n.catalog("en")[m.code]
    if m.code.startswith("join."):
        return template.join(_english(i) if isinstance(i, Msg) else i for i in m.params["items"])
    return template.format(**{k: _english(v) if isinstance(v, Msg) else v for k, v in m.params.items()})


#: names the core writes by key (an option, plan, provider, server, machine room, residency, security
#: level): the catalogs word them in every language, English included
NAMES = ("option.", "plan.", "provider.", "server.", "facility.", "residency.", "data_security.")


def _own(m: Msg) -> str:
    """``m``'s English template filled with its parameters' own texts: the sentence as the core writes it."""
    template = i18n.catalog("en")[m.code]
    if m.code.startswith("join."):
        return template.join(str(i) for i in m.params["items"])
    return template.format(**{k: str(v) for k, v in m.params.items()})


def test_the_english_catalog_writes_every_sentence_the_core_writes(messages: list[Msg]) -> None:
    every = [x for m in messages for x in _walk(m)]
    assert len({m.code for m in every}) >= 25, sorted({m.code for m in every})
    for m in every:
        assert m.code in i18n.catalog("en"), m.code
        if not (m.code.startswith(NAMES) and not m.params):
            assert _own(m) == str(m), m.code
        if not m.code.startswith(i18n.OWN_ENGLISH):
            assert i18n.render(m, "en") == _english(m), m.code


def test_every_sentence_has_chinese_words_and_no_unfilled_placeholder(messages: list[Msg]) -> None:
    for m in messages:
        text = i18n.render(m, "zh")
        worded = CJK.search(i18n.catalog("zh")[m.code])  # not "{servers} × {server}" (a server's name)
        assert CJK.search(text) or not worded, (m.code, text)
        assert not re.search(r"\{[a-z_]+\}", text), (m.code, text)
        assert i18n.render(m, "en") == (str(m) if m.code.startswith(i18n.OWN_ENGLISH) else _english(m))


def test_a_plain_sentence_of_a_third_party_plugin_is_shown_as_it_is() -> None:
    assert i18n.render("A plugin's own words.", "zh") == "A plugin's own words."
    words = "A plugin's own words."
    assert i18n.code_of(words, "zh") == {"code": "text.verbatim", "params": {"text": words}}


def test_a_rule_the_catalogs_do_not_know_keeps_the_seeds_words() -> None:
    m = Msg("rule.added_by_an_admin", "Some rule an admin added.", {})
    assert i18n.render(m, "zh") == "Some rule an admin added."


# ---- over HTTP ---------------------------------------------------------------------------------------


def test_a_recommendation_in_chinese_keeps_its_language_when_read_back(sqlite_client: Client) -> None:
    r = sqlite_client.post("/v1/recommendations", json=SME_PROFILE, headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    assert r.status_code == 201, r.text
    assert r.headers["content-language"] == "zh-CN"
    doc = r.json()
    assert doc["language"] == "zh"
    names = {e["option"]: e["name"] for e in doc["ranking"]}
    assert names["ai_compute_platform"] == "智算平台"
    for entry in doc["ranking"]:
        assert len(entry["reason_codes"]) == len(entry["reasons"])
        assert all(CJK.search(reason) for reason in entry["reasons"]), entry["reasons"]
        assert all(CJK.search(rule["reason"]) for rule in entry["rules_applied"])
    assert doc["break_even"] is None or CJK.search(doc["break_even"])
    again = sqlite_client.get(r.headers["location"], headers={"Accept-Language": "en"})
    assert again.status_code == 200
    assert again.headers["content-language"] == "zh-CN"
    assert again.json() == doc


def test_english_by_default_with_the_same_codes(sqlite_client: Client) -> None:
    zh = sqlite_client.post("/v1/recommendations?store=false", json=SME_PROFILE, headers={"Accept-Language": "zh"})
    en = sqlite_client.post("/v1/recommendations?store=false", json=SME_PROFILE)
    assert en.headers["content-language"] == "en"
    assert zh.headers["content-language"] == "zh-CN"
    for e, z in zip(en.json()["ranking"], zh.json()["ranking"], strict=True):
        assert [c["code"] for c in e["reason_codes"]] == [c["code"] for c in z["reason_codes"]]
        assert not any(CJK.search(reason) for reason in e["reasons"])
        assert e["reason_codes"][-1]["code"].startswith(("reason.", "text"))


def test_comparisons_and_their_etags_differ_by_language(sqlite_client: Client) -> None:
    body: dict[str, Any] = {"gpus": 8, "utilization": 0.5, "horizon_years": 3}
    en = sqlite_client.post("/v1/price-comparisons", json=body)
    zh = sqlite_client.post("/v1/price-comparisons", json=body, headers={"Accept-Language": "zh-CN"})
    assert {i["name"] for i in zh.json()["items"]} == {"自建GPU集群", "租用GPU实例", "智算平台"}
    labels = [li["label"] for i in zh.json()["items"] for li in i["breakdown"]]
    assert labels and all(CJK.search(label) or "×" in label for label in labels), labels
    assert "Own GPU cluster" in {i["name"] for i in en.json()["items"]}
    assert en.headers["etag"] != zh.headers["etag"]
    assert "Accept-Language" in zh.headers["vary"]


def test_every_answer_says_its_language_problems_and_health_included(sqlite_client: Client) -> None:
    for path in ("/health/live", "/v1/options", "/v1/no-such-thing"):
        r = sqlite_client.get(path, headers={"Accept-Language": "zh-CN"})
        assert r.headers["content-language"] == "zh-CN", path


def test_problems_and_options_in_chinese(sqlite_client: Client) -> None:
    zh = {"Accept-Language": "zh-CN"}
    missing = sqlite_client.get("/v1/recommendations/nope", headers=zh)
    assert missing.status_code == 404
    assert missing.json()["title"] == "未找到"
    assert missing.json()["detail"] == "没有推荐“nope”"
    assert sqlite_client.get("/v1/recommendations/nope").json()["detail"] == "no recommendation 'nope'"
    unauthenticated = sqlite_client.get("/v1/options", headers={**zh, "X-API-Key": "wrong"})
    assert unauthenticated.json()["title"] == "需要 API 密钥"
    options = sqlite_client.get("/v1/options", headers=zh).json()["items"]
    assert {o["name"] for o in options} == {"自建GPU集群", "租用GPU实例", "智算平台"}
    assert all(CJK.search(o["description"]) for o in options)
    # what the knowledge base lacks, in the reader's language (the field's own message stays English)
    body = {"gpus": 8, "utilization": 0.5, "horizon_years": 1}
    for extra, words in (
        ({"regions": ["mars-1"]}, "未知的地域 mars-1"),
        ({"providers": ["nobody"]}, "未知的供应商 nobody"),
        ({"gpu_model": "tpu_v9"}, "未知的 GPU 型号“tpu_v9”"),
        ({"currency": "JPY"}, "没有 JPY 的汇率"),
    ):
        unknown = sqlite_client.post("/v1/price-comparisons", json={**body, **extra}, headers=zh).json()
        assert unknown["status"] == 422 and unknown["detail"].startswith(words), unknown
        assert not CJK.search(unknown["errors"][0]["message"])


def test_insights_statements_in_chinese(sqlite_client: Client) -> None:
    zh = {"Accept-Language": "zh-CN"}
    body = {**SME_PROFILE, "gpus": 256, "utilization": 0.9, "horizon_years": 4, "ops_team": "professional"}
    be = sqlite_client.post("/v1/break-even", json=body, headers=zh).json()
    statements = [c["statement"] for c in be["crossings"]] + [p["statement"] for p in be["paybacks"]]
    statements.append(be["own_cheapest_statement"])
    assert statements and all(CJK.search(s) for s in statements), statements
    english = sqlite_client.post("/v1/break-even", json=body).json()
    assert not CJK.search(english["own_cheapest_statement"])
    se = sqlite_client.post("/v1/sensitivity", json=body, headers=zh).json()
    for change in (se["weight_change"], se["utilization_change"]):
        assert change is None or CJK.search(change["statement"])


def test_a_message_survives_a_copy_and_a_pickle() -> None:
    import copy
    import pickle

    m = Msg("unit.days", "3 days", {"value": "3"})
    for again in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert again == "3 days" and again.code == "unit.days" and again.params == {"value": "3"}
        assert i18n.render(again, "zh") == "3 天"
