"""API keys: created with scopes, stored as SHA-256 only, revoked (never deleted).

A key is ``ca_`` followed by 43 URL-safe characters (32 random bytes); it is shown once, when it is
created. The database holds its hash and its first 8 characters (to tell keys apart in listings).

A key may expire (``expires_at``; refused with 401 "expired" after it). ``rotate`` makes a new key with
the same name and scopes and lets the old one expire after a grace period. ``last_used_at`` is written
by ``mark_used`` in batches (at most once a minute per key and process, see ``app.web.auth.KeyUsage``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.vocab import ADMIN, API_KEY_MAX_LENGTH, SCOPES, AuditAction, Scope
from app.kb import audit
from app.kb import service_records as sr

KEY_PREFIX = "ca_"
__all__ = [
    "ADMIN",
    "SCOPES",
    "Created",
    "KeyProblem",
    "active_hashes",
    "check_scopes",
    "create",
    "find",
    "hash_key",
    "list_all",
    "mark_used",
    "parse_duration",
    "revoke",
    "rotate",
]

_DURATION = re.compile(r"^\s*(\d{1,6})\s*(m|min|h|d|w)\s*$")
_UNITS = {"m": 60, "min": 60, "h": 3600, "d": 86_400, "w": 604_800}


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


def parse_duration(text: str, what: str = "a duration") -> dt.timedelta:
    """``"90d"``, ``"12h"``, ``"30m"``, ``"2w"`` as a timedelta (at least a minute); KeyProblem otherwise."""
    match = _DURATION.match(text.lower())
    if match is None or int(match.group(1)) < 1:
        raise KeyProblem(f"{what} must be a whole number and a unit (m, h, d or w), e.g. 90d; not {text!r}")
    return dt.timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


@dataclass(frozen=True, slots=True)
class Created:
    row: sr.ApiKey
    key: str


async def create(
    session: AsyncSession,
    *,
    name: str,
    scopes: Iterable[str],
    actor: str,
    expires_in: dt.timedelta | None = None,
    org: str | None = None,
) -> Created:
    """Create a key in the session's transaction (audited); the caller commits. The plaintext is returned
    once. ``expires_in``: the key is refused that long after its creation; ``org``: the organisation it
    belongs to (which must exist and not be deleted)."""
    name = name.strip()
    if not name or len(name) > 100:
        raise KeyProblem("a key needs a name of 1 to 100 characters")
    valid = check_scopes(scopes)
    if org is not None:
        found = await session.get(sr.Organisation, org)
        if found is None or found.deleted_at is not None:
            raise KeyProblem(f"no organisation '{org}' (see `compute-advisor orgs list`)")
    key = generate()
    now = dt.datetime.now(dt.UTC)
    row = sr.ApiKey(
        name=name,
        key_prefix=key[:8],
        key_hash=hash_key(key),
        scopes=valid,
        created_at=now,
        revoked_at=None,
        expires_at=None if expires_in is None else now + expires_in,
        org=org,
    )
    session.add(row)
    await session.flush()  # the row's id, which the audit event names
    await _audited(
        session, row, actor=actor, action="key.create", scopes=valid, expires_at=_iso(row.expires_at), org=org
    )
    return Created(row, key)


async def rotate(
    session: AsyncSession,
    key_id: int,
    *,
    grace: dt.timedelta,
    actor: str,
    expires_in: dt.timedelta | None = None,
) -> tuple[Created, sr.ApiKey]:
    """A new key with the old one's name and scopes; the old one keeps working for ``grace`` (or until
    its own expiry, if sooner), then is refused as expired. Audited (``key.rotate``, after the new key's
    ``key.create``). Raises KeyProblem for an unknown, revoked or expired key."""
    old = await session.get(sr.ApiKey, key_id)
    if old is None:
        raise KeyProblem(f"no API key with id {key_id}")
    now = dt.datetime.now(dt.UTC)
    if old.revoked_at is not None:
        raise KeyProblem(f"API key {key_id} is revoked: create a new one instead")
    if old.expires_at is not None and _aware(old.expires_at) <= now:
        raise KeyProblem(f"API key {key_id} expired at {old.expires_at:%Y-%m-%d %H:%M:%S}: create a new one instead")
    created = await create(session, name=old.name, scopes=old.scopes, actor=actor, expires_in=expires_in, org=old.org)
    until = now + grace
    if old.expires_at is None or _aware(old.expires_at) > until:
        old.expires_at = until
    old.replaced_by_id = created.row.id
    await _audited(
        session,
        old,
        actor=actor,
        action="key.rotate",
        said=f" replaced by key {created.row.id}",
        new_key_id=created.row.id,
        new_key_prefix=created.row.key_prefix,
        grace_seconds=int(grace.total_seconds()),
        old_expires_at=_iso(old.expires_at),
    )
    return created, old


def _aware(value: dt.datetime) -> dt.datetime:
    """SQLite hands back naive datetimes for ``DateTime(timezone=True)``: they are UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def expired(row: sr.ApiKey, now: dt.datetime) -> bool:
    return row.expires_at is not None and _aware(row.expires_at) <= now


