"""Decision insights: break-even points, cost curves, sensitivity and uncertainty for a profile (thin
handlers); cost curves and sensitivity also as SVG charts (``Accept: image/svg+xml``)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.params import Body

from app.domain.insights import charts
from app.domain.insights.schemas import (
    BreakEvenRead,
    CostCurvesRead,
    SensitivityRead,
    UncertaintyCreate,
    UncertaintyRead,
)
from app.domain.insights.service import InsightService
from app.domain.shared import costs
from app.domain.shared.schemas import ProfileCreate
from app.i18n import Lang, language
from app.web.bodies import SINGLE_BODY_BYTES
from app.web.negotiation import JSON, negotiate
from app.web.offload import worker_pool
from app.web.problems import BODY_PROBLEMS


def _chart_headers(request: Request[Any, Any, Any]) -> tuple[str, charts.Lang, dict[str, str]]:
    """The media type (JSON or SVG, else 406) and language of a chartable answer, and its headers."""
    media = negotiate(request, [JSON, charts.SVG])
    # Content-Language is sent with every answer (app.i18n.send_content_language)
    return media, language(request.scope), {"Vary": "Accept, Accept-Language"}


class InsightsController(Controller):
    path = "/v1"
    tags = ["insights"]

    @post(
        "/break-even",
        operation_id="computeBreakEven",
        opt={"scope": "decisions:run", "cost": costs.break_even},
        request_max_body_size=SINGLE_BODY_BYTES,
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Break-even utilizations, the cluster size from which owning is cheapest, payback months",
    )
    async def break_even(
        self,
        request: Request[Any, Any, Any],
        insights: NamedDependency[InsightService],
        data: Annotated[ProfileCreate, Body()],
    ) -> Response[BreakEvenRead]:
        return await worker_pool(request).answer(insights.break_even, data, language(request.scope))  # type: ignore[return-value]

    @post(
        "/sensitivity",
        operation_id="computeSensitivity",
        opt={"scope": "decisions:run", "cost": costs.sensitivity},
        request_max_body_size=SINGLE_BODY_BYTES,
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Each input moved across its range, ordered by effect; what would change the answer "
        "(JSON, or a tornado chart with Accept: image/svg+xml)",
    )
    async def sensitivity(
        self,
        request: Request[Any, Any, Any],
        insights: NamedDependency[InsightService],
        data: Annotated[ProfileCreate, Body()],
    ) -> Response[SensitivityRead]:
        media, lang, headers = _chart_headers(request)
        if media == charts.SVG:
            svg = await worker_pool(request).run(_tornado, insights, data, lang)
            return Response(svg, media_type=charts.SVG, headers=headers)  # type: ignore[arg-type]
        answer = await worker_pool(request).answer(insights.sensitivity, data, lang)
        for name, value in headers.items():
            answer.headers[name] = value
        return answer  # type: ignore[return-value]

    @post(
        "/cost-curves",
        operation_id="computeCostCurves",
        opt={"scope": "decisions:run", "cost": costs.cost_curves},
        request_max_body_size=SINGLE_BODY_BYTES,
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Cost per useful GPU-hour of each option over utilization, with the break-even points "
        "(JSON, or an SVG chart with Accept: image/svg+xml)",
    )
    async def cost_curves(
        self,
        request: Request[Any, Any, Any],
        insights: NamedDependency[InsightService],
        data: Annotated[ProfileCreate, Body()],
    ) -> Response[CostCurvesRead]:
        media, lang, headers = _chart_headers(request)
        if media == charts.SVG:
            svg = await worker_pool(request).run(_cost_curve, insights, data, lang)
            return Response(svg, media_type=charts.SVG, headers=headers)  # type: ignore[arg-type]
        answer = await worker_pool(request).answer(insights.cost_curves, data, lang)
        for name, value in headers.items():
            answer.headers[name] = value
        return answer  # type: ignore[return-value]

    @post(
        "/uncertainty",
        operation_id="computeUncertainty",
        opt={"scope": "decisions:run", "cost": costs.uncertainty},
        request_max_body_size=SINGLE_BODY_BYTES,
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Monte Carlo over the knowledge base's ranges: cost percentiles, probability of ranking first",
    )
    async def uncertainty(
        self,
        request: Request[Any, Any, Any],
        insights: NamedDependency[InsightService],
        data: Annotated[UncertaintyCreate, Body()],
    ) -> Response[UncertaintyRead]:
        return await worker_pool(request).answer(insights.uncertainty, data)  # type: ignore[return-value]


def _tornado(insights: InsightService, data: ProfileCreate, lang: Lang) -> str:
    doc = insights.sensitivity(data, lang)
    return charts.tornado_svg(doc, lang, currency=data.currency, names=insights.option_names())


def _cost_curve(insights: InsightService, data: ProfileCreate, lang: Lang) -> str:
    return charts.cost_curve_svg(insights.cost_curves(data, lang), lang)
