"""The audit trail: seed loads, data migrations, API key changes and restores — what, when, who, versions.

Each event is written in the transaction of the change it records, so the trail and the data
never disagree: a rolled-back load leaves no event behind.
"""

from __future__ import annotations

import datetime as dt
import getpass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.vocab import AUDIT_ACTIONS, AuditAction
from app.kb import models as m
from app.kb import service_records as sr

ACTIONS = AUDIT_ACTIONS


def os_actor() -> str:
    """The operating-system user running the command (the default actor of the CLI)."""
    try:
        return getpass.getuser()
    except Exception:  # no user name in a bare container
        return "unknown"


async def current_version(session: AsyncSession) -> str | None:
    """The label of the newest knowledge version, or None before the first load."""
    row = await session.scalar(select(m.KnowledgeVersion).order_by(m.KnowledgeVersion.id.desc()).limit(1))
    return row.label if row is not None else None


async def record(
    session: AsyncSession,
    *,
    actor: str,
    action: AuditAction,
    subject: str,
    before: str | None,
    after: str | None,
    detail: dict[str, Any] | None = None,
) -> sr.AuditEvent:
    """Add one event to the session's transaction; the caller commits."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    event = sr.AuditEvent(
        at=dt.datetime.now(dt.UTC),
        actor=actor[:100],
        action=action,
        subject=subject,
        knowledge_version_before=before,
        knowledge_version_after=after,
        detail=detail or {},
    )
    session.add(event)
    await session.flush()
    return event


async def change(
    session: AsyncSession, *, actor: str, action: AuditAction, subject: str, detail: dict[str, Any]
) -> sr.AuditEvent:
    """Write the session's pending change and record it: a change that leaves the knowledge version as it
    is (keys, organisations, private price rows, watches), so ``before`` and ``after`` are the same."""
    await session.flush()
    version = await current_version(session)
    return await record(
        session, actor=actor, action=action, subject=subject, before=version, after=version, detail=detail
    )
