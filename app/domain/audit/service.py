"""The audit trail, newest first, as answers."""

from __future__ import annotations

import datetime as dt

from advanced_alchemy.filters import LimitOffset

from app.domain.audit.schemas import AuditEventRead, AuditList
from app.kb.repositories import AuditEventRepository


def _utc(value: dt.datetime) -> dt.datetime:
    # SQLite hands timestamps back naive; they are stored in UTC
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


async def audit_events(events: AuditEventRepository, window: LimitOffset, action: str | None) -> AuditList:
    rows, total = await events.newest_first(window, action)
    return AuditList(
        total=total,
        limit=window.limit,
        offset=window.offset,
        items=[
            AuditEventRead(
                id=r.id,
                at=_utc(r.at),
                actor=r.actor,
                action=r.action,
                subject=r.subject,
                knowledge_version_before=r.knowledge_version_before,
                knowledge_version_after=r.knowledge_version_after,
                detail=r.detail,
            )
            for r in rows
        ],
    )
