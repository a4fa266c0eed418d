"""Capacity plans through the API (docs/methodology.md "Capacity plans"), on SQLite and PostgreSQL:
a flat demand answers today's single-option figures; a steady base with yearly bursts is served
cheapest by a mix; a ramp buys in tranches or rents first; bad bodies name their field."""

from __future__ import annotations

import csv
import html
import io
import re
from typing import Any

import pytest
from litestar.testing import TestClient
from openpyxl import load_workbook

from app.domain.capacity.sheets import PHASE_COLUMNS
from app.i18n import translate
from app.web.spreadsheets import XLSX, header

AS_OF = "2026-12-01"
TEAM: dict[str, Any] = {
    "team_size": 20,
    "ops_team": "professional",
    "start_within_days": 120,
    "as_of": AS_OF,
}
#: 256 GPUs at 90 % all year, and for three months a year 1,024 more (one 1,024-GPU run) — four years
STEADY_AND_BURSTS = [
    {"months": 9, "gpus": 256, "utilization": 0.9, "largest_job_gpus": 256},
    {"months": 3, "gpus": 1280, "utilization": 0.9, "largest_job_gpus": 1024},
] * 4


def plan(client: TestClient, **body: Any) -> dict[str, Any]:  # type: ignore[type-arg]
    r = client.post("/v1/capacity-plans", json={**TEAM, **body})
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    return doc


def by_key(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["key"]: p for p in doc["portfolios"]}


#: flat demands: the reference server at full load; H100 and A100 in USD below the smallest colocation
#: tier on AS_OF (a cluster priced among the solver's sizes once paid no colocation rent)
FLAT = [
    {"gpus": 256, "utilization": 0.9, "horizon_years": 4},
    {"gpus": 64, "utilization": 0.5, "horizon_years": 2, "gpu_model": "h100_sxm", "currency": "USD"},
    {"gpus": 64, "utilization": 0.6, "horizon_years": 3, "gpu_model": "a100_80gb", "currency": "USD"},
]


@pytest.mark.parametrize("flat", FLAT, ids=["reference", "h100-usd", "a100-usd"])
def test_a_flat_demand_costs_what_a_price_comparison_answers(client: TestClient, flat: dict[str, Any]) -> None:  # type: ignore[type-arg]
    doc = plan(client, **flat)
    profile = {**TEAM, **flat}
    r = client.post("/v1/evaluations", json={"profiles": [profile], "detail": "full"})
    ranking = {e["option"]: e["cost"] for e in r.json()["evaluations"][0]["ranking"]}
    singles = by_key(doc)
    assert len(ranking) == 3
    for option, cost in ranking.items():
        p = singles[f"single:{option}"]
        assert p["kind"] == "single" and p["feasible"]
        bridge = [s for s in p["segments"] if s["acquired"] == "bridge"]
        if bridge:  # a cluster the plan rents for until installed, where the answer for the profile waits
            tranche = next(s for s in p["segments"] if s["acquired"] == "buy")
            for field in ("total_cost", "npv_cost"):
                for end in ("low", "expected", "high"):
                    assert tranche[field][end] == pytest.approx(cost[field][end], rel=1e-9, abs=0.011), (field, end)
                    assert p[field][end] == pytest.approx(tranche[field][end] + bridge[0][field][end], abs=0.03)
            continue
        for field in ("total_cost", "npv_cost", "cost_per_useful_gpu_hour", "cost_per_effective_gpu_hour"):
            for end in ("low", "expected", "high"):
                assert p[field][end] == pytest.approx(cost[field][end], rel=1e-9, abs=0.011), (option, field, end)
    assert doc["recommended"] is not None and doc["optimal"] is True
    months, gpus = round(flat["horizon_years"] * 12), flat["gpus"]
    phase = {
        "start_month": 0,
        "months": months,
        "gpus": gpus,
        "utilization": flat["utilization"],
        "largest_job_gpus": gpus,
    }
    assert doc["phases"] == [phase]


def test_a_steady_base_with_bursts_is_served_cheapest_by_a_mix(client: TestClient) -> None:  # type: ignore[type-arg]
    doc = plan(client, horizon_years=4, demand=STEADY_AND_BURSTS)
    portfolios = by_key(doc)
    hybrid = portfolios["hybrid"]
    assert doc["recommended"] == "hybrid" and doc["optimal"] is True
    kinds = {(s["option"], s["acquired"]) for s in hybrid["segments"]}
    assert ("self_built_cluster", "buy") in kinds  # the owned base
    assert any(a == "use" for _, a in kinds)  # the bursts billed as used
    base = next(s for s in hybrid["segments"] if s["acquired"] == "buy")
    assert base["gpus_by_phase"] == [256] * 8 and base["start_month"] == 0
    singles = [p for p in doc["portfolios"] if p["kind"] == "single" and p["feasible"]]
    best = min(singles, key=lambda p: p["effective_npv_cost"])
    assert hybrid["effective_npv_cost"] < best["effective_npv_cost"]
    saving = doc["saving_vs_best_single"]
    assert saving["against"] == best["key"] and saving["share"] > 0.1
    assert any(c["code"] == "capacity.base_size" for c in hybrid["reason_codes"])


