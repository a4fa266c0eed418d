"""Decision insights: break-even points, cost curves, sensitivity and uncertainty for a profile (thin
handlers); cost curves and sensitivity also as SVG charts (``Accept: image/svg+xml``)."""

from __future__ import annotations

from functools import partial
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
from app.domain.shared.represent import Formats, Representation
from app.domain.shared.schemas import ProfileCreate
from app.i18n import Lang
from app.web.bodies import SINGLE_BODY_BYTES
from app.web.problems import BODY_PROBLEMS

#: an insight a chart may answer in place of its JSON
CHART = Formats(vary=True)


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
        shown = Representation(request)
        return await shown.computed(partial(insights.break_even, data, shown.lang), heavy=True)

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
        shown = Representation(request, CHART)
        return await shown.computed(
            partial(insights.sensitivity, data, shown.lang), partial(_tornado, insights, data), heavy=True
        )

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
        shown = Representation(request, CHART)
        return await shown.computed(partial(insights.cost_curves, data, shown.lang), _cost_curve, heavy=True)

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
        return await Representation(request).computed(partial(insights.uncertainty, data), heavy=True)


def _tornado(insights: InsightService, data: ProfileCreate, doc: SensitivityRead, _media: str, lang: Lang) -> str:
    return charts.tornado_svg(doc, lang, currency=data.currency, names=insights.option_names())


def _cost_curve(doc: CostCurvesRead, _media: str, lang: Lang) -> str:
    return charts.cost_curve_svg(doc, lang)
