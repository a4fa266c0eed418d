"""Cost curves (JSON and SVG) and the sensitivity tornado (SVG): consistent with the price comparison
and the break-even answer at the same profile, charts that parse as XML, words in the request's language."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from conftest import SME_PROFILE

from app.domain.insights.charts import nice_ticks
from app.i18n import translate

SVG_NS = "{http://www.w3.org/2000/svg}"
#: the article's own-versus-rent question, billed on demand so the curve is the on-demand variant of /v1/break-even
PROFILE = {**SME_PROFILE, "gpus": 64, "horizon_years": 3, "rental_plan": "on_demand"}


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg"
    assert root.get("width") == "640"
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def test_cost_curves_json(client: Any) -> None:
    r = client.post("/v1/cost-curves", json=PROFILE)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert r.headers["content-language"] == "en"
    assert doc["currency"] == "CNY" and doc["knowledge_version"]
    assert {s["option"] for s in doc["series"]} == {"self_built_cluster", "rented_gpu_instances", "ai_compute_platform"}
    for s in doc["series"]:
        us = [p["utilization"] for p in s["points"]]
        assert len(us) >= 20 and us == sorted(us) and us[0] <= 0.1 and us[-1] == 1.0
        assert PROFILE["utilization"] in us
        for p in s["points"]:
            c = p["cost_per_useful_gpu_hour"]
            assert 0 < c["low"] <= c["expected"] <= c["high"]
    # the rented curve falls as utilization rises: paid hours are spread over more useful ones
    rented = next(s for s in doc["series"] if s["option"] == "rented_gpu_instances")["points"]
    assert rented[0]["cost_per_useful_gpu_hour"]["expected"] > rented[-1]["cost_per_useful_gpu_hour"]["expected"]


def test_cost_curve_points_are_the_price_comparison_at_that_utilization(client: Any) -> None:
    # a comparison sets no deadline; give the profile none either, so both price the same offers
    curves = client.post("/v1/cost-curves", json={**PROFILE, "start_within_days": 3650}).json()
    grid = [p["utilization"] for p in curves["series"][0]["points"]]
    for utilization in (grid[0], grid[7], PROFILE["utilization"], 1.0):
        body = {k: PROFILE[k] for k in ("gpus", "horizon_years", "rental_plan")} | {"utilization": utilization}
        comparison = client.post("/v1/price-comparisons", json=body).json()
        assert comparison["knowledge_version"] == curves["knowledge_version"]
        expected = {i["option"]: i["cost_per_useful_gpu_hour"] for i in comparison["items"]}
        for s in curves["series"]:
            point = next(p for p in s["points"] if p["utilization"] == utilization)
            assert point["cost_per_useful_gpu_hour"] == expected[s["option"]], (s["option"], utilization)


def test_break_even_points_are_those_of_break_even(client: Any) -> None:
    curves = client.post("/v1/cost-curves", json=PROFILE).json()
    be = client.post("/v1/break-even", json=PROFILE).json()
    crossings = {(c["first"], c["second"]): c for c in be["crossings"]}
    pair = next(
        p for p in curves["break_even"] if {p["first"], p["second"]} == {"self_built_cluster", "rented_gpu_instances"}
    )
    reference = crossings[("self_built_cluster", "rented_gpu_instances:on_demand")]
    assert pair["utilization"] == reference["utilization"]
    assert pair["utilization"]["expected"] is not None
    assert pair["cost_per_useful_gpu_hour"] > 0
    # at the crossing both curves cost about the same
    u = pair["utilization"]["expected"]
    series = {s["option"]: s["points"] for s in curves["series"]}

    def near(option: str) -> float:
        p = min(series[option], key=lambda p: abs(p["utilization"] - u))
        return float(p["cost_per_useful_gpu_hour"]["expected"])

    assert near("self_built_cluster") == pytest.approx(near("rented_gpu_instances"), rel=0.25)


@pytest.mark.parametrize(
    ("accept_language", "lang", "tag"), [("en-US,en;q=0.9", "en", "en"), ("zh-CN,zh;q=0.9", "zh", "zh-CN")]
)
def test_cost_curve_svg_in_the_request_language(client: Any, accept_language: str, lang: str, tag: str) -> None:
    r = client.post(
        "/v1/cost-curves", json=PROFILE, headers={"Accept": "image/svg+xml", "Accept-Language": accept_language}
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("image/svg+xml")
    assert r.headers["content-language"] == tag
    texts = _texts(r.text)
    assert translate("chart.cost_curve.x_axis", lang) in texts  # type: ignore[arg-type]
    assert translate("chart.cost_curve.y_axis", lang, currency="CNY") in texts  # type: ignore[arg-type]
    assert translate("option.ai_compute_platform.name", lang) in texts  # type: ignore[arg-type]
    root = ET.fromstring(r.text)
    assert len([p for p in root.iter(f"{SVG_NS}polyline") if p.get("class") == "series"]) == 3
    assert len(list(root.iter(f"{SVG_NS}polygon"))) == 3  # the low–high bands
    assert any(c.get("class") == "break-even" for c in root.iter(f"{SVG_NS}circle"))


@pytest.mark.parametrize(("accept_language", "lang"), [(None, "en"), ("zh", "zh")])
def test_sensitivity_tornado_svg(client: Any, accept_language: str | None, lang: str) -> None:
    headers = {"Accept": "image/svg+xml"} | ({"Accept-Language": accept_language} if accept_language else {})
    r = client.post("/v1/sensitivity", json=PROFILE, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("image/svg+xml")
    texts = _texts(r.text)
    doc = client.post("/v1/sensitivity", json=PROFILE).json()
    option = translate(f"option.{doc['recommended_option']}.name", lang)  # type: ignore[arg-type]
    assert translate("chart.tornado.x_axis", lang, option=option, currency="CNY") in texts  # type: ignore[arg-type]
    assert translate("chart.tornado.low", lang) in texts  # type: ignore[arg-type]
    bars = [g for g in ET.fromstring(r.text).iter(f"{SVG_NS}g") if g.get("class") == "bar"]
    moving = [i for i in doc["inputs"] if doc["recommended_option"] in i["effects"]]
    assert 0 < len(bars) <= 12 and len(bars) <= len(moving)


def test_charts_refuse_what_they_cannot_answer(client: Any) -> None:
    r = client.post("/v1/cost-curves", json=PROFILE, headers={"Accept": "text/csv"})
    assert r.status_code == 406
    assert r.headers["content-type"].startswith("application/problem+json")
    r = client.post("/v1/cost-curves", json={**PROFILE, "utilization": 2}, headers={"Accept": "image/svg+xml"})
    assert r.status_code in (400, 422) and "utilization" in r.text


def test_nice_ticks() -> None:
    assert nice_ticks(0, 87) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(12.5, 31)[0] <= 12.5 and nice_ticks(12.5, 31)[-1] >= 31
