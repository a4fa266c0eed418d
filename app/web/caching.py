"""Conditional requests: ETags derived from the knowledge version and the normalised request,
``If-None-Match`` answered with 304, and ``Cache-Control`` saying how long an answer may be reused.

Litestar sets an ``ETag`` header when told to but never compares ``If-None-Match``; this module
does both. An answer depends only on the knowledge version, the loaded plugins and the request
itself — never on who asks — so an ETag is the same for every key; authentication and scopes run
before this code, and the answers are marked ``private`` (no shared cache stores them) and vary on
``X-API-Key``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.i18n import language

#: how long a client may reuse an answer before it revalidates: the knowledge version can change
#: at any seed load, and every worker serves a new one within a few seconds
MAX_AGE_SECONDS = 5
CACHE_CONTROL = f"private, max-age={MAX_AGE_SECONDS}, must-revalidate"
VARY = "Accept, Accept-Language, X-API-Key"
#: every other answer: stored recommendations, the audit trail, evaluations, problems — what depends on the
#: caller (or is not worth revalidating) is kept by no cache, shared or not
NO_STORE = "private, no-store"


#: how many ETags answered 200 a worker remembers, to answer a matching ``If-None-Match`` without the handler
KNOWN_ETAGS = 4096


def make_etag(*parts: str) -> str:
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=12).hexdigest()
    return f'"{digest}"'


def matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 weak comparison against every entity tag listed (or ``*``)."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    bare = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == bare for tag in if_none_match.split(","))


def caching_headers(etag: str) -> dict[str, str]:
    return {"ETag": etag, "Cache-Control": CACHE_CONTROL, "Vary": VARY}


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), "")


def _normalised_query(query_string: bytes) -> str:
    if not query_string:
        return ""
    return urlencode(sorted(parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)))


def answer_etag(scope: Scope, *parts: str) -> str | None:
    """The one way an ETag is made: the knowledge version served, the loaded plugins, and the parts
    that identify the answer (path, normalised query or body, media type). ``None`` while no
    knowledge is loaded (nothing to validate against: the handler answers 503)."""
    state = scope["app"].state
    knowledge = state.advisor.loaded()
    if knowledge is None:
        return None
    return make_etag(knowledge.version, state.plugins_fingerprint, language(scope), *parts)


def not_modified(scope: Scope, etag: str | None) -> bool:
    """The client's ``If-None-Match`` names ``etag``: a 304 will do."""
    return etag is not None and matches(_header(scope, b"if-none-match"), etag)


class KnownEtags:
    """The catalog ETags this worker answered 200 (the last :data:`KNOWN_ETAGS`, forgotten all at once
    past that), kept in the app's state as ``known_etags``."""

    def __init__(self, limit: int = KNOWN_ETAGS) -> None:
        self.limit = limit
        self._etags: set[str] = set()

    def __contains__(self, etag: str) -> bool:
        return etag in self._etags

    def add(self, etag: str) -> None:
        if len(self._etags) >= self.limit:
            self._etags.clear()
        self._etags.add(etag)


def conditional_get_middleware(app: ASGIApp) -> ASGIApp:
    """For the catalog's GETs: add ``ETag``/``Cache-Control``/``Vary`` to a 200, and turn that 200 into a
    304 when the client's ``If-None-Match`` names the ETag.

    A 304 is only ever the replacement of a 200, so ``If-None-Match: *`` on a GPU that does not exist
    still answers 404, and a 400 stays a 400 (RFC 9110 §13.1.2: the condition applies to the
    representation the request would select). The handler runs the first time an ETag is made, and the
    ETags answered 200 are remembered (:class:`KnownEtags`): a later request naming one of them is
    answered 304 by the service's edge (:func:`known_not_modified`, ``app.web.edge``) — after
    authentication, the rate limit's charge and the request metrics, before the router runs the route.
    The ETag is made of everything the answer depends on (the knowledge version and plugins, the
    language, the path, the query and the media type), so the handler would answer that same 200."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["method"] not in ("GET", "HEAD"):
            await app(scope, receive, send)
            return
        etag = read_etag(scope, scope["path"])
        if etag is None:
            await app(scope, receive, send)
            return
        known: KnownEtags | None = scope["app"].state.get("known_etags")
        headers = caching_headers(etag)
        replaced = False

        async def send_with_etag(message: Message) -> None:
            nonlocal replaced
            if replaced:  # the 200's body, not sent after a 304
                if message["type"] == "http.response.body" and not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            if message["type"] == "http.response.start" and message["status"] == 200:
                if known is not None:
                    known.add(etag)
                if not_modified(scope, etag):
                    replaced = True
                    await send(_not_modified_start(etag))
                    return
                mutable = MutableScopeHeaders.from_message(message)
                for k, v in headers.items():
                    mutable[k] = v
            await send(message)

        await app(scope, receive, send_with_etag)

    return middleware


def read_etag(scope: Scope, path: str) -> str | None:
    """The ETag of a catalog read's answer (its routed ``path``, normalised query and ``Accept``), or
    None while no knowledge is loaded."""
    return answer_etag(scope, path, _normalised_query(scope.get("query_string", b"")), _header(scope, b"accept"))


def known_not_modified(scope: Scope, path: str) -> str | None:
    """The ETag of a catalog read this worker already answered 200 and the request's ``If-None-Match``
    names (``path``: as routed): a 304 will do without its handler (``app.web.edge`` answers it,
    ``answer_not_modified``); else None."""
    known: KnownEtags | None = scope["app"].state.get("known_etags")
    if known is None or not (if_none_match := _header(scope, b"if-none-match")):
        return None
    etag = read_etag(scope, path)
    return etag if etag is not None and etag in known and matches(if_none_match, etag) else None


async def answer_not_modified(scope: Scope, etag: str, send: Send) -> None:
    """The 304 of ``etag``: its caching headers, no body."""
    await send(_not_modified_start(etag))
    await send({"type": "http.response.body", "body": b"", "more_body": False})


#: ``caching_headers``' after the ETag, the same for every answer: as raw ASGI headers, encoded once
_AFTER_ETAG = [(k.lower().encode(), v.encode()) for k, v in caching_headers("").items() if k != "ETag"]


def _not_modified_start(etag: str) -> Any:
    """A 304's start: ``caching_headers(etag)`` as raw ASGI headers."""
    return {"type": "http.response.start", "status": 304, "headers": [(b"etag", etag.encode()), *_AFTER_ETAG]}


def plugins_fingerprint(options: Iterable[tuple[str, str, str]]) -> str:
    """Which option plugins (key, plugin, version) are loaded: part of every ETag."""
    return make_etag(*(":".join(o) for o in sorted(options)))