def test_a_ramp_buys_in_tranches_or_rents_first(client: TestClient) -> None:  # type: ignore[type-arg]
    doc = plan(client, horizon_years=3, utilization=0.8, demand={"start_gpus": 64, "growth_per_year": 1.0})
    assert [p["gpus"] for p in doc["phases"]] == [64, 128, 256]
    own = by_key(doc)["single:self_built_cluster"]
    tranches = [s for s in own["segments"] if s["acquired"] == "buy"]
    assert len(tranches) >= 2 and sorted(s["start_month"] for s in tranches)[0] == 0
    assert [sum(s["gpus_by_phase"][k] for s in tranches) for k in range(3)] == [64, 128, 256]
    rec = by_key(doc)[doc["recommended"]]
    first = [s for s in rec["segments"] if s["gpus_by_phase"][0] > 0]
    assert all(s["acquired"] in ("use", "commit") for s in first) or len(tranches) >= 2


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"horizon_years": 2, "demand": [{"months": 12, "gpus": 8, "utilization": 0.5}]}, 422, "demand"),
        ({"horizon_years": 1, "demand": [{"months": 12, "gpus": 0, "utilization": 0.5}]}, 400, "demand.0.gpus"),
        ({"horizon_years": 1, "demand": [{"months": 12, "gpus": 8, "utilization": 1.5}]}, 400, "demand.0.utilization"),
        ({"horizon_years": 1, "gpus": 8, "demand": [{"months": 12, "gpus": 8, "utilization": 0.5}]}, 422, "gpus"),
        ({"horizon_years": 10, "demand": [{"months": 1, "gpus": 8, "utilization": 0.5}] * 121}, 422, "demand"),
        ({"horizon_years": 1.01, "gpus": 8, "utilization": 0.5}, 422, "horizon_years"),
    ],
)
def test_bad_demand_names_the_field(client: TestClient, body: dict[str, Any], status: int, field: str) -> None:  # type: ignore[type-arg]
    r = client.post("/v1/capacity-plans", json={**TEAM, **body})
    assert r.status_code == status, r.text
    problem = r.json()
    assert r.headers["content-type"].startswith("application/problem+json")
    assert any(e["field"].startswith(field) for e in problem["errors"]), problem


def test_an_unknown_owned_gpu_model_is_422_naming_it(client: TestClient) -> None:  # type: ignore[type-arg]
    body = {**TEAM, "gpus": 64, "utilization": 0.8, "horizon_years": 2}
    r = client.post("/v1/capacity-plans", json={**body, "owned": [{"gpu_model": "nope", "count": 8, "age_years": 1}]})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "owned[0].gpu_model"


def test_a_demand_no_portfolio_can_serve_answers_200_with_every_reason(client: TestClient) -> None:  # type: ignore[type-arg]
    body = {
        **TEAM,
        "gpus": 64,
        "utilization": 0.8,
        "horizon_years": 2,
        "data_security": "extreme",
        "start_within_days": 0,
    }
    r = client.post("/v1/capacity-plans", json=body)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["recommended"] is None
    assert all(not p["feasible"] and p["reasons"] for p in doc["portfolios"])


def test_owned_gpus_are_used_first(client: TestClient) -> None:  # type: ignore[type-arg]
    doc = plan(
        client,
        gpus=64,
        utilization=0.9,
        horizon_years=3,
        gpu_model="h100_sxm",
        currency="USD",
        owned=[{"gpu_model": "h100_sxm", "count": 32, "age_years": 1.0}],
    )
    rec = by_key(doc)[doc["recommended"]]
    held = [s for s in rec["segments"] if s["acquired"] == "owned"]
    assert held and held[0]["gpus_by_phase"] == [32]


