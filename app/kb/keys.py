"""API keys: created with scopes, stored as SHA-256 only, revoked (never deleted).

A key is ``ca_`` followed by 43 URL-safe characters (32 random bytes); it is shown once, when it is
created. The database holds its hash and its first 8 characters (to tell keys apart in listings).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.vocab import ADMIN, API_KEY_MAX_LENGTH, SCOPES, Scope
from app.kb import audit
from app.kb import models as m

KEY_PREFIX = "ca_"
__all__ = [
    "ADMIN",
    "SCOPES",
    "Created",
    "KeyProblem",
    "check_scopes",
    "create",
    "find",
    "hash_key",
    "list_all",
    "revoke",
]


class KeyProblem(ValueError):
    """A key operation the caller asked for cannot be done (unknown scope, unknown key)."""


def generate() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def matches(key: str, key_hash: str) -> bool:
    """Constant-time comparison of a presented key with a stored hash."""
    return hmac.compare_digest(hash_key(key).encode(), key_hash.encode())


def check_scopes(scopes: Iterable[str]) -> list[Scope]:
    """The scopes, validated, de-duplicated, in the canonical order."""
    given = set(scopes)
    unknown = sorted(given - set(SCOPES))
    if unknown:
        raise KeyProblem(f"unknown scope(s) {', '.join(unknown)}; known: {', '.join(SCOPES)}")
    if not given:
        raise KeyProblem("a key needs at least one scope")
    return [s for s in SCOPES if s in given]


@dataclass(frozen=True, slots=True)
class Created:
    row: m.ApiKey
    key: str


async def create(session: AsyncSession, *, name: str, scopes: Iterable[str], actor: str) -> Created:
    """Create a key in the session's transaction (audited); the caller commits. The plaintext is returned once."""
    name = name.strip()
    if not name or len(name) > 100:
        raise KeyProblem("a key needs a name of 1 to 100 characters")
    valid = check_scopes(scopes)
    key = generate()
    row = m.ApiKey(
        name=name,
        key_prefix=key[:8],
        key_hash=hash_key(key),
        scopes=valid,
        created_at=dt.datetime.now(dt.UTC),
        revoked_at=None,
    )
    session.add(row)
    await session.flush()
    version = await audit.current_version(session)
    await audit.record(
        session,
        actor=actor,
        action="key.create",
        subject=f"key {row.id} ({name})",
        before=version,
        after=version,
        detail={"key_id": row.id, "name": name, "key_prefix": row.key_prefix, "scopes": valid},
    )
    return Created(row, key)


async def revoke(session: AsyncSession, key_id: int, *, actor: str) -> m.ApiKey:
    """Revoke a key (audited); revoking a revoked key changes nothing. Raises KeyProblem for an unknown id."""
    row = await session.get(m.ApiKey, key_id)
    if row is None:
        raise KeyProblem(f"no API key with id {key_id}")
    if row.revoked_at is not None:
        return row
    row.revoked_at = dt.datetime.now(dt.UTC)
    await session.flush()
    version = await audit.current_version(session)
    await audit.record(
        session,
        actor=actor,
        action="key.revoke",
        subject=f"key {row.id} ({row.name})",
        before=version,
        after=version,
        detail={"key_id": row.id, "name": row.name, "key_prefix": row.key_prefix},
    )
    return row


async def list_all(session: AsyncSession) -> list[m.ApiKey]:
    return list((await session.scalars(select(m.ApiKey).order_by(m.ApiKey.id))).all())


async def find(session: AsyncSession, key: str) -> m.ApiKey | None:
    """The key's row, if it exists (revoked or not), compared in constant time with the stored hash."""
    if not key.startswith(KEY_PREFIX) or len(key) > API_KEY_MAX_LENGTH:
        return None
    digest = hash_key(key)
    row = await session.scalar(select(m.ApiKey).where(m.ApiKey.key_hash == digest))
    if row is None or not matches(key, row.key_hash):
        return None
    return row
