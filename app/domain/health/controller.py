"""Liveness and readiness: open to all, never cached; readiness's details (the worker, the migration
revisions, why a check failed) only for a caller whose API key this worker already holds valid — it
never looks a key up (``KeyVerifier.vouches_for``). Readiness costs one unit of the client address's
rate-limit budget (``app.web.public.PUBLIC_CHARGED_PATHS``) and shares its database check with the
probes arriving meanwhile (``app.domain.health.probe``)."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec

from app.domain.health.schemas import HealthRead
from app.domain.health.service import public_checks, readiness
from app.domain.shared.advisor import Advisor
from app.web.problems import problem
from app.web.rate_limits import presented_key


class HealthController(Controller):
    path = "/health"
    tags = ["health"]

    @get("/live", operation_id="getLiveness", summary="The process answers", cache_control=None)
    async def live(self) -> HealthRead:
        return HealthRead(status="ok", checks={})

    @get(
        "/ready",
        operation_id="getReadiness",
        summary="Database reachable, migrations at head, knowledge loaded",
        description="Without a valid `X-API-Key`, each check says only whether it passes; with one this worker "
        "already holds valid (a key it verified, or one of the active keys it reads every few seconds — never "
        "looked up for this), its details (the worker's pid, the migration revisions, why a check failed, when "
        "the knowledge was read). Each probe costs one unit of the client address's rate-limit budget.",
        responses={
            429: problem(
                429,
                "Too many probes, or made-up keys, from this client address: retry after the "
                "Retry-After header's seconds.",
            ),
            503: ResponseSpec(data_container=HealthRead, description="Not ready: see checks"),
        },
    )
    async def ready(
        self, request: Request[Any, Any, Any], state: State, advisor: NamedDependency[Advisor]
    ) -> Response[HealthRead]:
        ok, checks = await state.readiness_check.run(
            lambda versions: readiness(
                versions,
                state.knowledge_store,
                advisor.loaded(),
                state.migration_head,
                state.migration_revisions,
                state.dependencies,
                storage=state.get("storage_state"),  # app.kb.storage_state: a full disk, a read-only database
            )
        )
        digest = presented_key(request.scope).digest
        if not (digest and await state.key_verifier.vouches_for(digest)):
            checks = public_checks(checks)
        return Response(HealthRead(status="ok" if ok else "unavailable", checks=checks), status_code=200 if ok else 503)
