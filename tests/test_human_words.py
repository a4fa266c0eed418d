"""Words a person reads carry no identifiers: every answer type, asked in English and in Chinese.

Each answer is read as a person reads it — the sentences, names, labels, bases, notes and statements
of a JSON answer (and the parameters of its ``reason_codes``, which a client fills into its own
templates), every word of an SVG chart, the human columns of a CSV and every heading and human cell
of an XLSX workbook — and fails on an identifier-shaped token: a snake_case word
(``depreciation_years``, ``rented_gpu_instances``, ``reserved_1y``) or a lone ``*`` (the own offer's
plan). Machine fields (``key``, ``option``, ``code``, ``plan``, ``provider``, JSON field names, a CSV's
header row) keep their identifiers and are not read. A Chinese answer also carries no English
sentence (four lowercase English words in a row). The sizing and cost sentences say what can happen:
no utilization above 100 %, a mix of one option named as that option, costs compared with the
cheapest *feasible* option and a dearer recommendation explained.

``python tests/test_human_words.py`` prints the tokens found per answer type and language (the counts
quoted in issue 35's closing note).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any, get_args

import pytest
from conftest import SME_PROFILE, make_client
from litestar.testing import TestClient
from openpyxl import load_workbook
from seed_snapshot import knowledge_from_seeds

from app import i18n
from app.core.vocab import DataSecurity, Residency
from app.engine.capacity import reasons
from app.engine.insights.sensitivity import PROFILE_SWEEPS
from app.host.manager import create_option_host
from app.i18n import Lang

JSON, CSV, SVG = "application/json", "text/csv", "image/svg+xml"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
LANGS: tuple[Lang, ...] = i18n.LANGUAGES

#: an identifier: a snake_case word (not part of a longer name such as ``Standard_ND96isr_H100_v5``), a
#: lone ``*`` or a knowledge-base reference such as ``*/mfu``
IDENTIFIER = re.compile(r"(?<![\w.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])|(?<!\S)\*(?=\s|$|[,;.)）])|\*/\w+|\w+/\*")
CJK = re.compile(r"[\u4e00-\u9fff]")
#: an English phrase in a Chinese answer: four lowercase English words in a row
ENGLISH_PHRASE = re.compile(r"\b[a-z]{2,}(?: [a-z]+){3,}\b")

#: the fields of a JSON answer whose strings a person reads
HUMAN_FIELDS = frozenset({"name", "reasons", "reason", "statement", "label", "basis", "notes", "setup_steps",
                          "description", "own_cheapest_statement", "break_even_sentence", "title", "detail",
                          "distribution"})  # fmt: skip
#: the columns of a CSV or XLSX answer whose cells a person reads (the others hold keys and figures)
HUMAN_COLUMNS = ("label", "basis", "name", "portfolio_name", "option_name", "reasons", "reason",
                 "infeasible_reasons", "notes", "offer_name", "detail")  # fmt: skip

AS_OF = "2026-12-01"
H100_USD = {"gpus": 64, "utilization": 0.5, "horizon_years": 3, "gpu_model": "h100_sxm", "currency": "USD",
            "as_of": AS_OF}  # fmt: skip
#: a team that needs its data on its premises: the cheap options are infeasible
EXTREME = {"gpus": 4, "utilization": 0.05, "horizon_years": 3, "team_size": 10, "ops_team": "basic",
           "data_security": "extreme", "start_within_days": 30, "as_of": AS_OF}  # fmt: skip
#: a professional team at scale on H100 in USD: owned servers, colocation and an own machine room priced
SCALE = {**H100_USD, "gpus": 256, "utilization": 0.85, "team_size": 40, "ops_team": "professional",
         "start_within_days": 120}  # fmt: skip
#: an 8-GPU proof of concept that must start now, on spot capacity
SPOT = {"gpus": 8, "utilization": 0.3, "horizon_years": 1, "rental_plan": "spot", "team_size": 3,
        "start_within_days": 3, "as_of": AS_OF, "largest_job_gpus": 8}  # fmt: skip
#: a team without ops on H100 in USD: the platform billed per job-second is recommended (its tornado moves
#: a job's start-up time)
PLATFORM = {**H100_USD, "utilization": 0.3, "team_size": 20, "ops_team": "none", "start_within_days": 14}
STEADY_AND_BURSTS = [
    {"months": 9, "gpus": 256, "utilization": 0.9, "largest_job_gpus": 256},
    {"months": 3, "gpus": 1280, "utilization": 0.9, "largest_job_gpus": 1024},
] * 4
CAPACITY = {"demand": STEADY_AND_BURSTS, "horizon_years": 4, "team_size": 20, "ops_team": "professional",
            "start_within_days": 120, "as_of": AS_OF}  # fmt: skip
#: one flat phase the own cluster serves best alone: the "mix" is that one option
FLAT = {**CAPACITY, "demand": [{"months": 24, "gpus": 64, "utilization": 0.5}], "horizon_years": 2,
        "gpu_model": "h100_sxm", "currency": "USD"}  # fmt: skip

#: a 7B model on 2T tokens on 256 H100; a 1B model on 20B tokens on 8 L40S, which nothing prices (the
#: reference server's prices then)
RUN = {"gpu_model": "h100_sxm", "gpus": 256, "parameters": 7e9, "tokens": 2e12, "as_of": AS_OF}
SMALL_RUN = {"gpu_model": "l40s", "gpus": 8, "parameters": 1e9, "tokens": 2e10, "as_of": AS_OF}
EVALUATIONS = {"profiles": [SME_PROFILE, SCALE, EXTREME, SPOT], "detail": "full"}

#: (answer type, method, path, body, media type): every answer type that says something
ANSWERS: list[tuple[str, str, str, Any, str]] = [
    ("price comparison", "POST", "/v1/price-comparisons", H100_USD, JSON),
    ("price comparison (reference server)", "POST", "/v1/price-comparisons", SME_PROFILE, JSON),
    ("price comparison CSV", "POST", "/v1/price-comparisons", H100_USD, CSV),
    ("price comparison XLSX", "POST", "/v1/price-comparisons", H100_USD, XLSX),
    ("recommendation", "POST", "/v1/recommendations?store=false", SME_PROFILE, JSON),
    ("recommendation (extreme data security)", "POST", "/v1/recommendations?store=false", EXTREME, JSON),
    ("recommendation (spot, start now)", "POST", "/v1/recommendations?store=false", SPOT, JSON),
    ("evaluations, detail full", "POST", "/v1/evaluations", EVALUATIONS, JSON),
    ("evaluations XLSX", "POST", "/v1/evaluations", {"profiles": [SME_PROFILE, SCALE], "detail": "full"}, XLSX),
    ("break-even", "POST", "/v1/break-even", SCALE, JSON),
    ("sensitivity", "POST", "/v1/sensitivity", SCALE, JSON),
    ("sensitivity SVG", "POST", "/v1/sensitivity", PLATFORM, SVG),
    ("cost curves", "POST", "/v1/cost-curves", SCALE, JSON),
    ("cost curves SVG", "POST", "/v1/cost-curves", SCALE, SVG),
    ("uncertainty", "POST", "/v1/uncertainty", {**SME_PROFILE, "draws": 200, "seed": 7}, JSON),
    ("training plan", "POST", "/v1/training-plans", RUN, JSON),
    ("training plan (unpriced GPU)", "POST", "/v1/training-plans", SMALL_RUN, JSON),
    ("capacity plan", "POST", "/v1/capacity-plans", CAPACITY, JSON),
    ("capacity plan (one option)", "POST", "/v1/capacity-plans", FLAT, JSON),
    ("capacity plan SVG", "POST", "/v1/capacity-plans", CAPACITY, SVG),
    ("capacity plan CSV", "POST", "/v1/capacity-plans", CAPACITY, CSV),
    ("capacity plan XLSX", "POST", "/v1/capacity-plans", CAPACITY, XLSX),
    ("options", "GET", "/v1/options", None, JSON),
    ("providers", "GET", "/v1/providers?limit=500", None, JSON),
]
#: listings of the knowledge base: what the service names (its ``notes`` and ``source`` are the seeds' words)
NAMED_ONLY = frozenset({"options", "providers"})


# ---- reading an answer as a person reads it ------------------------------------------------------------


def _json_texts(value: Any, fields: frozenset[str], *, human: bool = False) -> Iterator[str]:
    """The strings of the human ``fields`` (and of ``reason_codes``' parameters, but not their codes)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "code":
                continue
            yield from _json_texts(v, fields, human=human or k in fields or k == "params")
    elif isinstance(value, list):
        for v in value:
            yield from _json_texts(v, fields, human=human)
    elif isinstance(value, str) and human:
        yield value


def _svg_texts(body: str) -> list[str]:
    root = ET.fromstring(body)
    found = [t for node in root.iter() for t in (node.text, node.tail) if t and t.strip()]
    return found + [v for node in root.iter() for k, v in node.attrib.items() if k == "aria-label"]


def _csv_texts(body: str) -> list[str]:
    rows = list(csv.DictReader(io.StringIO(body.lstrip("\ufeff"))))
    return [row[c] for row in rows for c in HUMAN_COLUMNS if row.get(c)]


def _xlsx_texts(body: bytes, lang: Lang) -> list[str]:
    words = i18n.catalog(lang)
    human = {words[f"column.{c}"] for c in HUMAN_COLUMNS if f"column.{c}" in words}
    found: list[str] = []
    for ws in load_workbook(io.BytesIO(body), read_only=True).worksheets:
        found.append(ws.title)
        rows = ws.iter_rows(values_only=True)
        headings = [str(h) if h is not None else "" for h in next(rows, ())]
        found += headings
        columns = [i for i, h in enumerate(headings) if h in human]
        for row in rows:
            found += [str(row[i]) for i in columns if i < len(row) and isinstance(row[i], str)]
    return found


def texts(resp: Any, media: str, lang: Lang, fields: frozenset[str] = HUMAN_FIELDS) -> list[str]:
    """Every string a person reads in ``resp``."""
    if media == JSON:
        return list(_json_texts(resp.json(), fields))
    if media == SVG:
        return _svg_texts(resp.text)
    if media == CSV:
        return _csv_texts(resp.text)
    return _xlsx_texts(resp.content, lang)


def identifiers(found: list[str]) -> list[str]:
    return [m.group(0) for t in found for m in IDENTIFIER.finditer(t)]


@functools.cache
def _knowledge_words() -> tuple[str, ...]:
    """What the knowledge base words itself, longest first: price rows' products as the price books
    write them and the sources sentences cite (an export rule's) — data, in the seeds' language."""
    kb = knowledge_from_seeds()
    found = {p.subject for p in kb.prices} | {r.source for r in kb.availability}
    return tuple(sorted(found, key=len, reverse=True))


def english_phrases(found: list[str]) -> list[str]:
    """English phrases the service wrote (the knowledge base's own words left out)."""
    phrases = []
    for t in found:
        for words in _knowledge_words():
            t = t.replace(words, "")
        phrases += [m.group(0) for m in ENGLISH_PHRASE.finditer(t)]
    return phrases


# ---- the answers ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(databases: Any) -> Iterator[TestClient]:  # type: ignore[type-arg]
    """One client for the module, on a seeded SQLite database of its own (read-only tests)."""
    with make_client(databases.seeded("sqlite")) as c:
        yield c


#: answers already asked, by request (several tests read the same answer)
_ASKED: dict[tuple[str, str, str, str, str], Any] = {}


def fetch(client: TestClient, method: str, path: str, body: Any, media: str, lang: Lang) -> Any:  # type: ignore[type-arg]
    """The answer to a request, asked once per process."""
    key = (method, path, json.dumps(body, sort_keys=True), media, lang)
    if key not in _ASKED:
        headers = {"Accept": media, "Accept-Language": lang}
        r = client.request(method, path, headers=headers, **({} if body is None else {"json": body}))
        assert r.status_code in (200, 201), (path, lang, r.text[:500])
        _ASKED[key] = r
    return _ASKED[key]


def ask(client: TestClient, name: str, lang: Lang) -> list[str]:  # type: ignore[type-arg]
    _, method, path, body, media = next(a for a in ANSWERS if a[0] == name)
    r = fetch(client, method, path, body, media, lang)
    return texts(r, media, lang, frozenset({"name", "description"}) if name in NAMED_ONLY else HUMAN_FIELDS)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", [a[0] for a in ANSWERS])
def test_no_identifier_in_what_a_person_reads(client: TestClient, name: str, lang: Lang) -> None:  # type: ignore[type-arg]
    found = ask(client, name, lang)
    assert found, f"{name} ({lang}): nothing to read"
    tokens = identifiers(found)
    assert not tokens, f"{name} ({lang}): {len(tokens)} identifier(s): {sorted(set(tokens))}"


@pytest.mark.parametrize("name", [a[0] for a in ANSWERS])
def test_no_english_sentence_in_a_chinese_answer(client: TestClient, name: str) -> None:  # type: ignore[type-arg]
    phrases = english_phrases(ask(client, name, "zh"))
    assert not phrases, f"{name}: {sorted(set(phrases))}"


# ---- the names the catalogs must know ---------------------------------------------------------------------


def test_every_name_of_the_knowledge_base_has_words_in_every_language() -> None:
    """Each provider, server, plan, residency and data-security level of the shipped knowledge base and
    of the loaded options, and each input the sensitivity analysis moves, has its words in the catalogs
    (in every language: tests/test_i18n.py checks the catalogs are complete)."""
    kb = knowledge_from_seeds()
    host = create_option_host()
    plans = {p.plan for p in kb.prices} - {"*"}
    plans |= {p for o in host.options.values() for p in (*o.spec.rental_plans, *(o.spec.price_plans or ()))}
    wanted = {
        *(f"provider.{k}" for k in kb.providers),
        *(f"server.{k}" for k in kb.servers),
        *(f"plan.{p}" for p in plans),
        *(f"residency.{r}" for r in get_args(Residency)),
        *(f"data_security.{k}" for k in get_args(DataSecurity)),
        *(f"chart.input.{k}" for k in {k for _, k in kb.assumptions} | {p.item for p in kb.prices}),
        *(f"chart.input.{k}" for k in PROFILE_SWEEPS),
        *(f"option.{o}.ref" for o in host.options),
    }
    assert not sorted(wanted - set(i18n.catalog("en"))), "no words for these"
    for code in wanted:
        assert not IDENTIFIER.search(i18n.catalog("en")[code]), code


def test_providers_are_named_in_the_request_language(client: TestClient) -> None:  # type: ignore[type-arg]
    zh = client.get("/v1/providers?limit=500", headers={"Accept-Language": "zh"}).json()["items"]
    names = {p["key"]: p["name"] for p in zh}
    assert names["aws"] == "亚马逊云科技" and names["alibaba_cloud"] == "阿里云"
    assert CJK.search(names["own"]) and CJK.search(names["china_market"])
    en = client.get("/v1/providers?limit=500").json()["items"]
    assert {p["key"]: p["name"] for p in en}["aws"] == "Amazon Web Services"  # the knowledge base's name


# ---- what the sentences say ---------------------------------------------------------------------------------


def _post(client: TestClient, path: str, body: Any, lang: Lang = "en") -> Any:  # type: ignore[type-arg]
    return fetch(client, "POST", path, body, JSON, lang).json()


@pytest.mark.parametrize("lang", LANGS)
def test_offers_are_named_as_people_name_them(client: TestClient, lang: Lang) -> None:  # type: ignore[type-arg]
    """An offer reads "AWS p5.48xlarge, us-east-1, Capacity Block": the provider, the instance or server,
    the region, the plan and the machine room by name, in the offer's ``name`` and in every sentence that
    names it; the own cluster's open plan (``*``) is left out."""
    words = i18n.catalog(lang)
    comma = words["join.comma"]
    doc = _post(client, "/v1/evaluations", {"profiles": [SCALE], "detail": "full"}, lang)
    ranking = {r["option"]: r for r in doc["evaluations"][0]["ranking"]}
    for option, entry in ranking.items():
        offer = entry["offer"]
        server = words.get(f"server.{offer['subject']}", offer["subject"])
        provider = words[f"provider.{offer['provider']}"]
        parts = [f"{provider} {server}", offer["region"]]
        parts += [] if offer["plan"] == "*" else [words[f"plan.{offer['plan']}"]]
        parts += [] if offer["variant"] is None else [words[f"facility.{offer['variant'].replace(' ', '_')}"]]
        assert offer["name"] == comma.join(parts), option
        assert any(offer["name"] in r for r in entry["reasons"]), (option, entry["reasons"])
    own = ranking["self_built_cluster"]["offer"]
    assert own["plan"] == "*" and " *" not in own["name"] and words["server.hgx_h100_8gpu"] in own["name"]
    rented = ranking["rented_gpu_instances"]["offer"]
    if (rented["provider"], rented["subject"], rented["plan"]) == ("aws", "p5.48xlarge", "capacity_block"):
        expected = {
            "en": "AWS p5.48xlarge, us-east-1, Capacity Block",
            "zh": "亚马逊云科技 p5.48xlarge，us-east-1，容量块",
        }
        assert rented["name"] == expected[lang]


def test_costs_are_compared_with_the_cheapest_feasible_option(client: TestClient) -> None:  # type: ignore[type-arg]
    """With extreme data security only the own cluster is feasible: every other option's cost sentence
    compares with it, not with a cheaper option that cannot be chosen; where no option is feasible, none
    compares."""
    nothing = _post(client, "/v1/recommendations?store=false", EXTREME)
    assert not any(r["feasible"] for r in nothing["ranking"])
    for r in nothing["ranking"]:
        assert "reason.cost_alone" in {c["code"] for c in r["reason_codes"]}, r["reason_codes"]
    doc = _post(client, "/v1/recommendations?store=false", {**EXTREME, "start_within_days": 365})
    feasible = [r for r in doc["ranking"] if r["feasible"]]
    assert [r["option"] for r in feasible] == ["self_built_cluster"], [r["option"] for r in doc["ranking"]]
    own = feasible[0]
    figure = f"{own['cost']['cost_per_effective_gpu_hour']['expected']:,.2f}"
    codes = {r["option"]: {c["code"]: c["params"] for c in r["reason_codes"]} for r in doc["ranking"]}
    assert "reason.cost_cheapest" in codes["self_built_cluster"]
    for r in doc["ranking"]:
        if r["option"] != own["option"]:
            said = codes[r["option"]]["reason.cost"]
            assert said["cheapest"] == figure and said["option"] == {
                "code": "option.self_built_cluster.ref",
                "params": {},
            }
            assert any(f"against {figure} for Own GPU cluster, the cheapest feasible option" in x for x in r["reasons"])


def test_a_dearer_recommendation_says_why_it_wins(client: TestClient) -> None:  # type: ignore[type-arg]
    """The platform is recommended to the article's team though renting costs less: its first reason says
    by how much it costs more and what outweighs it."""
    for lang in LANGS:
        doc = _post(client, "/v1/recommendations?store=false", SME_PROFILE, lang)
        feasible = [r for r in doc["ranking"] if r["feasible"]]
        costs = {r["option"]: r["cost"]["cost_per_effective_gpu_hour"]["expected"] for r in feasible}
        chosen = feasible[0]
        assert chosen["option"] == doc["recommended_option"]
        assert costs[chosen["option"]] > min(costs.values()) * 1.005, costs
        assert chosen["reason_codes"][0]["code"] == "reason.premium"
        cheapest = min(costs, key=lambda o: costs[o])
        assert i18n.catalog(lang)[f"option.{cheapest}.ref"] in chosen["reasons"][0]


def test_sizing_reasons_say_what_can_happen() -> None:
    """A base whose next GPU pays only above 100 % utilization does not pay at any; a demand that never
    rises above the base is said so, not "would keep it at 0 %"."""
    from app.core.text import option_ref

    burst = option_ref("rented_gpu_instances")
    never, always = i18n.render(reasons._pays(1.2, burst), "en"), i18n.render(reasons._pays(0.001, burst), "en")
    assert never == "one more would cost more than Rented GPU instances at any utilization"
    assert always == "one more pays against Rented GPU instances at any utilization"
    assert "88%" in i18n.render(reasons._pays(0.88, burst), "zh")
    assert i18n.render(reasons._used_above(0.0), "en") == "the demand never rises above this base"
    assert i18n.render(reasons._used_above(0.22), "en") == "the demand above this base would keep it at 22%"


#: H100 in USD, a base of 256 at 90 % and bursts to 768: owned tranches whose demand never rises above them
H100_BURSTS = {**CAPACITY, "demand": [{"months": 9, "gpus": 256, "utilization": 0.9},
                                      {"months": 3, "gpus": 768, "utilization": 0.9}] * 2,
               "horizon_years": 2, "gpu_model": "h100_sxm", "currency": "USD"}  # fmt: skip


@pytest.mark.parametrize("body", [CAPACITY, FLAT, H100_BURSTS], ids=["steady-and-bursts", "flat", "h100-bursts"])
def test_no_capacity_reason_quotes_an_impossible_share(client: TestClient, body: dict[str, Any]) -> None:  # type: ignore[type-arg]
    """No utilization above 100 % nor a "0 %" a base would be kept at: what cannot happen is said so."""
    doc = _post(client, "/v1/capacity-plans", body)
    said = [r for p in doc["portfolios"] for r in p["reasons"]]
    shares = [int(m) for r in said for m in re.findall(r"(\d+)%", r)]
    assert all(0 < s <= 100 for s in shares), said


@pytest.mark.parametrize("lang", LANGS)
def test_a_mix_of_one_option_is_named_as_that_option(client: TestClient, lang: Lang) -> None:  # type: ignore[type-arg]
    doc = _post(client, "/v1/capacity-plans", FLAT, lang)
    portfolios = {p["key"]: p for p in doc["portfolios"]}
    mix = portfolios["hybrid"]
    # the cluster's own segments (a bridge rented while its first tranche is delivered is not the mix's choice)
    assert {s["option"] for s in mix["segments"] if s["acquired"] != "bridge"} == {"self_built_cluster"}
    assert (
        mix["name"]
        == portfolios["single:self_built_cluster"]["name"]
        == i18n.translate("option.self_built_cluster.name", lang)
    )
    assert mix["reason_codes"][0]["code"] == "capacity.no_better_mix"
    assert i18n.catalog(lang)["capacity.hybrid"] not in mix["name"]
    # a real mix keeps the mix's name
    steady = {p["key"]: p for p in _post(client, "/v1/capacity-plans", CAPACITY, lang)["portfolios"]}
    assert len({s["option"] for s in steady["hybrid"]["segments"]}) > 1
    assert steady["hybrid"]["name"] == i18n.catalog(lang)["capacity.hybrid"]


if __name__ == "__main__":  # the counts: tokens per answer type and language
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import Databases

    dbs = Databases(Path(tempfile.mkdtemp()))
    with make_client(dbs.seeded("sqlite")) as c:
        total = dict.fromkeys(LANGS, 0)
        for answer, *_ in ANSWERS:
            counts = []
            for language in LANGS:
                read = ask(c, answer, language)
                n = len(identifiers(read))
                total[language] += n
                counts.append(f"{language} {n:4d}")
            phrases = len(english_phrases(ask(c, answer, "zh")))
            print(f"{answer:45s} {'  '.join(counts)}  (English phrases in zh: {phrases})")
        print(f"{'total':45s} {'  '.join(f'{k} {v:4d}' for k, v in total.items())}")
