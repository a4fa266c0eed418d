"""Training-run planner: ``POST /v1/training-plans`` (a thin handler over the planning service), as JSON,
a chart of cost per million tokens against calendar days (``Accept: image/svg+xml``), CSV or XLSX of the
candidates (or, on one GPU model, of the options)."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from litestar import Controller, Response
from litestar.di import NamedDependency
from litestar.params import Body

from app.core.offers import gpu_name
from app.domain.planning import charts, sheets
from app.domain.planning.schemas import TrainingCandidatesRead, TrainingPlanCreate, TrainingPlanRead
from app.domain.planning.service import plan
from app.domain.shared import costs
from app.domain.shared.advisor import Advisor
from app.domain.shared.represent import CSV, XLSX, Formats, Representation
from app.domain.shared.routes import AnyRequest, computation
from app.engine.planner import FLOPS_PER_PARAMETER_TOKEN
from app.i18n import Lang

PLAN = Formats(file="training-plan", vary=True)


class PlanningController(Controller):
    path = "/v1"
    tags = ["planning"]

    @computation(
        "/training-plans",
        operation_id="computeTrainingPlan",
        cost=costs.training_plan,
        summary="Plan a training run: calendar time and cost on each option, on one GPU model or ranked across "
        "GPU models by cost per million tokens (JSON; a chart with Accept: image/svg+xml; CSV or XLSX)",
    )
    async def compute_training_plan(
        self,
        request: AnyRequest,
        advisor: NamedDependency[Advisor],
        data: Annotated[TrainingPlanCreate, Body()],
    ) -> Response[TrainingPlanRead | TrainingCandidatesRead]:
        shown = Representation(request, PLAN)
        return await shown.computed(
            partial(plan, advisor, data, shown.lang), partial(_drawn, advisor, data), heavy=True
        )


def _drawn(
    advisor: Advisor, data: TrainingPlanCreate, doc: TrainingPlanRead | TrainingCandidatesRead, media: str, lang: Lang
) -> str | bytes:
    """The plan as a CSV, an XLSX workbook or an SVG chart (``media``)."""
    if media == CSV:
        return sheets.plan_csv(doc, data)
    if media == XLSX:
        return sheets.plan_workbook(doc, lang, data)
    if isinstance(doc, TrainingCandidatesRead):
        return charts.candidates_svg(doc, lang)
    # one GPU model: the run's tokens as the service counts them (6 FLOPs a parameter and token)
    tokens = data.tokens if data.tokens is not None else doc.flops / (FLOPS_PER_PARAMETER_TOKEN * data.parameters)
    gpu = gpu_name(advisor.knowledge(), doc.gpu_model)
    return charts.plan_svg(doc, lang, parameters=data.parameters, tokens=tokens, gpu=gpu, precision=data.precision)
