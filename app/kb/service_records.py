"""The service's own records beside the knowledge base: stored recommendations, API keys, the
Idempotency-Key claims of stored recommendations, the audit trail, organisations with their private price
books, and watches with their deliveries. They share the knowledge base's
declarative ``Base`` (one metadata, one naming convention, one migration history), but no number of an
answer depends on them — except an organisation's private price rows, which price that organisation's answers
(``app.kb.books``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Boolean, CheckConstraint, Date, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.core.vocab import DELIVERY_STATUSES, AuditAction, DeliveryStatus, Scope
from app.kb.models import Base, PriceColumns, price_checks


class Recommendation(Base):
    """A stored recommendation: its inputs and its answer, as served, with the versions behind it."""

    __tablename__ = "recommendations"
    __table_args__ = (
        Index("ix_recommendations_created_at", "created_at"),
        #: the per-key daily quota counts one key's rows of one day
        Index("ix_recommendations_api_key_id_created_at", "api_key_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    knowledge_version: Mapped[str] = mapped_column(String(40))
    methodology_version: Mapped[str] = mapped_column(String(20))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: the API key that created it: only that key, a key of its organisation, or an ``admin`` key may read it back
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"))
    #: the organisation of the key that created it (null for a key of none)
    org: Mapped[str | None] = mapped_column(ForeignKey("organisations.key"), index=True)


class ApiKey(Base):
    """A client's API key: only its SHA-256 is stored; the key itself is shown once, at creation."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100))
    #: the key's first 8 characters, to tell keys apart in listings (not enough to use it)
    key_prefix: Mapped[str] = mapped_column(String(8))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[Scope]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: after this instant the key is refused (401, "expired"); None: it never expires
    expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: when a request last used the key, to the minute (written at most once a minute per key and process)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: the key ``keys rotate`` made to replace this one
    replaced_by_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"))
    #: the organisation the key belongs to (at most one), or null
    org: Mapped[str | None] = mapped_column(ForeignKey("organisations.key"))


class IdempotencyKey(Base):
    """An ``Idempotency-Key`` a client sent with a stored recommendation: the same key (of the same API
    key) with the same body within 24 h answers that recommendation again; with another body, 409."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (
        Index("ix_idempotency_keys_created_at", "created_at"),
        Index("ix_idempotency_keys_recommendation_id", "recommendation_id"),
    )

    api_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    #: SHA-256 of the validated request (canonical JSON): "the same body"
    request_hash: Mapped[str] = mapped_column(String(64))
    recommendation_id: Mapped[str] = mapped_column(ForeignKey("recommendations.id"))
    #: the status the first answer had
    status: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class AuditEvent(Base):
    """One recorded change: seed loads, data migrations, API key changes — what, when, who, versions."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_at", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    #: an OS user (``--actor``), ``key:<id>`` for an API key, or ``migration``
    actor: Mapped[str] = mapped_column(String(100))
    #: ``seeds.load``, ``migration.data``, ``key.create``, ``key.revoke``, ``database.restore``
    action: Mapped[AuditAction] = mapped_column(String(40))
    subject: Mapped[str] = mapped_column(Text)
    knowledge_version_before: Mapped[str | None] = mapped_column(String(40))
    knowledge_version_after: Mapped[str | None] = mapped_column(String(40))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Organisation(Base):
    """A team or company whose keys share stored recommendations, watches and a private price book."""

    __tablename__ = "organisations"

    #: a slug: lower-case letters, digits and hyphens (``acme-ml``)
    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    #: set by ``orgs delete``: its keys are refused from then on; its rows stay, for the audit trail
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: the private price book's version: 0 while empty, one more at each change (rows added, a row closed)
    book_version: Mapped[int] = mapped_column(Integer, default=0)


class OrgPrice(PriceColumns, Base):
    """A row of an organisation's private price book: a quote it was given, in the seed files' price-row format.

    Never erased: ``DELETE`` closes it (``closed_on``, in book version ``closed_in``); the book as of any of
    its versions can be rebuilt from the rows (``app.kb.books.rows_at``), so a stored answer stays replayable."""

    __tablename__ = "org_prices"
    __table_args__ = (
        *price_checks(),
        CheckConstraint("added_in > 0", name="added_in_positive"),
        CheckConstraint("closed_in IS NULL OR closed_in > added_in", name="closed_after_added"),
        Index("ix_org_prices_org_added_in", "org", "added_in"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    org: Mapped[str] = mapped_column(ForeignKey("organisations.key"))
    #: the book version that added it
    added_in: Mapped[int] = mapped_column(Integer)
    #: the book version that closed it, and the day it stopped holding (its ``valid_to`` from then on)
    closed_in: Mapped[int | None] = mapped_column(Integer)
    closed_on: Mapped[dt.date | None] = mapped_column(Date)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    #: who added it (``key:<id>``)
    created_by: Mapped[str] = mapped_column(String(100))


class Watch(Base):
    """A stored recommendation watched for drift: a signed event goes to ``url`` when a new knowledge version
    or a private-book change moves its costs by ``min_cost_change`` or more, or (``on_rank_change``) its ranking."""

    __tablename__ = "watches"
    __table_args__ = (
        CheckConstraint("min_cost_change >= 0", name="min_cost_change_non_negative"),
        Index("ix_watches_recommendation_id", "recommendation_id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    recommendation_id: Mapped[str] = mapped_column(ForeignKey("recommendations.id"))
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"))
    org: Mapped[str | None] = mapped_column(ForeignKey("organisations.key"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    #: the HMAC key the events are signed with (kept to sign; never answered back)
    secret: Mapped[str] = mapped_column(String(200))
    #: a fraction: 0.05 is a 5 % change of any option's expected total cost
    min_cost_change: Mapped[float] = mapped_column(Float)
    on_rank_change: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: the knowledge version (with its ``+org:`` book) the watch was last checked on
    checked_version: Mapped[str | None] = mapped_column(String(80))


class WatchDelivery(Base):
    """One event of a watch and its delivery: made once per (watch, knowledge version) whichever worker or
    replica sees the version first (the unique key), claimed by one at a time (``claimed_until``), retried
    with backoff until delivered or out of attempts; survives a restart."""

    __tablename__ = "watch_deliveries"
    __table_args__ = (
        Index("uq_watch_deliveries_watch_id_event", "watch_id", "event", unique=True),
        Index("ix_watch_deliveries_due", "status", "next_attempt_at"),
        CheckConstraint(f"status IN ({', '.join(repr(v) for v in DELIVERY_STATUSES)})", name="status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    watch_id: Mapped[str] = mapped_column(ForeignKey("watches.id"))
    #: what the event is about: the knowledge version (with its ``+org:`` book) the drift was computed on
    event: Mapped[str] = mapped_column(String(80))
    #: the JSON body sent, exactly (its signature is computed over these bytes)
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[DeliveryStatus] = mapped_column(String(10), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    #: a worker's claim: who sends it now and until when (a claim past its time is free again)
    claimed_by: Mapped[str | None] = mapped_column(String(80))
    claimed_until: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    last_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    delivered_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    #: each attempt: when, the status answered (or the error), how long it took
    history: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
