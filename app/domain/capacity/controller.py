"""Capacity plans: ``POST /v1/capacity-plans`` (a thin handler over the capacity service), as JSON,
a stacked capacity-over-time chart (``Accept: image/svg+xml``), CSV or XLSX per phase."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.params import Body

from app.domain.capacity import charts, sheets
from app.domain.capacity.schemas import CapacityPlanCreate, CapacityPlanRead
from app.domain.capacity.service import CapacityService
from app.domain.shared import costs
from app.i18n import Lang, language
from app.web.bodies import CAPACITY_BODY_BYTES
from app.web.negotiation import CSV, JSON, negotiate
from app.web.offload import worker_pool
from app.web.problems import BODY_PROBLEMS
from app.web.spreadsheets import XLSX, attachment


class CapacityController(Controller):
    path = "/v1"
    tags = ["planning"]

    @post(
        "/capacity-plans",
        operation_id="computeCapacityPlan",
        opt={"scope": "decisions:run", "cost": costs.capacity_plan},
        request_max_body_size=CAPACITY_BODY_BYTES,
        summary="Portfolios for a demand that changes over the horizon: every single option and the cost-optimal "
        "mix of owned, reserved, rented and platform capacity (JSON; a chart with Accept: image/svg+xml; CSV "
        "or XLSX per phase)",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def compute_capacity_plan(
        self,
        request: Request[Any, Any, Any],
        capacity: NamedDependency[CapacityService],
        data: Annotated[CapacityPlanCreate, Body()],
    ) -> Response[CapacityPlanRead]:
        media = negotiate(request, [JSON, charts.SVG, CSV, XLSX])
        lang = language(request.scope)
        headers = {"Vary": "Accept, Accept-Language"}
        if media == JSON:
            answer = await worker_pool(request).answer(capacity.plan, data, lang)
            answer.headers.update(headers)
            return answer  # type: ignore[return-value]
        # the plan and its chart or spreadsheet in one computation, off the loop: what it answers is final
        doc, content = await worker_pool(request).run(_rendered, capacity, data, lang, media)
        if media != charts.SVG:
            headers |= attachment("capacity-plan", doc.knowledge_version, doc.as_of, "csv" if media == CSV else "xlsx")
        return Response(content, media_type=media, headers=headers)  # type: ignore[arg-type]


def _rendered(
    capacity: CapacityService, data: CapacityPlanCreate, lang: Lang, media: str
) -> tuple[CapacityPlanRead, str | bytes]:
    """The plan and its SVG chart, CSV or XLSX workbook (``media``)."""
    doc = capacity.plan(data, lang)
    if media == charts.SVG:
        return doc, charts.capacity_svg(doc, lang)
    return doc, sheets.plan_csv(doc, data) if media == CSV else sheets.plan_workbook(doc, lang, data)
