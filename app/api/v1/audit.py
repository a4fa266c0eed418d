"""The audit trail, for ``admin`` keys: seed loads, data migrations and API key changes, newest first."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import msgspec
from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import Parameter
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.errors import COMMON_PROBLEMS
from app.kb import audit
from app.kb import models as m

Limit = Annotated[int, Parameter(ge=1, le=500, description="Items per page.")]
Offset = Annotated[int, Parameter(ge=0, le=1_000_000, description="Items to skip.")]


class AuditEventRead(msgspec.Struct):
    id: int
    at: dt.datetime
    #: an OS user (CLI ``--actor``), ``key:<id>`` for an API key, or ``migration``
    actor: str
    action: str
    subject: str
    knowledge_version_before: str | None
    knowledge_version_after: str | None
    detail: dict[str, Any]


class AuditList(msgspec.Struct):
    total: int
    limit: int
    offset: int
    items: list[AuditEventRead]


def _utc(value: dt.datetime) -> dt.datetime:
    # SQLite hands timestamps back naive; they are stored in UTC
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


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
        db_session: NamedDependency[AsyncSession],
        action: Annotated[
            str | None, Parameter(max_length=40, description="Only this action: " + ", ".join(audit.ACTIONS) + ".")
        ] = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> AuditList:
        where = [m.AuditEvent.action == action] if action else []
        total = await db_session.scalar(select(func.count()).select_from(m.AuditEvent).where(*where)) or 0
        rows = (
            await db_session.scalars(
                select(m.AuditEvent)
                .where(*where)
                .order_by(m.AuditEvent.at.desc(), m.AuditEvent.id.desc())
                .limit(limit)
                .offset(offset)
            )
        ).all()
        items = [
            AuditEventRead(
                r.id,
                _utc(r.at),
                r.actor,
                r.action,
                r.subject,
                r.knowledge_version_before,
                r.knowledge_version_after,
                r.detail,
            )
            for r in rows
        ]
        return AuditList(total, limit, offset, items)
