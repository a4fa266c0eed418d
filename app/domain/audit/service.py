"""The audit trail, newest first, as answers."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
from advanced_alchemy.filters import LimitOffset

from app.domain.audit.schemas import AuditEventRead, AuditList
from app.kb.repositories import AuditEventRepository


def _utc(value: dt.datetime) -> dt.datetime:
    # SQLite hands timestamps back naive; they are stored in UTC
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _event(row: Any) -> AuditEventRead:
    """An audit row as answered: its columns by name (``msgspec.convert`` from its attributes), its
    time in UTC."""
    return msgspec.structs.replace(msgspec.convert(row, AuditEventRead, from_attributes=True), at=_utc(row.at))


async def audit_events(events: AuditEventRepository, window: LimitOffset, action: str | None) -> AuditList:
    rows, total = await events.newest_first(window, action)
    return AuditList(
        total=total,
        limit=window.limit,
        offset=window.offset,
        items=[_event(r) for r in rows],
    )
