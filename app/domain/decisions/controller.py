"""Price comparisons, recommendations and batch evaluations: thin handlers over DecisionService."""

from __future__ import annotations

from typing import Annotated, Any, cast

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.openapi import ResponseSpec
from litestar.params import Body, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from app.domain.decisions import schemas as s
from app.domain.decisions.csv import comparison_csv
from app.domain.decisions.service import DecisionService
from app.domain.shared import costs
from app.domain.shared.schemas import ComparisonCreate, ProfileCreate
from app.kb.repositories import RecommendationRepository
from app.kb.writer import RecommendationWriter
from app.lib.auth import principal_of
from app.lib.caching import answer_etag, caching_headers, not_modified
from app.lib.negotiation import CSV, JSON, negotiate
from app.lib.offload import WorkerPool
from app.lib.problems import BODY_PROBLEMS, COMMON_PROBLEMS


class DecisionController(Controller):
    path = "/v1"
    tags = ["decisions"]

    @post(
        "/price-comparisons",
        operation_id="createPriceComparison",
        opt={"scope": "decisions:run", "cost": costs.comparison},
        summary="Compare the options' costs (JSON, or CSV with Accept: text/csv)",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def compare(
        self,
        request: Request[Any, Any, Any],
        decisions: NamedDependency[DecisionService],
        data: Annotated[ComparisonCreate, Body()],
    ) -> Response[s.ComparisonRead]:
        media = negotiate(request, [JSON, CSV])
        etag = answer_etag(request.scope, "comparison", decisions.comparison_identity(data), media)
        headers = caching_headers(etag) if etag else {}
        doc = decisions.compare(data)  # first: a 304 only where the answer would be a 200 (memoised)
        if not_modified(request.scope, etag):
            return Response(None, status_code=304, headers=headers)  # type: ignore[arg-type]
        if media == CSV:
            return Response(comparison_csv(doc), media_type=CSV, headers=headers)  # type: ignore[arg-type]
        return Response(doc, headers=headers)

    @post(
        "/recommendations",
        operation_id="createRecommendation",
        opt={"scope": "recommendations:write", "cost": costs.recommendation},
        summary="Rank the options for a team's profile, store and return the recommendation",
        status_code=HTTP_201_CREATED,
        responses={
            **BODY_PROBLEMS,
            200: ResponseSpec(
                data_container=s.Evaluation,
                description="With `store=false`: the evaluation, not stored (no `id`, no `Location`); "
                "answered from the knowledge snapshot even while the database is unreachable.",
                generate_examples=False,
            ),
        },
    )
    async def recommend(
        self,
        request: Request[Any, Any, Any],
        decisions: NamedDependency[DecisionService],
        recommendation_writer: NamedDependency[RecommendationWriter],
        data: Annotated[ProfileCreate, Body()],
        store: Annotated[
            bool,
            Parameter(
                description="`false`: answer the evaluation with 200 without storing it (no database needed)",
            ),
        ] = True,
    ) -> Response[s.RecommendationRead]:
        if not store:
            evaluation = decisions.evaluate(data, insights=True)
            return cast("Response[s.RecommendationRead]", Response(evaluation, status_code=HTTP_200_OK))
        doc = await decisions.recommend(data, api_key_id=principal_of(request).id, writer=recommendation_writer)
        return Response(doc, status_code=HTTP_201_CREATED, headers={"Location": f"/v1/recommendations/{doc.id}"})

    @get(
        "/recommendations/{rec_id:str}",
        operation_id="getRecommendation",
        opt={"scope": "recommendations:write"},
        summary="A stored recommendation, exactly as it was answered",
        responses={**COMMON_PROBLEMS},
    )
    async def get_recommendation(
        self,
        request: Request[Any, Any, Any],
        recommendations: NamedDependency[RecommendationRepository],
        rec_id: Annotated[str, Parameter(max_length=36)],
    ) -> Response[s.RecommendationRead]:
        principal = principal_of(request)
        doc = await DecisionService.stored(recommendations, rec_id, api_key_id=principal.id, admin=principal.is_admin)
        if doc is None:
            raise NotFoundException(f"no recommendation '{rec_id}'")
        return Response(doc)  # type: ignore[arg-type]

    @post(
        "/evaluations",
        operation_id="createEvaluations",
        opt={"scope": "decisions:run", "cost": costs.evaluations},
        summary="Rank the options for many profiles at once, without storing them",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def evaluate(
        self,
        decisions: NamedDependency[DecisionService],
        worker_pool: NamedDependency[WorkerPool],
        data: Annotated[s.EvaluationCreate, Body()],
    ) -> Response[s.EvaluationsRead]:
        if decisions.is_heavy(data):
            return await worker_pool.answer(decisions.evaluate_many, data)  # type: ignore[return-value]
        return Response(decisions.evaluate_many(data))
