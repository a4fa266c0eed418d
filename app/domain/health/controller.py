"""Liveness and readiness: open to all, never cached."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec

from app.domain.health.schemas import HealthRead
from app.domain.health.service import readiness
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
        responses={503: ResponseSpec(data_container=HealthRead, description="Not ready: see checks")},
    )
    async def ready(
        self,
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
        return Response(HealthRead(status="ok" if ok else "unavailable", checks=checks), status_code=200 if ok else 503)
