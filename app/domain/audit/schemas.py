"""API v1 schemas of the audit trail."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec

from app.core.vocab import AuditAction
from app.domain.shared.schemas import StoredList


class AuditEventRead(msgspec.Struct):
    id: int
    at: dt.datetime
    #: an OS user (CLI ``--actor``), ``key:<id>`` for an API key, or ``migration``
    actor: str
    action: AuditAction
    subject: str
    knowledge_version_before: str | None
    knowledge_version_after: str | None
    detail: dict[str, Any]


class AuditList(StoredList):
    items: list[AuditEventRead]
