"""Decision insights: break-even points, sensitivity and uncertainty for a profile (thin handlers)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, post
from litestar.di import NamedDependency
from litestar.params import Body

from app.domain.insights.schemas import BreakEvenRead, SensitivityRead, UncertaintyCreate, UncertaintyRead
from app.domain.insights.service import InsightService
from app.domain.shared import costs
from app.domain.shared.schemas import ProfileCreate
from app.lib.offload import WorkerPool
from app.lib.problems import BODY_PROBLEMS


class InsightsController(Controller):
    path = "/v1"
    tags = ["insights"]

    @post(
        "/break-even",
        operation_id="createBreakEven",
        opt={"scope": "decisions:run", "cost": costs.break_even},
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Break-even utilizations, the cluster size from which owning is cheapest, payback months",
    )
    async def break_even(
        self,
        insights: NamedDependency[InsightService],
        worker_pool: NamedDependency[WorkerPool],
        data: Annotated[ProfileCreate, Body()],
    ) -> Response[BreakEvenRead]:
        return await worker_pool.answer(insights.break_even, data)  # type: ignore[return-value]

    @post(
        "/sensitivity",
        operation_id="createSensitivity",
        opt={"scope": "decisions:run", "cost": costs.sensitivity},
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Each input moved across its range, ordered by effect; what would change the answer",
    )
    async def sensitivity(
        self,
        insights: NamedDependency[InsightService],
        worker_pool: NamedDependency[WorkerPool],
        data: Annotated[ProfileCreate, Body()],
    ) -> Response[SensitivityRead]:
        return await worker_pool.answer(insights.sensitivity, data)  # type: ignore[return-value]

    @post(
        "/uncertainty",
        operation_id="createUncertainty",
        opt={"scope": "decisions:run", "cost": costs.uncertainty},
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Monte Carlo over the knowledge base's ranges: cost percentiles, probability of ranking first",
    )
    async def uncertainty(
        self,
        insights: NamedDependency[InsightService],
        worker_pool: NamedDependency[WorkerPool],
        data: Annotated[UncertaintyCreate, Body()],
    ) -> Response[UncertaintyRead]:
        return await worker_pool.answer(insights.uncertainty, data)  # type: ignore[return-value]
