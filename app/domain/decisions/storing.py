"""Storing a recommendation: the Idempotency-Key, the daily quota, the writer's backpressure; reading
a stored one back, and listing them, for the keys that may see them (``readable``).

``recommend`` evaluates through ``DecisionService`` (which knows nothing of storing) and stores through
the writer; a retry with the same
Idempotency-Key answers the stored recommendation again (``app.kb.recommendations`` reads the claim,
``app.kb.writer`` makes it in the recommendation's transaction).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from typing import Any

import msgspec
from litestar.status_codes import HTTP_201_CREATED
from sqlalchemy import ColumnElement, and_, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.decisions import schemas as s
from app.domain.decisions.service import DecisionService
from app.domain.procurement.drift_schemas import RecommendationList, RecommendationSummary
from app.domain.shared.schemas import ProfileCreate
from app.i18n import DEFAULT_LANG, Lang
from app.kb import recommendations as rec_store
from app.kb import service_records as sr
from app.kb.repositories import RecommendationRepository
from app.kb.writer import IdempotencyKeyTaken, RecommendationWriter, WriterFull
from app.web.auth import Principal
from app.web.problems import ProblemException


@dataclasses.dataclass(frozen=True, slots=True)
class StoredAnswer:
    """A stored recommendation's answer: the document (the JSON bytes stored, or a replay's stored
    document), its status and ``Location``; ``replayed`` when it is the answer of an earlier request
    with the same Idempotency-Key."""

    doc: bytes | dict[str, Any]
    status: int
    location: str
    replayed: bool = False


async def recommend(
    decisions: DecisionService,
    req: ProfileCreate,
    *,
    api_key_id: int,
    org: str | None = None,
    writer: RecommendationWriter,
    session: AsyncSession,
    idempotency_key: str | None = None,
    lang: Lang = DEFAULT_LANG,
    evaluation: s.Evaluation | None = None,
) -> StoredAnswer:
    """Evaluate (with insights; ``evaluation``: computed already, in the worker pool), store, and answer
    the stored document; returns once it is committed.

    With an ``idempotency_key``: a claim of this API key made within 24 h answers again with the
    stored document if the request is the same, else 409; concurrent duplicates store once (the
    writer's claim decides, see ``app.kb.writer``). A replay is not counted against the quota. The key's
    form was checked by the controller (``check_idempotency_key``).
    """
    # a plain profile's request as before demand existed (its idempotency hash and stored request unchanged)
    request = req.model_dump(mode="json", exclude=None if getattr(req, "demand", None) is not None else {"demand"})
    digest = rec_store.request_hash(request) if idempotency_key is not None else ""
    now = dt.datetime.now(dt.UTC)
    if idempotency_key is not None:
        claimed = await rec_store.find_claim(session, api_key_id=api_key_id, key=idempotency_key, now=now)
        if claimed is not None:
            return _replay(claimed, digest)
    if decisions.daily_quota is not None:
        await _check_quota(session, api_key_id, decisions.daily_quota, now)
    if session.in_transaction():
        # give the connection back before waiting for the writer: a request holding one while the
        # writer waits for one from the same pool would deadlock under load (nothing was written)
        await session.rollback()
    if evaluation is None:
        evaluation = decisions.evaluate(req, insights=True, lang=lang)
    doc = s.RecommendationRead(
        id=str(uuid.uuid4()), created_at=now.replace(microsecond=0), **msgspec.structs.asdict(evaluation)
    )
    body = msgspec.json.encode(doc)  # encoded once: the row's text and the 201 answer are these bytes
    claim = None if idempotency_key is None else _claim(api_key_id, idempotency_key, digest, doc.id, now)
    try:
        await _store(writer, _row(doc, evaluation, request, body, api_key_id=api_key_id, org=org), claim)
    except IdempotencyKeyTaken:
        # a concurrent request with the same key was stored first: answer as a retry would be answered
        return await _replay_concurrent(session, api_key_id, idempotency_key or "", digest, now)
    return StoredAnswer(body, HTTP_201_CREATED, f"/v1/recommendations/{doc.id}")


async def _check_quota(session: AsyncSession, api_key_id: int, quota: int, now: dt.datetime) -> None:
    """429 when the key has stored its daily quota of recommendations today (UTC), saying when it resets."""
    stored = await rec_store.stored_today(session, api_key_id=api_key_id, now=now)
    if stored >= quota:
        tomorrow = rec_store.day_start(now) + dt.timedelta(days=1)
        raise ProblemException(
            429,
            "recommendation-quota-exceeded",
            "Daily quota of stored recommendations reached",
            f"this API key stored {stored} recommendations today (UTC), its quota is {quota}; "
            f"the quota resets at {tomorrow.isoformat()} (use ?store=false to evaluate without storing)",
            headers={"Retry-After": str(max(1, int((tomorrow - now).total_seconds())))},
        )


def _row(
    doc: s.RecommendationRead,
    evaluation: s.Evaluation,
    request: dict[str, Any],
    body: bytes,
    *,
    api_key_id: int,
    org: str | None,
) -> dict[str, Any]:
    """The stored recommendation's row: the request as sent, the answer as the bytes answered."""
    return {
        "id": doc.id,
        "created_at": doc.created_at,
        "knowledge_version": evaluation.knowledge_version,
        "methodology_version": evaluation.methodology_version,
        "request": request,
        "response": msgspec.Raw(body),
        "api_key_id": api_key_id,
        "org": org,
    }


def _claim(api_key_id: int, key: str, digest: str, recommendation_id: str, now: dt.datetime) -> dict[str, Any]:
    """The Idempotency-Key's claim, stored in the recommendation's transaction (``app.kb.writer``)."""
    return {
        "api_key_id": api_key_id,
        "key": key,
        "request_hash": digest,
        "recommendation_id": recommendation_id,
        "status": HTTP_201_CREATED,
        "created_at": now,
    }


async def _store(writer: RecommendationWriter, record: dict[str, Any], claim: dict[str, Any] | None) -> None:
    """The recommendation and its claim written; 503 when too many wait to be written (nothing stored)."""
    try:
        await writer.store(record, idempotency=claim)
    except WriterFull as exc:
        raise ProblemException(
            503,
            "writer-busy",
            "Too many recommendations waiting to be stored",
            f"{exc}; retry in a second (nothing was stored)",
            headers={"Retry-After": "1"},
        ) from exc


async def _replay_concurrent(
    session: AsyncSession, api_key_id: int, key: str, digest: str, now: dt.datetime
) -> StoredAnswer:
    """The answer of the concurrent request that claimed the same Idempotency-Key first (``_replay``), read
    afresh; 409 "retry" when its claim was pruned in between."""
    await session.rollback()  # a fresh read, not the transaction of the first look
    claimed = await rec_store.find_claim(session, api_key_id=api_key_id, key=key, now=now)
    if claimed is None:  # pruned in between: nothing sensible to answer but "try again"
        raise ProblemException(409, "idempotency-key-conflict", "Idempotency-Key in use", "retry the request") from None
    return _replay(claimed, digest)


def check_idempotency_key(key: str) -> None:
    """1 to 255 visible ASCII characters (a UUID, a hash…), or a 400 problem naming the header."""
    if not 1 <= len(key) <= rec_store.IDEMPOTENCY_KEY_MAX_LENGTH or not all("!" <= c <= "~" for c in key):
        raise ProblemException(
            400,
            "invalid-request",
            "The request is invalid",
            f"Idempotency-Key: must be 1 to {rec_store.IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters "
            "(no spaces), e.g. a UUID",
            field="Idempotency-Key",
        )


def _replay(claimed: rec_store.Claimed, digest: str) -> StoredAnswer:
    """The answer of an earlier request with the same Idempotency-Key, or 409 when the body differs."""
    if claimed.request_hash != digest:
        raise ProblemException(
            409,
            "idempotency-key-conflict",
            "Idempotency-Key reused with another body",
            f"the Idempotency-Key was used within the last 24 h with another request body (recommendation "
            f"{claimed.recommendation_id}); send a new key for a new request",
            field="Idempotency-Key",
        )
    return StoredAnswer(
        claimed.response, claimed.status, f"/v1/recommendations/{claimed.recommendation_id}", replayed=True
    )


async def stored(
    repository: RecommendationRepository, rec_id: str, *, api_key_id: int, admin: bool, org: str | None = None
) -> dict[str, Any] | None:
    """A stored recommendation's document as answered, if this key may read it (``readable``)."""
    row = await repository.get_one_or_none(id=rec_id)
    if row is None or not readable(row, api_key_id=api_key_id, admin=admin, org=org):
        return None
    return row.response


def readable(row: Any, *, api_key_id: int, admin: bool, org: str | None) -> bool:
    """Whether a key may see a stored object (a recommendation, a watch): an organisation's key sees its
    organisation's; a key of none its own; an admin key every one. Another's does not exist for it (404)."""
    if admin:
        return True
    if org is not None:
        return bool(row.org == org)
    return bool(row.api_key_id == api_key_id and row.org is None)


def readable_where(model: Any, *, api_key_id: int, admin: bool, org: str | None) -> ColumnElement[bool]:
    """``readable`` as a condition on a table of stored objects (one with ``org`` and ``api_key_id``): a list's rows."""
    if admin:
        return true()
    if org is not None:
        return model.org == org  # type: ignore[no-any-return]
    return and_(model.api_key_id == api_key_id, model.org.is_(None))


#: a stored recommendation, and where its answer holds the profile
_REC = sr.Recommendation
_PROFILE = ("profile",)


async def recommendation_list(
    db_session: AsyncSession, principal: Principal, limit: int, offset: int
) -> RecommendationList:
    """The stored recommendations ``principal`` may read, newest first: what tells each apart, not its answer
    (``GET /v1/recommendations``); the fields are read from the stored answers' JSON, in SQL."""
    mine = readable_where(_REC, api_key_id=principal.id, admin=principal.is_admin, org=principal.org)
    total = await db_session.scalar(select(func.count()).select_from(_REC).where(mine))
    rows = (
        await db_session.execute(
            select(
                _REC.id,
                _REC.created_at,
                _REC.knowledge_version,
                _REC.response["recommended_option"].as_string(),
                _REC.response[(*_PROFILE, "currency")].as_string(),
                _REC.response[(*_PROFILE, "as_of")].as_string(),
                _REC.response[(*_PROFILE, "gpus")].as_integer(),
                _REC.response[(*_PROFILE, "horizon_years")].as_float(),
            )
            .where(mine)
            .order_by(_REC.created_at.desc(), _REC.id.desc())
            .limit(limit)
            .offset(offset)
        )
    ).all()
    items = [
        RecommendationSummary(
            id=rid,
            created_at=created if created.tzinfo else created.replace(tzinfo=dt.UTC),  # SQLite: naive UTC
            knowledge_version=version,
            recommended_option=recommended,
            currency=currency,
            as_of=None if as_of is None else dt.date.fromisoformat(as_of),
            gpus=gpus,
            horizon_years=years,
        )
        for rid, created, version, recommended, currency, as_of, gpus, years in rows
    ]
    return RecommendationList(total=total or 0, limit=limit, offset=offset, items=items)
