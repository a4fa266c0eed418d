"""Liveness and readiness: open to all, never cached."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from litestar import Controller, Response, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.schemas import HealthRead
from app.kb.store import KnowledgeStore
from app.services import Advisor

#: a database slower than this is not ready
READY_TIMEOUT_SECONDS = 3.0


class HealthController(Controller):
    path = "/health"
    tags = ["health"]

    @get("/live", operation_id="getLiveness", summary="The process answers", cache_control=None)
    async def live(self) -> HealthRead:
        return HealthRead("ok", {})

    @get(
        "/ready",
        operation_id="getReadiness",
        summary="Database reachable, migrations at head, knowledge loaded",
        responses={503: ResponseSpec(data_container=HealthRead, description="Not ready: see checks")},
    )
    async def ready(
        self, state: State, advisor: NamedDependency[Advisor], db_session: NamedDependency[AsyncSession]
    ) -> Response[HealthRead]:
        checks: dict[str, Any] = {}
        store: KnowledgeStore = state.knowledge_store
        try:
            async with asyncio.timeout(READY_TIMEOUT_SECONDS):
                current = await db_session.scalar(text("SELECT version_num FROM alembic_version"))
            checks["database"] = "ok"
            checks["migration"] = {
                "current": current,
                "head": state.migration_head,
                "ok": current == state.migration_head,
            }
        except Exception as exc:
            store.mark_unreachable(exc)
            checks["database"] = f"unreachable: {type(exc).__name__}"
            checks["migration"] = {"current": None, "head": state.migration_head, "ok": False}
        kb = advisor.loaded()
        checks["knowledge_version"] = kb.version if kb else None
        checks["worker_pid"] = os.getpid()  # which worker answered: each keeps its own snapshot
        # "cached": answers come from the snapshot in memory, the database could not be re-read since
        checks["knowledge_source"] = None if kb is None else "cached" if store.degraded else "database"
        checks["knowledge_read_at"] = (
            store.last_read_at.isoformat().replace("+00:00", "Z") if store.last_read_at else None
        )
        ok = checks["database"] == "ok" and checks["migration"]["ok"] and kb is not None
        return Response(HealthRead("ok" if ok else "unavailable", checks), status_code=200 if ok else 503)
