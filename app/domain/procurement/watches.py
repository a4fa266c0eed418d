"""Watches of stored recommendations: made, listed, read, deleted, and their deliveries listed.

Who sees a watch is the rule of stored recommendations (``app.domain.decisions.storing.readable``): an
organisation's keys see its watches, a key of no organisation its own, an ``admin`` key every one; another's
answers 404, as a missing one does. A watch belongs to the organisation of the recommendation it names (for a
key of an organisation, its own), and is priced on that organisation's book.

A watch is refused (422 naming the field) when the recommendation is not one this key may read
(``recommendation_id``, "no recommendation '…'": the body names something that does not exist for it), when its
URL is not ``http(s)`` or its host is not allowed (``url``, ``app.domain.procurement.watch_hosts``), and for the
schema's bounds (``secret`` of 16 to 200 characters, ``min_cost_change`` of 0 to 10). Creating and deleting are
audited (``watch.create``, ``watch.delete``), never with the secret.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, TypeVar

import httpx
import msgspec
from advanced_alchemy.filters import LimitOffset
from litestar.exceptions import NotFoundException
from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import DomainError
from app.core.text import msg
from app.domain.decisions.storing import readable, readable_where
from app.domain.procurement import watch_schemas as s
from app.domain.procurement.watch_hosts import AllowList, Refused
from app.kb import audit
from app.kb import service_records as sr
from app.web.auth import Principal

Shown = TypeVar("Shown", bound=msgspec.Struct)


class InvalidWatch(DomainError):
    """The watch cannot be made as asked (422, naming the field)."""


def utc(value: dt.datetime) -> dt.datetime:
    """A stored instant in UTC (SQLite hands timestamps back naive; they are stored in UTC)."""
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def read(row: sr.Watch) -> s.WatchRead:
    return _shown(row, s.WatchRead, created_at=utc(row.created_at))


def delivery_read(row: sr.WatchDelivery) -> s.DeliveryRead:
    return _shown(
        row,
        s.DeliveryRead,
        next_attempt_at=utc(row.next_attempt_at),
        created_at=utc(row.created_at),
        delivered_at=None if row.delivered_at is None else utc(row.delivered_at),
        history=msgspec.convert(row.history or [], list[s.AttemptRead]),
    )


def _shown(row: Any, schema: type[Shown], **worked: Any) -> Shown:
    """``schema`` of a stored row: each field the row's column of that name, but those ``worked`` out."""
    return schema(**{name: getattr(row, name) for name in schema.__struct_fields__ if name not in worked}, **worked)


def visible(principal: Principal) -> ColumnElement[bool]:
    """``readable`` as a filter of the ``watches`` table."""
    return readable_where(sr.Watch, api_key_id=principal.id, admin=principal.is_admin, org=principal.org)


def _may_read(row: Any, principal: Principal) -> bool:
    return readable(row, api_key_id=principal.id, admin=principal.is_admin, org=principal.org)


def check_fields(data: s.WatchCreate) -> None:
    """The bounds of ``secret`` and ``min_cost_change``: ``InvalidWatch`` naming the field."""
    if not s.SECRET_MIN <= len(data.secret) <= s.SECRET_MAX:
        n, low, high = str(len(data.secret)), str(s.SECRET_MIN), str(s.SECRET_MAX)
        text = f"the secret must be {low} to {high} characters long, not {n}"
        raise InvalidWatch(msg("problem.detail.watch.secret_length", text, n=n, low=low, high=high), field="secret")
    if not 0 <= data.min_cost_change <= s.MAX_COST_CHANGE:
        value, most = f"{data.min_cost_change:g}", f"{s.MAX_COST_CHANGE:g}"
        text = f"the smallest cost change worth an event is a fraction from 0 to {most}, not {value}"
        raise InvalidWatch(
            msg("problem.detail.watch.min_cost_change", text, value=value, high=most), field="min_cost_change"
        )


