"""Price comparisons, recommendations and batch evaluations."""

from __future__ import annotations

import csv
import datetime as dt
import io
import uuid
from typing import Annotated, Any, cast

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException, NotFoundException
from litestar.openapi import ResponseSpec
from litestar.params import Body, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED
from sqlalchemy.ext.asyncio import AsyncSession

from app.api import schemas as s
from app.api.auth import principal_of
from app.api.caching import caching_headers, matches, request_etag
from app.api.errors import BODY_PROBLEMS, COMMON_PROBLEMS
from app.kb import models as m
from app.kb.writer import RecommendationWriter
from app.services import Advisor

CSV = "text/csv"
JSON = "application/json"
RANGE_FIELDS = ("annual_cost", "total_cost", "upfront_cost", "cost_per_useful_gpu_hour")


def _negotiate(request: Request[Any, Any, Any], offered: list[str]) -> str:
    if "accept" not in request.headers:
        return offered[0]
    best = request.accept.best_match(offered)
    if best is None:
        raise HTTPException(status_code=406, detail=f"this operation answers in {', '.join(offered)}")
    return best


def comparison_csv(doc: s.ComparisonRead) -> str:
    """One row per option (record ``total``) and one per breakdown line (record ``line_item``)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(
        [
            "knowledge_version",
            "currency",
            "as_of",
            "option",
            "record",
            "label",
            *(f"{f}_{end}" for f in RANGE_FIELDS for end in ("low", "expected", "high")),
            "sources",
            "error",
        ]
    )
    for item in doc.items:
        head = [doc.knowledge_version, doc.currency, doc.as_of.isoformat(), item.option]
        figures = [
            getattr(getattr(item, f), end) if getattr(item, f) is not None else ""
            for f in RANGE_FIELDS
            for end in ("low", "expected", "high")
        ]
        w.writerow([*head, "total", item.name, *figures, "", item.error or ""])
        for li in item.breakdown:
            annual = [li.annual.low, li.annual.expected, li.annual.high]
            upfront = [li.upfront.low, li.upfront.expected, li.upfront.high]
            sources = " | ".join(f"{x.table}:{x.ref}" for x in li.sources)
            w.writerow([*head, "line_item", li.label, *annual, "", "", "", *upfront, "", "", "", sources, ""])
    return out.getvalue()


class DecisionController(Controller):
    path = "/v1"
    tags = ["decisions"]

    @post(
        "/price-comparisons",
        operation_id="createPriceComparison",
        opt={"scope": "decisions:run"},
        summary="Compare the options' costs (JSON, or CSV with Accept: text/csv)",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def compare(
        self,
        request: Request[Any, Any, Any],
        advisor: NamedDependency[Advisor],
        data: Annotated[s.ComparisonCreate, Body()],
    ) -> Response[s.ComparisonRead]:
        media = _negotiate(request, [JSON, CSV])
        knowledge = advisor.knowledge()
        normalised = data.model_copy(update={"as_of": data.as_of or advisor.today()}).model_dump_json()
        etag = request_etag(knowledge.version, request.app.state.plugins_fingerprint, "comparison", normalised, media)
        headers = caching_headers(etag)
        if matches(request.headers.get("if-none-match"), etag):
            return Response(None, status_code=304, headers=headers)  # type: ignore[arg-type]
        doc = advisor.compare(data)
        if media == CSV:
            return Response(comparison_csv(doc), media_type=CSV, headers=headers)  # type: ignore[arg-type]
        return Response(doc, headers=headers)

    @post(
        "/recommendations",
        operation_id="createRecommendation",
        opt={"scope": "recommendations:write"},
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
        advisor: NamedDependency[Advisor],
        recommendation_writer: NamedDependency[RecommendationWriter],
        data: Annotated[s.ProfileCreate, Body()],
        store: Annotated[
            bool,
            Parameter(
                description="`false`: answer the evaluation with 200 without storing it (no database needed)",
            ),
        ] = True,
    ) -> Response[s.RecommendationRead]:
        evaluation = advisor.evaluate(data, insights=True)
        if not store:
            return cast("Response[s.RecommendationRead]", Response(evaluation, status_code=HTTP_200_OK))
        rec_id = str(uuid.uuid4())
        created = dt.datetime.now(dt.UTC).replace(microsecond=0)
        doc = s.RecommendationRead(id=rec_id, created_at=created, **msgspec.structs.asdict(evaluation))
        body = msgspec.to_builtins(doc)
        await recommendation_writer.store(
            {
                "id": rec_id,
                "created_at": created,
                "knowledge_version": evaluation.knowledge_version,
                "methodology_version": evaluation.methodology_version,
                "request": data.model_dump(mode="json"),
                "response": body,
                "api_key_id": principal_of(request).id,
            }
        )
        return Response(doc, status_code=HTTP_201_CREATED, headers={"Location": f"/v1/recommendations/{rec_id}"})

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
        db_session: NamedDependency[AsyncSession],
        rec_id: Annotated[str, Parameter(max_length=36)],
    ) -> Response[s.RecommendationRead]:
        row = await db_session.get(m.Recommendation, rec_id)
        principal = principal_of(request)
        # another key's recommendation does not exist for this key (no hint that the id is taken)
        if row is None or not (principal.is_admin or row.api_key_id == principal.id):
            raise NotFoundException(f"no recommendation '{rec_id}'")
        return Response(row.response)  # type: ignore[arg-type]

    @post(
        "/evaluations",
        operation_id="createEvaluations",
        opt={"scope": "decisions:run"},
        summary="Rank the options for many profiles at once, without storing them",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def evaluate(
        self, advisor: NamedDependency[Advisor], data: Annotated[s.EvaluationCreate, Body()]
    ) -> s.EvaluationsRead:
        return advisor.evaluate_many(data)
