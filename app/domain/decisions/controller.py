"""Price comparisons, recommendations and batch evaluations: thin handlers over DecisionService."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, cast

from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import Body, HeaderParameter, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from app.core.text import msg
from app.domain.decisions import schemas as s
from app.domain.decisions import storing
from app.domain.decisions.csv import comparison_csv, comparison_workbook, evaluations_workbook
from app.domain.decisions.service import DecisionService
from app.domain.decisions.storing import check_idempotency_key
from app.domain.procurement.drift_schemas import RecommendationList
from app.domain.shared import costs
from app.domain.shared.demand import ComparisonCreate, RecommendationCreate
from app.domain.shared.represent import CSV, XLSX, Formats, Representation
from app.domain.shared.routes import AnyRequest, DbSession, computation, reading
from app.i18n import Lang, language, pin_language
from app.kb.recommendations import IDEMPOTENCY_KEY_MAX_LENGTH
from app.kb.repositories import RecommendationRepository
from app.kb.writer import RecommendationWriter
from app.web.auth import principal_of
from app.web.bodies import SINGLE_BODY_BYTES
from app.web.offload import worker_pool
from app.web.pagination import DEFAULT_LIMIT, Limit, Offset
from app.web.problems import BODY_PROBLEMS, problem

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
#: ``?store=false`` is deprecated since 2026-12-03 (RFC 9745's ``@`` date); its successor is POST /v1/evaluations
STORE_FALSE_DEPRECATION = {"Deprecation": "@1796256000", "Link": '</v1/evaluations>; rel="successor-version"'}
COMPARISON = Formats(file="price-comparison")
EVALUATIONS = Formats(file="evaluations")


class DecisionController(Controller):
    path = "/v1"
    tags = ["decisions"]

    @computation(
        "/price-comparisons",
        operation_id="comparePrices",
        cost=costs.comparison,
        summary="Compare the options' costs (JSON, or CSV with Accept: text/csv)",
    )
    async def compare(
        self,
        request: Request[Any, Any, Any],
        decisions: NamedDependency[DecisionService],
        data: Annotated[ComparisonCreate, Body()],
    ) -> Response[s.ComparisonRead]:
        shown = Representation(request, COMPARISON)
        identity = decisions.comparison_identity(data)  # the memo's key and the ETag's, made once
        compute = partial(decisions.compare, data, shown.lang, identity)
        # a demand is priced as capacity plans are, by a solver: off the loop; else on it, memoised (computed
        # before a 304 is answered: only where the answer would be a 200)
        heavy, etag = data.demand is not None, ("comparison", identity)
        return await shown.computed(compute, partial(_comparison, data), heavy=heavy, etag=etag)

    @post(
        "/recommendations",
        operation_id="createRecommendation",
        opt={"scope": "recommendations:write", "cost": costs.recommendation},
        request_max_body_size=SINGLE_BODY_BYTES,
        summary="Rank the options for a team's profile, store and return the recommendation",
        status_code=HTTP_201_CREATED,
        responses={
            **BODY_PROBLEMS,
            409: problem(
                409,
                "`…:idempotency-key-conflict`: the `Idempotency-Key` was used within 24 h with another body.",
            ),
            429: problem(
                429,
                "Rate limit exceeded, or (`…:recommendation-quota-exceeded`) the key's daily quota of stored "
                "recommendations is reached; retry after the Retry-After header's seconds.",
            ),
            503: problem(
                503,
                "The knowledge base or the database is unavailable, or (`…:writer-busy`) too many "
                "recommendations are waiting to be stored; retry after the Retry-After header's seconds.",
            ),
        },
    )
    async def recommend(
        self,
        request: Request[Any, Any, Any],
        decisions: NamedDependency[DecisionService],
        db_session: DbSession,
        data: Annotated[RecommendationCreate, Body()],
        # deprecated, outside the documented contract (README, Deprecations): POST /v1/evaluations answers it
        store: Annotated[bool, Parameter(include_in_schema=False)] = True,
        idempotency_key: Annotated[
            str | None,
            HeaderParameter(
                name=IDEMPOTENCY_KEY_HEADER,
                # documented, checked by the service (a 400 naming the header, not the argument)
                schema_extra={"min_length": 1, "max_length": IDEMPOTENCY_KEY_MAX_LENGTH, "pattern": "^[!-~]+$"},
                description="A client-chosen key (1–255 visible ASCII characters, e.g. a UUID). The same key "
                "(of the same API key) and the same body within 24 h answer the stored recommendation again, "
                "with its original status and `Location` (and `Idempotent-Replayed: true`); the same key with "
                "another body answers 409.",
            ),
        ] = None,
    ) -> Response[s.RecommendationRead]:
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)  # a malformed header is refused whether or not it is used
        evaluation = None
        if data.demand is not None:  # priced as capacity plans are, by a solver: off the loop, its answer final
            evaluation = await worker_pool(request).run(
                decisions.evaluate, data, insights=True, lang=language(request.scope)
            )
        if not store:
            if evaluation is None:
                evaluation = decisions.evaluate(data, insights=True, lang=language(request.scope))
            evaluated = Response(evaluation, status_code=HTTP_200_OK, headers=STORE_FALSE_DEPRECATION)
            return cast("Response[s.RecommendationRead]", evaluated)
        writer: RecommendationWriter = request.app.state.recommendation_writer  # app state, as the worker pool
        answer = await storing.recommend(
            decisions,
            data,
            api_key_id=principal_of(request).id,
            org=principal_of(request).org,
            writer=writer,
            session=db_session,
            idempotency_key=idempotency_key,
            lang=language(request.scope),
            evaluation=evaluation,
        )
        headers = {"Location": answer.location}
        if answer.replayed:
            headers["Idempotent-Replayed"] = "true"
        # the stored document's bytes (or a replay's document): the answer the OpenAPI document describes
        stored = Response(answer.doc, status_code=answer.status, headers=headers)
        return cast("Response[s.RecommendationRead]", stored)

    @reading(
        "/recommendations/{rec_id:str}",
        operation_id="getRecommendation",
        scope="recommendations:write",
        summary="A stored recommendation, exactly as it was answered",
    )
    async def get_recommendation(
        self,
        request: AnyRequest,
        recommendations: NamedDependency[RecommendationRepository],
        rec_id: Annotated[str, Parameter(max_length=36)],
    ) -> Response[s.RecommendationRead]:
        principal = principal_of(request)
        doc = await storing.stored(
            recommendations, rec_id, api_key_id=principal.id, admin=principal.is_admin, org=principal.org
        )
        if doc is None:
            raise NotFoundException(
                detail=msg("problem.detail.no_recommendation", f"no recommendation '{rec_id}'", id=rec_id)
            )
        pin_language(request.scope, "zh" if doc.get("language") == "zh" else "en")
        return Response(doc)  # type: ignore[arg-type]

    @reading(
        "/recommendations",
        operation_id="listRecommendations",
        scope="recommendations:write",
        summary="The stored recommendations this key may read, newest first",
        description="An organisation's key lists its organisation's; a key of no organisation its own; an "
        "`admin` key every one. Each item says what tells it apart, not its whole answer (GET "
        "/v1/recommendations/{rec_id} has that; GET /v1/recommendations/{rec_id}/drift its drift).",
    )
    async def list_recommendations(
        self,
        request: AnyRequest,
        db_session: DbSession,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> RecommendationList:
        return await storing.recommendation_list(db_session, principal_of(request), limit, offset)

    @post(
        "/evaluations",
        operation_id="evaluateProfiles",
        opt={"scope": "decisions:run", "cost": costs.evaluations},
        summary="Rank the options for many profiles at once, without storing them",
        status_code=200,
        responses={**BODY_PROBLEMS},
    )
    async def evaluate(
        self,
        request: Request[Any, Any, Any],
        decisions: NamedDependency[DecisionService],
        data: Annotated[s.EvaluationCreate, Body()],
    ) -> Response[s.EvaluationsRead]:
        shown = Representation(request, EVALUATIONS)
        heavy = shown.media == XLSX or decisions.is_heavy(data)  # a workbook is written off the loop, any size
        compute = partial(decisions.evaluate_many, data, shown.lang)
        return await shown.computed(compute, partial(_evaluations, data), heavy=heavy, day=decisions.advisor.today())


def _comparison(data: ComparisonCreate, doc: s.ComparisonRead, media: str, lang: Lang) -> str | bytes:
    """The comparison as a CSV or an XLSX workbook (``media``)."""
    return comparison_csv(doc, data) if media == CSV else comparison_workbook(doc, lang, data)


def _evaluations(data: s.EvaluationCreate, doc: s.EvaluationsRead, _media: str, lang: Lang) -> bytes:
    return evaluations_workbook(doc, lang, data.profiles)