async def check_url(text: str, allow: AllowList) -> None:
    """``InvalidWatch`` naming ``url`` unless it is an http(s) URL whose host the allow-list passes."""
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError):
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise InvalidWatch(
            msg("problem.detail.watch.url_invalid", "the URL must be http or https, with a host"),
            field="url",
        )
    try:
        await allow.check_new(url.host, url.port or (443 if url.scheme == "https" else 80))
    except Refused as exc:
        reason = str(exc)
        raise InvalidWatch(
            msg("problem.detail.watch.url_refused", f"the URL's host is not allowed: {reason}", reason=reason),
            field="url",
        ) from None


async def create(
    session: AsyncSession,
    data: s.WatchCreate,
    *,
    principal: Principal,
    allow: AllowList,
    version_of: Any,
) -> s.WatchRead:
    """Make the watch (checked as of the version its organisation is priced on now: ``await version_of(org)``,
    so the first event is of the next change); the caller's transaction commits it."""
    check_fields(data)
    rec = await session.get(sr.Recommendation, data.recommendation_id)
    if rec is None or not _may_read(rec, principal):
        rec_id = data.recommendation_id
        raise InvalidWatch(
            msg("problem.detail.no_recommendation", f"no recommendation '{rec_id}'", id=rec_id),
            field="recommendation_id",
        )
    await check_url(data.url, allow)
    row = sr.Watch(
        id=str(uuid.uuid4()),
        recommendation_id=rec.id,
        api_key_id=principal.id,
        org=rec.org,
        url=data.url,
        secret=data.secret,
        min_cost_change=data.min_cost_change,
        on_rank_change=data.on_rank_change,
        created_at=dt.datetime.now(dt.UTC).replace(microsecond=0),
        checked_version=await version_of(rec.org),
    )
    session.add(row)
    detail = {
        "recommendation_id": row.recommendation_id,
        "url": row.url,
        "min_cost_change": row.min_cost_change,
        "on_rank_change": row.on_rank_change,
        "org": row.org,
    }
    await audit.change(session, actor=principal.actor, action="watch.create", subject=f"watch {row.id}", detail=detail)
    return read(row)


async def find(session: AsyncSession, watch_id: str, principal: Principal) -> sr.Watch:
    """The watch, if this key may see it and it is not deleted; else 404."""
    row = await session.get(sr.Watch, watch_id)
    if row is None or row.deleted_at is not None or not _may_read(row, principal):
        raise NotFoundException(detail=msg("problem.detail.watch.not_found", f"no watch '{watch_id}'", id=watch_id))
    return row


async def listed(session: AsyncSession, principal: Principal, window: LimitOffset) -> s.WatchList:
    """The watches this key sees, newest first."""
    where = and_(sr.Watch.deleted_at.is_(None), visible(principal))
    total = await session.scalar(select(func.count()).select_from(sr.Watch).where(where))
    rows = await session.scalars(
        select(sr.Watch)
        .where(where)
        .order_by(sr.Watch.created_at.desc(), sr.Watch.id)
        .limit(window.limit)
        .offset(window.offset)
    )
    return s.WatchList(total=int(total or 0), limit=window.limit, offset=window.offset, items=[read(r) for r in rows])


async def delete(session: AsyncSession, watch_id: str, principal: Principal) -> None:
    """Mark the watch deleted (its deliveries stay, for the record; no new one is made or sent)."""
    row = await find(session, watch_id, principal)
    row.deleted_at = dt.datetime.now(dt.UTC)
    detail = {"recommendation_id": row.recommendation_id, "url": row.url, "org": row.org}
    await audit.change(session, actor=principal.actor, action="watch.delete", subject=f"watch {row.id}", detail=detail)


async def deliveries(session: AsyncSession, watch_id: str, principal: Principal, window: LimitOffset) -> s.DeliveryList:
    """The watch's deliveries, newest first."""
    await find(session, watch_id, principal)
    where = sr.WatchDelivery.watch_id == watch_id
    total = await session.scalar(select(func.count()).select_from(sr.WatchDelivery).where(where))
    rows = await session.scalars(
        select(sr.WatchDelivery)
        .where(where)
        .order_by(sr.WatchDelivery.created_at.desc(), sr.WatchDelivery.id.desc())
        .limit(window.limit)
        .offset(window.offset)
    )
    return s.DeliveryList(
        total=int(total or 0), limit=window.limit, offset=window.offset, items=[delivery_read(r) for r in rows]
    )
