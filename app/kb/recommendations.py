"""Stored recommendations beyond the insert: idempotency claims, the per-key daily quota, retention.

- An ``Idempotency-Key`` is claimed by the writer in the transaction of its recommendation
  (``app.kb.writer``); ``find_claim`` answers a retry from it. A claim holds 24 h.
- The daily quota counts a key's rows since 00:00 UTC (index ``(api_key_id, created_at)``).
- ``prune`` deletes recommendations older than a number of days (their claims, watches and deliveries
  first) and claims older than 24 h, and records an audit event.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.kb import audit
from app.kb import service_records as sr
from app.kb.writer import IDEMPOTENCY_TTL

#: the longest ``Idempotency-Key`` accepted (the column's width)
IDEMPOTENCY_KEY_MAX_LENGTH = 255


def request_hash(request: dict[str, Any]) -> str:
    """SHA-256 of a validated request as canonical JSON (keys sorted): two bodies that validate to
    the same request are "the same body", whatever their whitespace or key order."""
    return hashlib.sha256(msgspec.json.encode(request, order="sorted")).hexdigest()


@dataclass(frozen=True, slots=True)
class Claimed:
    """A live claim of an Idempotency-Key and the recommendation it answered with."""

    request_hash: str
    status: int
    recommendation_id: str
    response: dict[str, Any]


async def find_claim(session: AsyncSession, *, api_key_id: int, key: str, now: dt.datetime) -> Claimed | None:
    """The claim of (API key, Idempotency-Key) made within the last 24 h, with its stored answer."""
    row = (
        await session.execute(
            select(sr.IdempotencyKey, sr.Recommendation.response)
            .join(sr.Recommendation, sr.Recommendation.id == sr.IdempotencyKey.recommendation_id)
            .where(
                sr.IdempotencyKey.api_key_id == api_key_id,
                sr.IdempotencyKey.key == key,
                sr.IdempotencyKey.created_at >= now - IDEMPOTENCY_TTL,
            )
        )
    ).first()
    if row is None:
        return None
    claim, response = row
    return Claimed(claim.request_hash, claim.status, claim.recommendation_id, response)


def day_start(now: dt.datetime) -> dt.datetime:
    """00:00 UTC of ``now``'s day: the quota's day."""
    return now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)


async def stored_today(session: AsyncSession, *, api_key_id: int, now: dt.datetime) -> int:
    """How many recommendations the key stored since 00:00 UTC."""
    count = await session.scalar(
        select(func.count())
        .select_from(sr.Recommendation)
        .where(sr.Recommendation.api_key_id == api_key_id, sr.Recommendation.created_at >= day_start(now))
    )
    return int(count or 0)


@dataclass(frozen=True, slots=True)
class Pruned:
    cutoff: dt.datetime | None
    recommendations: int
    idempotency_keys: int


async def prune(
    session: AsyncSession, *, days: int | None, now: dt.datetime, actor: str, dry_run: bool = False
) -> Pruned:
    """Delete (or, ``dry_run``, count) recommendations created more than ``days`` days before ``now``
    (``None``: none) and Idempotency-Key claims older than 24 h or naming them; audited unless a dry run."""
    cutoff = None if days is None else now - dt.timedelta(days=days)
    old_recs = select(sr.Recommendation.id).where(sr.Recommendation.created_at < cutoff) if cutoff else None
    claims_where = [sr.IdempotencyKey.created_at < now - IDEMPOTENCY_TTL]
    if old_recs is not None:
        claims_where.append(sr.IdempotencyKey.recommendation_id.in_(old_recs))
    claims_filter = or_(*claims_where)
    n_recs = 0
    if old_recs is not None:
        n_recs = int(
            await session.scalar(
                select(func.count()).select_from(sr.Recommendation).where(sr.Recommendation.created_at < cutoff)
            )
            or 0
        )
    n_claims = int(await session.scalar(select(func.count()).select_from(sr.IdempotencyKey).where(claims_filter)) or 0)
    if dry_run:
        return Pruned(cutoff, n_recs, n_claims)
    await session.execute(delete(sr.IdempotencyKey).where(claims_filter))
    n_watches = 0
    if cutoff is not None:
        # their watches and those watches' deliveries go with them (foreign keys)
        recs = select(sr.Recommendation.id).where(sr.Recommendation.created_at < cutoff)
        old_watches = select(sr.Watch.id).where(sr.Watch.recommendation_id.in_(recs))
        await session.execute(delete(sr.WatchDelivery).where(sr.WatchDelivery.watch_id.in_(old_watches)))
        gone = await session.execute(delete(sr.Watch).where(sr.Watch.recommendation_id.in_(recs)))
        n_watches = int(gone.rowcount or 0)  # type: ignore[attr-defined]
        await session.execute(delete(sr.Recommendation).where(sr.Recommendation.created_at < cutoff))
    version = await audit.current_version(session)
    await audit.record(
        session,
        actor=actor,
        action="recommendations.prune",
        subject=f"recommendations created before {cutoff.isoformat()}" if cutoff else "expired idempotency keys",
        before=version,
        after=version,
        detail={
            "days": days,
            "cutoff": cutoff.isoformat() if cutoff else None,
            "recommendations": n_recs,
            "idempotency_keys": n_claims,
            "watches": n_watches,
        },
    )
    return Pruned(cutoff, n_recs, n_claims)