def test_the_plan_as_a_chart_csv_and_workbook(client: TestClient) -> None:  # type: ignore[type-arg]
    body = {**TEAM, "horizon_years": 4, "demand": STEADY_AND_BURSTS}
    svg = client.post("/v1/capacity-plans", json=body, headers={"Accept": "image/svg+xml", "Accept-Language": "zh"})
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert 'width="640"' in svg.text and "规划期内的算力容量" in svg.text and 'class="layer"' in svg.text
    csv = client.post("/v1/capacity-plans", json=body, headers={"Accept": "text/csv"})
    assert csv.status_code == 200 and csv.content.startswith(b"\xef\xbb\xbf")
    lines = csv.content.decode("utf-8-sig").splitlines()
    assert lines[0].startswith("knowledge_version,methodology_version,currency,as_of,record,portfolio")
    assert any(",phase,hybrid," in line and ",self_built_cluster," in line and ",buy," in line for line in lines)
    xlsx = client.post(
        "/v1/capacity-plans",
        json=body,
        headers={"Accept": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    )
    book = load_workbook(io.BytesIO(xlsx.content))
    assert book.sheetnames == ["Summary", "Breakdown", "Segments", "Phases", "Offers", "Sources", "Request"]


CJK = re.compile(r"[\u4e00-\u9fff]")
LAYER = re.compile(r'<polygon class="layer" data-option="([^"]+)" data-acquired="([^"]+)" points="([^"]+)"')


def _words_in(lang: str, texts: list[str]) -> bool:
    """Every text is in ``lang``: Chinese ones have Chinese characters, English ones none."""
    return bool(texts) and all(bool(CJK.search(x)) == (lang == "zh") for x in texts)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_chart_csv_and_workbook_give_the_portfolio_per_phase(client: TestClient, lang: str) -> None:  # type: ignore[type-arg]
    """The issue's words: "Accept: image/svg+xml draws the same chart; CSV and XLSX give the portfolio per
    phase; Chinese and English as everywhere else"."""
    body = {**TEAM, "horizon_years": 4, "demand": STEADY_AND_BURSTS}
    asked = {"Accept-Language": lang}
    doc = plan_in(client, body, lang)
    phases, rec = doc["phases"], by_key(doc)[doc["recommended"]]
    assert len(phases) == 8 and len(rec["segments"]) >= 2

    # the chart: a layer per segment of the recommended portfolio, its outline stepping phase by phase
    svg = client.post("/v1/capacity-plans", json=body, headers={**asked, "Accept": "image/svg+xml"}).text
    layers = LAYER.findall(svg)
    assert [(o, a) for o, a, _ in layers] == [(g["option"], g["acquired"]) for g in rec["segments"]]
    tops: list[list[float]] = []
    for _, _, points in layers:
        xy = [tuple(map(float, pt.split(","))) for pt in points.split()]
        assert len(xy) == 4 * len(phases)
        tops.append([xy[2 * k][1] for k in range(len(phases))])
    # the stack's top is higher (smaller y) in the burst phases than in the steady ones, as the demand is
    assert all(tops[-1][k] < tops[-1][k - 1] for k in range(1, len(phases), 2))
    texts = [html.unescape(x) for x in re.findall(r"<text[^>]*>([^<]+)</text>", svg)]
    for g in rec["segments"]:
        acquired = translate(f"chart.capacity.acquired.{g['acquired']}", lang)
        label = translate(
            "chart.capacity.layer", lang, option=g["name"], acquired=acquired, month=str(g["start_month"])
        )
        assert label in texts, (label, texts)
    assert translate("chart.capacity.title", lang) in texts
    assert any(x.startswith(f"★ {rec['name']}: ") for x in texts)
    words = [x for x in texts if not re.fullmatch(r"[\d,.★ ]+", x) and doc["knowledge_version"] not in x]
    assert _words_in(lang, words), words

    # CSV: a row per portfolio, segment and phase; field names English, names in the request's language
    answer = client.post("/v1/capacity-plans", json=body, headers={**asked, "Accept": "text/csv"})
    rows = [r for r in csv.DictReader(io.StringIO(answer.content.decode("utf-8-sig"))) if r["record"] == "phase"]
    assert len(rows) == sum(len(p["segments"]) for p in doc["portfolios"]) * len(phases)
    for n, g in enumerate(rec["segments"]):
        mine = [r for r in rows if r["portfolio"] == rec["key"]][n * len(phases) : (n + 1) * len(phases)]
        assert [int(r["phase"]) for r in mine] == list(range(1, len(phases) + 1))
        assert [int(r["gpus"]) for r in mine] == g["gpus_by_phase"]
        assert [int(r["demand_gpus"]) for r in mine] == [p["gpus"] for p in phases]
        assert {(r["part"], r["label"], r["name"]) for r in mine} == {(g["option"], g["name"], rec["name"])}
    assert _words_in(lang, sorted({r["name"] for r in rows} | {r["label"] for r in rows}))

    # XLSX: the same rows on the segments sheet, headings and sheet names in the request's language
    answer = client.post("/v1/capacity-plans", json=body, headers={**asked, "Accept": XLSX})
    book = load_workbook(io.BytesIO(answer.content))
    sheets = ("summary", "breakdown", "segments", "phases", "offers", "sources", "request")
    assert book.sheetnames == [translate(f"sheet.{n}", lang) for n in sheets]
    segments = list(book.worksheets[2].iter_rows(values_only=True))
    assert list(segments[0]) == [header(c, lang) for c in PHASE_COLUMNS]
    assert _words_in(lang, [str(x) for x in segments[0]])
    # the CSV's phase rows name the segment's option `part` and its name `label`, the portfolio's `name`
    named = {"option": "part", "option_name": "label", "portfolio_name": "name"}
    as_text = [
        ["" if v is None else str(v) for c, v in zip(PHASE_COLUMNS, r, strict=True) if c != "kind"]
        for r in segments[1:]
    ]
    assert as_text == [[r[named.get(c, c)] for c in PHASE_COLUMNS if c != "kind"] for r in rows]
    portfolios = list(book.worksheets[0].iter_rows(values_only=True))
    assert [r[1] for r in portfolios[1:]] == [p["name"] for p in doc["portfolios"]]


def plan_in(client: TestClient, body: dict[str, Any], lang: str) -> dict[str, Any]:  # type: ignore[type-arg]
    r = client.post("/v1/capacity-plans", json=body, headers={"Accept-Language": lang})
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    assert doc["language"] == lang
    return doc
