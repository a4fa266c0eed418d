"""A stored recommendation beside its request priced now: its drift (JSON or CSV)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Annotated, Any

from litestar import Controller, Request, Response
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import Parameter

from app.core.text import msg
from app.domain.decisions.service import DecisionService
from app.domain.decisions.storing import readable
from app.domain.procurement import drift_schemas as s
from app.domain.procurement.drift import NotRepriceable, Stored, drift
from app.domain.procurement.drift_csv import drift_csv
from app.domain.shared.advisor import Advisor
from app.domain.shared.represent import Formats, Representation
from app.domain.shared.routes import reading
from app.i18n import Lang, name_of
from app.kb.books import Book, Books
from app.kb.repositories import RecommendationRepository
from app.web.auth import principal_of
from app.web.problems import COMMON_PROBLEMS, ProblemException, problem

DRIFT = Formats(file="recommendation-drift", version=lambda doc: doc.now.knowledge_version)


class DriftController(Controller):
    path = "/v1"
    tags = ["watches"]  # drift is what a watch is sent

    @reading(
        "/recommendations/{rec_id:str}/drift",
        operation_id="getRecommendationDrift",
        scope="recommendations:write",
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
        shown = Representation(request, DRIFT)  # a 406 before a 404
        stored, book = await _stored(request, recommendations, rec_id)
        # priced on the recommendation's organisation's book (an admin key reading another's too), off the loop:
        # the pool runs it in this context
        with Advisor.priced_with(book), _repriceable(shown.lang):
            compute = partial(drift, decisions, stored)
            return await shown.computed(compute, _csv, heavy=True, day=decisions.advisor.today())


async def _stored(
    request: Request[Any, Any, Any], recommendations: RecommendationRepository, rec_id: str
) -> tuple[Stored, Book | None]:
    """The stored recommendation the request's key may read (404 otherwise), and the book it is priced on now."""
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
    books: Books = request.app.state.books
    return stored, None if org is None else await books.current(org)


@contextmanager
def _repriceable(lang: Lang) -> Iterator[None]:
    """A stored request that can no longer be priced as a 409 problem saying why."""
    try:
        yield
    except NotRepriceable as exc:
        title = name_of("problem.title.drift.not_repriceable", lang, "The stored recommendation cannot be priced again")
        raise ProblemException(409, "conflict", title, exc.detail, field=exc.field) from exc


def _csv(doc: s.DriftRead, _media: str, _lang: Lang) -> bytes:
    return drift_csv(doc)
