"""Watches of stored recommendations: thin handlers over ``app.domain.procurement.watches``."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, delete, post
from litestar.params import Body, Parameter
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from app.domain.procurement import watch_schemas as s
from app.domain.procurement import watches
from app.domain.procurement.watches_dispatch import WatchDispatcher
from app.domain.shared.routes import PAGING, AnyRequest, DbSession, Page, reading
from app.web.auth import principal_of
from app.web.problems import BODY_PROBLEMS, COMMON_PROBLEMS, problem

WatchId = Annotated[str, Parameter(max_length=36)]


def _dispatcher(request: AnyRequest) -> WatchDispatcher:
    found: WatchDispatcher = request.app.state.watches
    return found


class WatchController(Controller):
    path = "/v1/watches"
    tags = ["watches"]
    #: ``page``: a list's ``limit`` and ``offset``
    dependencies = PAGING

    @post(
        "/",
        operation_id="createWatch",
        opt={"scope": "recommendations:write"},
        summary="Watch a stored recommendation: signed drift events POSTed to a URL",
        description="When a new knowledge version or a change of the organisation's price book moves the "
        "recommendation's costs by `min_cost_change` or more, or (`on_rank_change`) its ranking, a JSON event "
        "is POSTed to `url`, signed with `secret` (`X-Compute-Advisor-Signature: sha256=<HMAC-SHA256 of the "
        "body>`), retried with backoff, recorded in `GET /v1/watches/{id}/deliveries`: one event per watch "
        "and version. The secret is never answered back.",
        status_code=HTTP_201_CREATED,
        responses={
            **BODY_PROBLEMS,
            422: problem(
                422,
                "Invalid field, named in `field`: a `secret` of fewer than 16 or more than 200 characters, "
                "`min_cost_change` outside 0–10, a `url` that is not http(s) or whose host `WATCH_ALLOWED_HOSTS` "
                "does not allow (never a link-local or metadata address), or a `recommendation_id` this key "
                "cannot read.",
            ),
        },
    )
    async def create_watch(
        self,
        request: AnyRequest,
        db_session: DbSession,
        data: Annotated[s.WatchCreate, Body()],
    ) -> s.WatchRead:
        dispatcher = _dispatcher(request)
        return await watches.create(
            db_session,
            data,
            principal=principal_of(request),
            allow=dispatcher.allow,
            version_of=dispatcher.version_of,
        )

    @reading(
        "/",
        operation_id="listWatches",
        scope="recommendations:write",
        summary="The watches of this key's organisation (of this key, for a key of none), newest first",
    )
    async def list_watches(self, request: AnyRequest, db_session: DbSession, page: Page) -> s.WatchList:
        return await watches.listed(db_session, principal_of(request), page)

    @reading(
        "/{watch_id:str}", operation_id="getWatch", scope="recommendations:write", summary="A watch (never its secret)"
    )
    async def get_watch(self, request: AnyRequest, db_session: DbSession, watch_id: WatchId) -> s.WatchRead:
        return watches.read(await watches.find(db_session, watch_id, principal_of(request)))

    @delete(
        "/{watch_id:str}",
        operation_id="deleteWatch",
        opt={"scope": "recommendations:write"},
        summary="Stop watching: no event is made or sent for it from now on (its deliveries stay listed)",
        status_code=HTTP_204_NO_CONTENT,
        responses={**COMMON_PROBLEMS},
    )
    async def delete_watch(self, request: AnyRequest, db_session: DbSession, watch_id: WatchId) -> None:
        await watches.delete(db_session, watch_id, principal_of(request))

    @reading(
        "/{watch_id:str}/deliveries",
        operation_id="listWatchDeliveries",
        scope="recommendations:write",
        summary="A watch's deliveries, newest first: status, attempts and each attempt's outcome",
    )
    async def list_deliveries(
        self, request: AnyRequest, db_session: DbSession, watch_id: WatchId, page: Page
    ) -> s.DeliveryList:
        return await watches.deliveries(db_session, watch_id, principal_of(request), page)
