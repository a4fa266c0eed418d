"""A stored recommendation beside its request priced now: its drift (JSON or CSV)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import Parameter

from app.core.text import msg
from app.domain.decisions.service import DecisionService
from app.domain.decisions.storing import readable
from app.domain.procurement import drift_schemas as s
from app.domain.procurement.drift import NotRepriceable, Stored, drift
from app.domain.procurement.drift_csv import drift_csv
from app.domain.shared.engine import Engine
from app.i18n import language, name_of
from app.kb.books import Books
from app.kb.repositories import RecommendationRepository
from app.web.auth import principal_of
from app.web.negotiation import CSV, JSON, negotiate
from app.web.offload import worker_pool
from app.web.problems import COMMON_PROBLEMS, ProblemException, problem
from app.web.spreadsheets import attachment


class DriftController(Controller):
    path = "/v1"
    tags = ["watches"]  # drift is what a watch is sent

    @get(
        "/recommendations/{rec_id:str}/drift",
        operation_id="getRecommendationDrift",
        opt={"scope": "recommendations:write"},
        summary="A stored recommendation beside its request priced now (JSON, or CSV with Accept: text/csv)",
        description="The stored request is priced again on today's knowledge and the organisation's price "
        "book (as of today unless the request pinned `as_of`): both sides' knowledge versions, recommended "
        "option and costs, the rank changes, each option's cost change (a fraction of the stored expected "
        'total) and the offers gone. docs/operations.md "Drift" says what counts as `changed`.',
        responses={
            **COMMON_PROBLEMS,
            409: problem(
                409,
                "The stored request can no longer be priced: it no longer validates against the service or the "
                "knowledge base (a GPU model, region or currency it names is gone); the detail says why.",
            ),
        },
    )
    async def get_drift(
        self,
        request: Request[Any, Any, Any],
        decisions: NamedDependency[DecisionService],
        recommendations: NamedDependency[RecommendationRepository],
        rec_id: Annotated[str, Parameter(max_length=36)],
    ) -> Response[s.DriftRead]:
        media = negotiate(request, [JSON, CSV])
        principal = principal_of(request)
        row = await recommendations.get_one_or_none(id=rec_id)
        if row is None or not readable(row, api_key_id=principal.id, admin=principal.is_admin, org=principal.org):
            raise NotFoundException(
                detail=msg("problem.detail.no_recommendation", f"no recommendation '{rec_id}'", id=rec_id)
            )
        stored = Stored(row.id, row.knowledge_version, row.request, row.response)
        org = row.org
        # read: the connection goes back before the evaluation (a rollback expires the row, hence the copy)
        await recommendations.session.rollback()
        # priced on the recommendation's organisation's book (an admin key reading another's too)
        books: Books = request.app.state.books
        book = None if org is None else await books.current(org)
        try:
            with Engine.priced_with(book):  # a full evaluation, off the loop: the pool runs it in this context
                doc = await worker_pool(request).run(drift, decisions, stored)
        except NotRepriceable as exc:
            lang = language(request.scope)
            raise ProblemException(
                409,
                "conflict",
                name_of(
                    "problem.title.drift.not_repriceable", lang, "The stored recommendation cannot be priced again"
                ),
                exc.detail,
                field=exc.field,
            ) from exc
        if media == CSV:
            headers = attachment("recommendation-drift", doc.now.knowledge_version, decisions.engine.today(), "csv")
            return Response(drift_csv(doc), media_type=CSV, headers=headers)  # type: ignore[arg-type]
        return Response(doc)
