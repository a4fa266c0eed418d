"""Training-run planner: ``POST /v1/training-plans`` (a thin handler over the planning service), as JSON,
a chart of cost per million tokens against calendar days (``Accept: image/svg+xml``), CSV or XLSX of the
candidates (or, on one GPU model, of the options)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.params import Body

from app.core.offers import gpu_name
from app.domain.planning import charts, sheets
from app.domain.planning.schemas import TrainingCandidatesRead, TrainingPlanCreate, TrainingPlanRead
from app.domain.planning.service import plan
from app.domain.shared import costs
from app.domain.shared.engine import Engine
from app.engine.planner import FLOPS_PER_PARAMETER_TOKEN
from app.i18n import Lang, language
from app.web.bodies import SINGLE_BODY_BYTES
from app.web.negotiation import CSV, JSON, negotiate
from app.web.offload import worker_pool
from app.web.problems import BODY_PROBLEMS
from app.web.spreadsheets import XLSX, attachment


class PlanningController(Controller):
    path = "/v1"
    tags = ["planning"]

    @post(
        "/training-plans",
        operation_id="computeTrainingPlan",
        opt={"scope": "decisions:run", "cost": costs.training_plan},
        request_max_body_size=SINGLE_BODY_BYTES,
        summary="Plan a training run: calendar time and cost on each option, on one GPU model or ranked across "
        "GPU models by cost per million tokens (JSON; a chart with Accept: image/svg+xml; CSV or XLSX)",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def compute_training_plan(
        self,
        request: Request[Any, Any, Any],
        engine: NamedDependency[Engine],
        data: Annotated[TrainingPlanCreate, Body()],
    ) -> Response[TrainingPlanRead | TrainingCandidatesRead]:
        media = negotiate(request, [JSON, charts.SVG, CSV, XLSX])
        lang = language(request.scope)
        headers = {"Vary": "Accept, Accept-Language"}
        if media == JSON:
            answer = await worker_pool(request).answer(plan, engine, data, lang)
            answer.headers.update(headers)
            return answer  # type: ignore[return-value]
        # the plan and its chart or spreadsheet in one computation, off the loop: what it answers is final
        doc, content = await worker_pool(request).run(_rendered, engine, data, lang, media)
        if media != charts.SVG:
            headers |= attachment("training-plan", doc.knowledge_version, doc.as_of, "csv" if media == CSV else "xlsx")
        return Response(content, media_type=media, headers=headers)  # type: ignore[arg-type]


def _rendered(
    engine: Engine, data: TrainingPlanCreate, lang: Lang, media: str
) -> tuple[TrainingPlanRead | TrainingCandidatesRead, str | bytes]:
    """The plan and its SVG chart, CSV or XLSX workbook (``media``)."""
    doc = plan(engine, data, lang)
    if media == CSV:
        return doc, sheets.plan_csv(doc, data)
    if media == XLSX:
        return doc, sheets.plan_workbook(doc, lang, data)
    if isinstance(doc, TrainingCandidatesRead):
        return doc, charts.candidates_svg(doc, lang)
    # one GPU model: the run's tokens as the service counts them (6 FLOPs a parameter and token)
    tokens = data.tokens if data.tokens is not None else doc.flops / (FLOPS_PER_PARAMETER_TOKEN * data.parameters)
    gpu = gpu_name(engine.knowledge(), doc.gpu_model)
    svg = charts.plan_svg(doc, lang, parameters=data.parameters, tokens=tokens, gpu=gpu, precision=data.precision)
    return doc, svg
