"""Decision insights: break-even points, sensitivity and uncertainty for a profile."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import Body

from app.api import schemas as s
from app.api.errors import BODY_PROBLEMS
from app.api.insight_schemas import BreakEvenRead, SensitivityRead, UncertaintyCreate, UncertaintyRead
from app.services import Advisor


class InsightsController(Controller):
    path = "/v1"
    tags = ["insights"]

    @post(
        "/break-even",
        operation_id="createBreakEven",
        opt={"scope": "decisions:run"},
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Break-even utilizations, the cluster size from which owning is cheapest, payback months",
    )
    async def break_even(
        self, advisor: NamedDependency[Advisor], data: Annotated[s.ProfileCreate, Body()]
    ) -> BreakEvenRead:
        return advisor.break_even(data)

    @post(
        "/sensitivity",
        operation_id="createSensitivity",
        opt={"scope": "decisions:run"},
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Each input moved across its range, ordered by effect; what would change the answer",
    )
    async def sensitivity(
        self, advisor: NamedDependency[Advisor], data: Annotated[s.ProfileCreate, Body()]
    ) -> SensitivityRead:
        return advisor.sensitivity(data)

    @post(
        "/uncertainty",
        operation_id="createUncertainty",
        opt={"scope": "decisions:run"},
        status_code=200,
        responses={**BODY_PROBLEMS},
        summary="Monte Carlo over the knowledge base's ranges: cost percentiles, probability of ranking first",
    )
    async def uncertainty(
        self, advisor: NamedDependency[Advisor], data: Annotated[UncertaintyCreate, Body()]
    ) -> UncertaintyRead:
        return advisor.uncertainty(data, draws=data.draws, seed=data.seed)
