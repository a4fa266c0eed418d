"""The service's own records beside the knowledge base: stored recommendations, API keys, the
Idempotency-Key claims of stored recommendations, and the audit trail. They share the knowledge base's
declarative ``Base`` (one metadata, one naming convention, one migration history), but no number of an
answer depends on them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.kb.models import Base
from app.sdk.vocab import AuditAction, Scope


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
    #: the API key that created it: only that key (or an ``admin`` key) may read it back
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id"))


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
