"""Liveness and readiness: open to all, never cached."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.schemas import HealthRead
from app.services import Advisor


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
        try:
            current = await db_session.scalar(text("SELECT version_num FROM alembic_version"))
            checks["database"] = "ok"
            checks["migration"] = {
                "current": current,
                "head": state.migration_head,
                "ok": current == state.migration_head,
            }
        except Exception as exc:
            checks["database"] = f"unreachable: {type(exc).__name__}"
            checks["migration"] = {"current": None, "head": state.migration_head, "ok": False}
        kb = advisor.loaded()
        checks["knowledge_version"] = kb.version if kb else None
        ok = checks["database"] == "ok" and checks["migration"]["ok"] and kb is not None
        return Response(HealthRead("ok" if ok else "unavailable", checks), status_code=200 if ok else 503)
