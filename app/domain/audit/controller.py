"""The audit trail, for ``admin`` keys: seed loads, data migrations and API key changes, newest first."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import Parameter

from app.domain.audit.schemas import AuditList
from app.domain.audit.service import audit_events
from app.kb import audit
from app.kb.repositories import AuditEventRepository
from app.web.pagination import DEFAULT_LIMIT, Limit, Offset, window
from app.web.problems import COMMON_PROBLEMS


class AuditController(Controller):
    path = "/v1"
    tags = ["audit"]

    @get(
        "/audit",
        operation_id="listAuditEvents",
        summary="The audit trail: seed loads, data migrations and API key changes, newest first",
        responses=COMMON_PROBLEMS,
        opt={"scope": "admin"},
    )
    async def list_audit_events(
        self,
        audit_events_repository: NamedDependency[AuditEventRepository],
        action: Annotated[
            str | None, Parameter(max_length=40, description="Only this action: " + ", ".join(audit.ACTIONS) + ".")
        ] = None,
        limit: Limit = DEFAULT_LIMIT,
        offset: Offset = 0,
    ) -> AuditList:
        return await audit_events(audit_events_repository, window(limit, offset), action)
