"""Decision insights: break-even points, cost curves, sensitivity and uncertainty for a profile (thin
handlers); cost curves and sensitivity also as SVG charts (``Accept: image/svg+xml``)."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from litestar import Controller, Response
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
from app.domain.shared.routes import AnyRequest, computation
from app.domain.shared.schemas import ProfileCreate
from app.i18n import Lang

#: an insight a chart may answer in place of its JSON
CHART = Formats(vary=True)
Insights = NamedDependency[InsightService]
ProfileBody = Annotated[ProfileCreate, Body()]


class InsightsController(Controller):
    path = "/v1"
    tags = ["insights"]

    @computation(
        "/break-even",
        operation_id="computeBreakEven",
        cost=costs.break_even,
        summary="Break-even utilizations, the cluster size from which owning is cheapest, payback months",
    )
    async def break_even(self, request: AnyRequest, insights: Insights, data: ProfileBody) -> Response[BreakEvenRead]:
        shown = Representation(request)
        return await shown.computed(partial(insights.break_even, data, shown.lang), heavy=True)

    @computation(
        "/sensitivity",
        operation_id="computeSensitivity",
        cost=costs.sensitivity,
        summary="Each input moved across its range, ordered by effect; what would change the answer "
        "(JSON, or a tornado chart with Accept: image/svg+xml)",
    )
    async def sensitivity(
        self, request: AnyRequest, insights: Insights, data: ProfileBody
    ) -> Response[SensitivityRead]:
        shown = Representation(request, CHART)
        return await shown.computed(
            partial(insights.sensitivity, data, shown.lang), partial(_tornado, insights, data), heavy=True
        )

    @computation(
        "/cost-curves",
        operation_id="computeCostCurves",
        cost=costs.cost_curves,
        summary="Cost per useful GPU-hour of each option over utilization, with the break-even points "
        "(JSON, or an SVG chart with Accept: image/svg+xml)",
    )
    async def cost_curves(self, request: AnyRequest, insights: Insights, data: ProfileBody) -> Response[CostCurvesRead]:
        shown = Representation(request, CHART)
        return await shown.computed(partial(insights.cost_curves, data, shown.lang), _cost_curve, heavy=True)

    @computation(
        "/uncertainty",
        operation_id="computeUncertainty",
        cost=costs.uncertainty,
        summary="Monte Carlo over the knowledge base's ranges: cost percentiles, probability of ranking first",
    )
    async def uncertainty(
        self, request: AnyRequest, insights: Insights, data: Annotated[UncertaintyCreate, Body()]
    ) -> Response[UncertaintyRead]:
        return await Representation(request).computed(partial(insights.uncertainty, data), heavy=True)


def _tornado(insights: InsightService, data: ProfileCreate, doc: SensitivityRead, _media: str, lang: Lang) -> str:
    return charts.tornado_svg(doc, lang, currency=data.currency, names=insights.option_names())


def _cost_curve(doc: CostCurvesRead, _media: str, lang: Lang) -> str:
    return charts.cost_curve_svg(doc, lang)
