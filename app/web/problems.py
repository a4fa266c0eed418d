"""Every error as RFC 9457 problem details (``application/problem+json``), mapped in one place."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, NotAuthorizedException, ValidationException
from litestar.openapi import ResponseSpec
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from app.core.errors import (
    DomainError,
    InconsistentProfile,
    KnowledgeUnavailable,
    NothingAssessable,
    TooMuchWork,
    UnknownReference,
)
from app.core.text import msg
from app.i18n import Lang, language, name_of, render
from app.web.rate_limits import retry_after
from app.web.request_id import request_id

log = logging.getLogger("app.errors")
PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "urn:compute-advisor:problem:"


class FieldError(msgspec.Struct):
    field: str
    message: str


class Problem(msgspec.Struct, omit_defaults=True):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    field: str | None = None
    errors: list[FieldError] | None = None
    request_id: str | None = None


#: each domain error of the core as (status, type slug, title)
DOMAIN_PROBLEMS: dict[type[DomainError], tuple[int, str, str]] = {
    UnknownReference: (
        422,
        "unknown-reference",
        "The request refers to something the knowledge base does not have",
    ),
    InconsistentProfile: (422, "inconsistent-profile", "The profile's fields contradict each other"),
    NothingAssessable: (422, "no-option-assessable", "No option could be assessed for this request"),
    TooMuchWork: (422, "too-much-work", "The request asks for more work than one request may"),
    KnowledgeUnavailable: (503, "knowledge-unavailable", "The knowledge base is not loaded"),
}

_SLUGS = {
    400: "invalid-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    409: "conflict",
    413: "body-too-large",
    415: "unsupported-media-type",
    422: "unprocessable",
    429: "too-many-requests",
    503: "unavailable",
}
_TITLES = {
    400: "The request is invalid",
    401: "An API key is required",
    403: "The API key may not do this",
    404: "Not found",
    405: "Method not allowed",
    406: "Cannot answer in the requested media type",
    409: "Conflict",
    413: "The request body is too large",
    415: "Unsupported content type",
    422: "The request cannot be processed",
    429: "Too many requests",
    503: "Service unavailable",
}


class ProblemException(HTTPException):
    """An HTTP error with a problem type of its own (``TYPE_BASE + slug``) and title, for the cases a
    client should tell apart from the generic one of its status (an idempotency conflict, a daily quota,
    a full writer queue, an expired key)."""

    def __init__(
        self,
        status_code: int,
        slug: str,
        title: str,
        detail: str,
        headers: dict[str, str] | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(detail=detail, status_code=status_code, headers=headers)
        self.slug = slug
        self.title = title
        self.field = field


#: every problem ``type`` the service answers with (listed in the OpenAPI document)
PROBLEM_TYPES = sorted(
    {TYPE_BASE + slug for slug in (*_SLUGS.values(), *(v[1] for v in DOMAIN_PROBLEMS.values()), "internal", "error")}
    | {
        TYPE_BASE + slug  # app.web.degraded
        for slug in (
            "database-unavailable",
            "database-timeout",
            "database-conflict",
            "storage-full",
            "database-read-only",
        )
    }
    # answered by the server before a request reaches the application, or cut by it: app.serve
    | {TYPE_BASE + slug for slug in ("request-timeout", "uri-too-long", "headers-too-large")}
    # ProblemException's own types: app.web.auth, app.domain.decisions.storing, app.domain.procurement.prices
    | {
        TYPE_BASE + slug
        for slug in (
            "key-expired",
            "idempotency-key-conflict",
            "recommendation-quota-exceeded",
            "writer-busy",
            "no-organisation",
        )
    }
)


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(msgspec.json.encode(problem), status_code=problem.status, media_type=PROBLEM_JSON, headers=headers)


#: a problem lists at most this many field errors (a body of 10,000 bad profiles gets the first ones)
MAX_ERRORS = 20
#: longest field path and message quoted in a problem, in characters (messages may quote the input)
MAX_FIELD_CHARS = 120
MAX_MESSAGE_CHARS = 200


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field_errors(extra: Any) -> tuple[list[FieldError], int]:
    """The first :data:`MAX_ERRORS` field errors, each cut to a bounded length, and how many there were."""
    errors = []
    found = [e for e in extra if isinstance(e, dict)] if isinstance(extra, list) else []
    for e in found[:MAX_ERRORS]:
        key = str(e.get("key") or e.get("source") or "body")
        message = str(e.get("message", ""))
        if key == "data" and message == "'data'":  # Litestar's words for "no body at all"
            key, message = "body", "a JSON body is required"
        errors.append(FieldError(field=_cut(key, MAX_FIELD_CHARS), message=_cut(message, MAX_MESSAGE_CHARS)))
    return errors, len(found)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):  # a chain can loop
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def title(status: int, lang: Lang) -> str:
    """The problem title of ``status`` in ``lang``."""
    return name_of(f"problem.title.{_SLUGS[status]}", lang, _TITLES[status]) if status in _SLUGS else "Error"


def handle_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    status = exc.status_code
    lang = language(request.scope)
    errors, total = _field_errors(exc.extra) if isinstance(exc, ValidationException) else (None, 0)
    detail = render(exc.detail, lang) if exc.detail else title(status, lang)
    if errors:
        detail = "; ".join(f"{e.field}: {e.message}" for e in errors)
        if total > len(errors):
            detail += f"; and {total - len(errors)} more errors (the first {len(errors)} are listed)"
    elif _caused_by(exc, msgspec.DecodeError):
        detail = render(
            msg("problem.detail.not_json", f"the body is not valid JSON: {exc.detail}", error=exc.detail), lang
        )
    headers = dict(exc.headers or {})
    if isinstance(exc, NotAuthorizedException):
        headers.setdefault("WWW-Authenticate", 'ApiKey header="X-API-Key"')
    if status == 429 and "Retry-After" not in headers and (wait := retry_after(headers)):
        headers["Retry-After"] = wait
        detail = render(
            msg("problem.detail.rate_limited", f"rate limit exceeded: retry after {wait} s", seconds=wait), lang
        )
    slug, problem_title = _SLUGS.get(status, "error"), title(status, lang)
    field = errors[0].field if errors else None
    if isinstance(exc, ProblemException):
        slug, problem_title, field = exc.slug, exc.title, exc.field
    return problem_response(
        Problem(
            type=TYPE_BASE + slug,
            title=problem_title,
            status=status,
            detail=detail,
            instance=request.url.path,
            field=field,
            errors=errors or None,
            request_id=request_id(request.scope),
        ),
        headers,
    )


def handle_domain(request: Request[Any, Any, Any], exc: DomainError) -> Response[bytes]:
    status, slug, english = next(
        (v for cls, v in DOMAIN_PROBLEMS.items() if isinstance(exc, cls)),
        (422, "unprocessable", "The request cannot be processed"),
    )
    lang = language(request.scope)
    return problem_response(
        Problem(
            type=TYPE_BASE + slug,
            title=name_of(f"problem.title.{slug}", lang, english),
            status=status,
            detail=render(exc.detail, lang),
            instance=request.url.path,
            field=exc.field,
            errors=[FieldError(exc.field, str(exc.detail))] if exc.field else None,  # field messages stay English
            request_id=request_id(request.scope),
        )
    )


def handle_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    rid = request_id(request.scope)
    lang = language(request.scope)
    log.exception("unhandled error, request_id=%s", rid)
    detail = msg(
        "problem.detail.internal", f"The service failed to answer; quote request id {rid} when reporting it.", id=rid
    )
    return problem_response(
        Problem(
            type=TYPE_BASE + "internal",
            title=name_of("problem.title.internal", lang, "Internal error"),
            status=HTTP_500_INTERNAL_SERVER_ERROR,
            detail=render(detail, lang),
            instance=request.url.path,
            request_id=rid,
        )
    )


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: handle_http,
    DomainError: handle_domain,
    Exception: handle_unexpected,
}


def problem(status: int, description: str) -> ResponseSpec:
    return ResponseSpec(
        data_container=Problem, media_type=PROBLEM_JSON, description=description, generate_examples=False
    )


#: documented on every operation (Litestar documents none of these as problem+json by itself)
COMMON_PROBLEMS = {
    400: problem(
        400,
        "Invalid request: the problem names the offending field (at most 20 field errors are listed), or says "
        "which header is malformed (an `Accept` quality value outside 0–1).",
    ),
    404: problem(404, "Not found."),
    405: problem(405, "Method not allowed."),
    406: problem(406, "The Accept header asks for a media type this operation cannot produce."),
    429: problem(
        429,
        "Rate limit exceeded, or (a heavy computation) the API key has `WORKER_POOL_PER_KEY` heavy requests "
        "computing or waiting already: retry after the Retry-After header's seconds.",
    ),
    500: problem(500, "Internal error: only a request id, which the logs also carry."),
    503: problem(
        503,
        "The knowledge base or the database is unavailable, the database refuses writes (a full disk, a "
        "read-only database) or broke off a conflicting transaction, or every worker thread is busy with heavy "
        "computations and the queue is full: retry after the Retry-After header's seconds.",
    ),
}
BODY_PROBLEMS = {
    **COMMON_PROBLEMS,
    413: problem(
        413,
        "The request body is larger than this operation accepts: 64 KiB for one profile, 128 KiB for a capacity "
        "plan, `MAX_BODY_BYTES` (4 MiB by default) for a batch of evaluations. Refused from its Content-Length, "
        "unread; the connection closes.",
    ),
    415: problem(
        415,
        "The body must be declared `application/json` (or a `+json` type) in UTF-8: a body without "
        "Content-Type, of another type or in another charset is refused.",
    ),
    422: problem(
        422,
        "The body is valid against its schema, but the request cannot be answered, for one of these problem "
        "types: `urn:compute-advisor:problem:unknown-reference` (it names a GPU model, provider, region or "
        "currency the knowledge base lacks, or an `as_of` date before any price or exchange rate: the problem "
        "lists what exists), `…:no-option-assessable` (no option could be assessed for the profile), "
        "`…:too-much-work` (more profiles or draws than one request may hold) or `…:unprocessable` (the "
        "request costs more than the whole rate-limit budget: split it).",
    ),
}
