"""Organisations: a team or company whose API keys share stored recommendations, watches and a private
price book (``app.kb.books``). Managed from the server's shell (``compute-advisor orgs``), audited.

An organisation's key is a slug (``acme-ml``: lower-case letters, digits and hyphens, 2–40 characters).
Deleting one marks it deleted — its keys are refused from then on, its rows stay for the audit trail — and
is refused while it still has keys that work, unless they are revoked with it (``--revoke-keys``).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.vocab import AuditAction
from app.kb import audit
from app.kb import service_records as sr
from app.kb.keys import KeyProblem

__all__ = ["SLUG", "active", "create", "delete", "list_all"]

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$")


async def active(session: AsyncSession, key: str) -> sr.Organisation:
    """The organisation ``key`` if it exists and is not deleted; KeyProblem otherwise."""
    row = await session.get(sr.Organisation, key)
    if row is None or row.deleted_at is not None:
        raise KeyProblem(f"no organisation '{key}' (see `compute-advisor orgs list`)")
    return row


async def create(session: AsyncSession, key: str, *, name: str | None, actor: str) -> sr.Organisation:
    """A new organisation (audited ``org.create``); KeyProblem for a malformed or taken key."""
    if not SLUG.match(key):
        raise KeyProblem(
            f"an organisation's key is 2 to 40 lower-case letters, digits and hyphens, starting and ending with a "
            f"letter or digit (e.g. acme-ml); not {key!r}"
        )
    if await session.get(sr.Organisation, key) is not None:
        raise KeyProblem(f"an organisation '{key}' exists already (keys are never reused, even once deleted)")
    label = (name or key).strip()
    if not label or len(label) > 120:
        raise KeyProblem("an organisation's name has 1 to 120 characters")
    row = sr.Organisation(key=key, name=label, created_at=dt.datetime.now(dt.UTC), deleted_at=None, book_version=0)
    session.add(row)
    await session.flush()
    await _audited(session, actor, "org.create", f"organisation {key} ({label})", {"org": key, "name": label})
    return row


async def list_all(session: AsyncSession) -> list[tuple[sr.Organisation, int]]:
    """Every organisation (deleted ones too) with how many of its keys work (not revoked)."""
    rows = list((await session.scalars(select(sr.Organisation).order_by(sr.Organisation.key))).all())
    keys = (await session.execute(select(sr.ApiKey.org).where(sr.ApiKey.revoked_at.is_(None)))).scalars().all()
    return [(row, sum(1 for org in keys if org == row.key)) for row in rows]


async def delete(session: AsyncSession, key: str, *, actor: str, revoke_keys: bool = False) -> int:
    """Mark the organisation deleted (audited ``org.delete``); returns how many keys were revoked with it.
    Refused (KeyProblem) while keys of it work, unless ``revoke_keys``."""
    row = await active(session, key)
    now = dt.datetime.now(dt.UTC)
    working = list(
        (await session.scalars(select(sr.ApiKey).where(sr.ApiKey.org == key, sr.ApiKey.revoked_at.is_(None)))).all()
    )
    if working and not revoke_keys:
        ids = ", ".join(str(k.id) for k in working)
        raise KeyProblem(
            f"organisation '{key}' still has {len(working)} working API key(s) ({ids}): revoke them first, or pass "
            "--revoke-keys"
        )
    for k in working:
        k.revoked_at = now
    row.deleted_at = now
    await _audited(
        session, actor, "org.delete", f"organisation {key}", {"org": key, "revoked_keys": [k.id for k in working]}
    )
    return len(working)


async def _audited(
    session: AsyncSession, actor: str, action: AuditAction, subject: str, detail: dict[str, Any]
) -> None:
    await audit.change(session, actor=actor, action=action, subject=subject, detail=detail)
