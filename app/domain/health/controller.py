"""Liveness and readiness: open to all, never cached; readiness's details (the worker, the migration
revisions, why a check failed) only for a caller with a valid API key."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec

from app.domain.health.schemas import HealthRead
from app.domain.health.service import public_checks, readiness
from app.domain.shared.engine import Engine
from app.kb.repositories import KnowledgeVersionRepository


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
        description="Without a valid `X-API-Key`, each check says only whether it passes; with one, its details "
        "(the worker's pid, the migration revisions, why a check failed, when the knowledge was read).",
        responses={503: ResponseSpec(data_container=HealthRead, description="Not ready: see checks")},
    )
    async def ready(
        self,
        request: Request[Any, Any, Any],
        state: State,
        engine: NamedDependency[Engine],
        knowledge_versions: NamedDependency[KnowledgeVersionRepository],
    ) -> Response[HealthRead]:
        ok, checks = await readiness(
            knowledge_versions,
            state.knowledge_store,
            engine.loaded(),
            state.migration_head,
            state.migration_revisions,
            state.dependencies,
        )
        if await state.key_verifier.identify(request.headers.get("x-api-key", "")) is None:
            checks = public_checks(checks)
        return Response(HealthRead(status="ok" if ok else "unavailable", checks=checks), status_code=200 if ok else 503)