async def mark_used(session: AsyncSession, used: dict[int, dt.datetime]) -> None:
    """Record when keys were last used: one UPDATE per key, in the caller's transaction."""
    for key_id, at in used.items():
        await session.execute(update(sr.ApiKey).where(sr.ApiKey.id == key_id).values(last_used_at=at))


async def revoke(session: AsyncSession, key_id: int, *, actor: str) -> sr.ApiKey:
    """Revoke a key (audited); revoking a revoked key changes nothing. Raises KeyProblem for an unknown id."""
    row = await session.get(sr.ApiKey, key_id)
    if row is None:
        raise KeyProblem(f"no API key with id {key_id}")
    if row.revoked_at is not None:
        return row
    row.revoked_at = dt.datetime.now(dt.UTC)
    await _audited(session, row, actor=actor, action="key.revoke")
    return row


async def list_all(session: AsyncSession) -> list[sr.ApiKey]:
    return list((await session.scalars(select(sr.ApiKey).order_by(sr.ApiKey.id))).all())


async def active_hashes(session: AsyncSession) -> dict[str, dt.datetime | None]:
    """The hash of every key neither revoked nor expired, and when it expires (``app.web.known_keys``)."""
    now = dt.datetime.now(dt.UTC)
    rows = await session.execute(select(sr.ApiKey.key_hash, sr.ApiKey.expires_at).where(sr.ApiKey.revoked_at.is_(None)))
    found = {key_hash: None if at is None else _aware(at) for key_hash, at in rows}
    return {key_hash: at for key_hash, at in found.items() if at is None or at > now}


async def find(session: AsyncSession, key: str) -> sr.ApiKey | None:
    """The key's row, if it exists (revoked or not), compared in constant time with the stored hash."""
    if not key.startswith(KEY_PREFIX) or len(key) > API_KEY_MAX_LENGTH:
        return None
    digest = hash_key(key)
    row = await session.scalar(select(sr.ApiKey).where(sr.ApiKey.key_hash == digest))
    if row is None or not matches(key, row.key_hash):
        return None
    return row


async def _audited(
    session: AsyncSession, row: sr.ApiKey, *, actor: str, action: AuditAction, said: str = "", **detail: Any
) -> None:
    """Write the change to key ``row`` and record it in the audit trail: the subject names the key (then
    ``said``), the detail gives its id, name and prefix (then ``detail``). A key change leaves the knowledge
    version as is."""
    await audit.change(
        session,
        actor=actor,
        action=action,
        subject=f"key {row.id} ({row.name}){said}",
        detail={"key_id": row.id, "name": row.name, "key_prefix": row.key_prefix, **detail},
    )
