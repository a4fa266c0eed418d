"""Capacity plans: ``POST /v1/capacity-plans`` (a thin handler over the capacity service), as JSON,
a stacked capacity-over-time chart (``Accept: image/svg+xml``), CSV or XLSX per phase."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from litestar import Controller, Response
from litestar.di import NamedDependency
from litestar.params import Body

from app.domain.capacity import charts, sheets
from app.domain.capacity.schemas import CapacityPlanCreate, CapacityPlanRead
from app.domain.capacity.service import CapacityService
from app.domain.shared import costs
from app.domain.shared.represent import CSV, Formats, Representation
from app.domain.shared.routes import AnyRequest, computation
from app.i18n import Lang
from app.web.bodies import CAPACITY_BODY_BYTES

PLAN = Formats(file="capacity-plan", vary=True)


class CapacityController(Controller):
    path = "/v1"
    tags = ["planning"]

    @computation(
        "/capacity-plans",
        operation_id="computeCapacityPlan",
        cost=costs.capacity_plan,
        max_body=CAPACITY_BODY_BYTES,
        summary="Portfolios for a demand that changes over the horizon: every single option and the cost-optimal "
        "mix of owned, reserved, rented and platform capacity (JSON; a chart with Accept: image/svg+xml; CSV "
        "or XLSX per phase)",
    )
    async def compute_capacity_plan(
        self,
        request: AnyRequest,
        capacity: NamedDependency[CapacityService],
        data: Annotated[CapacityPlanCreate, Body()],
    ) -> Response[CapacityPlanRead]:
        shown = Representation(request, PLAN)
        return await shown.computed(partial(capacity.plan, data, shown.lang), partial(_drawn, data), heavy=True)


def _drawn(data: CapacityPlanCreate, doc: CapacityPlanRead, media: str, lang: Lang) -> str | bytes:
    """The plan as an SVG chart, a CSV or an XLSX workbook (``media``)."""
    if media == charts.SVG:
        return charts.capacity_svg(doc, lang)
    return sheets.plan_csv(doc, data) if media == CSV else sheets.plan_workbook(doc, lang, data)
