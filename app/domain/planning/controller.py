"""Training-run planner: ``POST /v1/training-plans`` (a thin handler over the planning service)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.params import Body

from app.domain.planning.schemas import TrainingPlanCreate, TrainingPlanRead
from app.domain.planning.service import plan
from app.domain.shared import costs
from app.domain.shared.engine import Engine
from app.i18n import language
from app.web.bodies import SINGLE_BODY_BYTES
from app.web.offload import worker_pool
from app.web.problems import BODY_PROBLEMS


class PlanningController(Controller):
    path = "/v1"
    tags = ["planning"]

    @post(
        "/training-plans",
        operation_id="computeTrainingPlan",
        opt={"scope": "decisions:run", "cost": costs.training_plan},
        request_max_body_size=SINGLE_BODY_BYTES,
        summary="Plan a training run: calendar time and cost on each option",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def compute_training_plan(
        self,
        request: Request[Any, Any, Any],
        engine: NamedDependency[Engine],
        data: Annotated[TrainingPlanCreate, Body()],
    ) -> Response[TrainingPlanRead]:
        return await worker_pool(request).answer(plan, engine, data, language(request.scope))  # type: ignore[return-value]
