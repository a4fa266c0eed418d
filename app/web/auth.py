"""API keys: who a request's ``X-API-Key`` is (``authenticate``) and whether it may use a route
(``require_scope``), both called by the service's edge (``app.web.edge``) for every route that asks for a key.

Every route handler except health and docs declares the scope it needs in ``opt={"scope": ...}``;
``require_scope`` checks it against the key's scopes (``admin`` holds them all), in the edge's one pass:
a Litestar guard would copy the route handler and run in a thread on every request.
A missing, unknown or revoked key gets 401 (with ``WWW-Authenticate``), an expired one 401 of type
``…:key-expired`` saying when it expired (checked against the clock at every request, cached or not),
a key without the scope 403. ``KeyUsage`` records when each key was last used, written in the
background at most once a minute per key and process — never a write per request.

Each key is looked up in the database (the rate limits decide first whether it may be: a
key not among the active keys' digests, ``app.web.known_keys``, is a guess with a budget of its own),
so a revocation reaches every worker and replica;
a verified key is trusted in-process for ``API_KEY_CACHE_SECONDS`` (default 1 s) to keep requests
fast, so revocation takes effect within that time; past half of it, the key is looked up again in the
background while requests go on with the cached answer (no request waits for the lookup of a key in
steady use, and what is served was confirmed within the cache time). When the database cannot be reached, a key
verified within the last ``DEGRADED_GRACE_SECONDS`` (10 minutes) keeps working: reads and
computations go on answering from the in-memory knowledge snapshot.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from litestar import Litestar
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException, ServiceUnavailableException
from litestar.handlers.base import BaseRouteHandler
from litestar.handlers.http_handlers import HTTPRouteHandler
from litestar.openapi.spec import (
    Components,
    OpenAPI,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Reference,
    Schema,
    SecurityScheme,
)
from litestar.routes import HTTPRoute
from litestar.types import Scope

from app.core.text import msg
from app.core.vocab import ADMIN, API_KEY_MAX_LENGTH, SCOPES
from app.web.known_keys import KnownKeys
from app.web.problems import PROBLEM_JSON, ProblemException
from app.web.rate_limits import Standing, key_digest, presented_key

log = logging.getLogger(__name__)

API_KEY_HEADER = "X-API-Key"
SECURITY_SCHEME_NAME = "ApiKey"
#: how long a verified key keeps working while the database cannot be reached
DEGRADED_GRACE_SECONDS = 600.0
#: a key lookup slower than this counts as "database unreachable"
LOOKUP_TIMEOUT_SECONDS = 3.0
#: a cached key older than this share of ``API_KEY_CACHE_SECONDS`` is looked up again in the background,
#: while requests go on with it: the entry is renewed before it expires, and no request waits for it
REFRESH_AHEAD = 0.5


@dataclass(frozen=True, slots=True)
class Principal:
    """The API key a request was made with (``request.user``)."""

    id: int
    name: str
    key_prefix: str
    scopes: frozenset[str]
    #: after this instant the key is refused; None: it never expires
    expires_at: dt.datetime | None = None
    #: the organisation the key belongs to: its stored recommendations, watches and private price book
    org: str | None = None

    def expired(self, now: dt.datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.scopes

    def allows(self, scope: str) -> bool:
        return self.is_admin or scope in self.scopes

    @property
    def actor(self) -> str:
        """How the audit trail names this key."""
        return f"key:{self.id}"


Lookup = Callable[[str], Awaitable[Principal | None]]


class KeyVerifier:
    """Verifies keys against the database, with a short in-process cache and a degraded mode."""

    def __init__(
        self,
        lookup: Lookup,
        cache_seconds: float,
        grace_seconds: float = DEGRADED_GRACE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        known: KnownKeys | None = None,
    ) -> None:
        self._lookup = lookup
        #: the active keys' digests (None: every key this worker has not verified is a guess)
        self.known = known
        self.cache_seconds = cache_seconds
        self.grace_seconds = grace_seconds
        self._clock = clock
        #: sha256 of the key -> (principal, when the database last confirmed it)
        self._verified: dict[str, tuple[Principal, float]] = {}
        #: sha256 of the key -> the lookup under way: the requests that find the cache expired together
        #: wait for one lookup, not one each (every second, a key's burst of requests queued one database
        #: read per request behind each other: up to half a second under load)
        self._lookups: dict[str, asyncio.Future[Principal | None]] = {}

    async def standing(self, digest: str) -> Standing:
        """What this worker knows of the key with this digest, without looking it up: verified within
        the grace period (charged to the key alone), an active key's digest, or neither (a guess)."""
        cached = self._verified.get(digest)
        if cached is not None and self._clock() - cached[1] < self.grace_seconds:
            return Standing.VERIFIED
        if self.known is not None and await self.known.contains(digest):
            return Standing.KNOWN
        return Standing.UNKNOWN

    async def vouches_for(self, digest: str) -> bool:
        """The key is valid as far as this worker knows without looking it up — verified within the
        cache time, or an active key's digest — and has not expired (readiness shows it details)."""
        cached = self._verified.get(digest)
        if cached is not None and self._clock() - cached[1] < self.cache_seconds:
            return not cached[0].expired(dt.datetime.now(dt.UTC))
        return bool(digest) and self.known is not None and await self.known.contains(digest)

    async def verify(self, key: str, digest: str | None = None) -> Principal | None:
        """The key's principal (from the cache, or looked up), or None: unknown or revoked. ``digest``:
        the key's, when the caller has it (``presented_key``)."""
        digest = digest or key_digest(key)
        now = self._clock()
        cached = self._verified.get(digest)
        if cached is not None and now - cached[1] < self.cache_seconds:
            if now - cached[1] >= self.cache_seconds * REFRESH_AHEAD and digest not in self._lookups:
                self._refresh(key, digest, now)
            return cached[0]
        try:
            principal = await asyncio.shield(self._looked_up(key, digest))
        except Exception as exc:  # the database is unreachable: degraded mode
            if cached is not None and now - cached[1] < self.grace_seconds:
                log.warning("API key lookup failed (%s); key %s trusted from cache", type(exc).__name__, cached[0].id)
                return cached[0]
            log.warning("API key lookup failed: %s: %s", type(exc).__name__, exc)
            raise ServiceUnavailableException(
                "the API key cannot be verified: the database is unreachable", headers={"Retry-After": "5"}
            ) from exc
        if principal is None:
            self._verified.pop(digest, None)
            return None
        self._verified[digest] = (principal, now)
        return principal

    def _looked_up(self, key: str, digest: str) -> asyncio.Future[Principal | None]:
        """The lookup of ``key`` under way, or a new one (shielded by its callers: a request that goes
        away does not cancel the others' lookup)."""
        lookup = self._lookups.get(digest)
        if lookup is None:
            lookup = asyncio.ensure_future(asyncio.wait_for(self._lookup(key), LOOKUP_TIMEOUT_SECONDS))
            self._lookups[digest] = lookup
            lookup.add_done_callback(lambda done: self._looked(digest, done))
        return lookup

    def _refresh(self, key: str, digest: str, started: float) -> None:
        """Look ``key`` up again while its cached principal is still good: requests go on with it
        meanwhile, and the lookup renews the entry before it expires (or drops it: revoked). Without this,
        every ``cache_seconds`` each request in flight with the key waited for the lookup: a 6–12 ms pause
        of all of them once a second under load (the access log's timestamps show it)."""
        self._looked_up(key, digest).add_done_callback(lambda done: self._renewed(digest, started, done))

    def _renewed(self, digest: str, started: float, done: asyncio.Future[Principal | None]) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # the entry expires as it would have; the first request past it asks the database itself
        principal = done.result()
        if principal is None:
            self._verified.pop(digest, None)
            return
        current = self._verified.get(digest)
        if current is None or current[1] <= started:  # confirmed no earlier than the lookup started
            self._verified[digest] = (principal, started)

    def _looked(self, digest: str, done: asyncio.Future[Principal | None]) -> None:
        if self._lookups.get(digest) is done:
            del self._lookups[digest]
        if done.cancelled() or done.exception() is not None:  # retrieved: its waiters answer it
            return
        principal = done.result()
        if self.known is not None:  # what the database just said, before the next read of every key
            if principal is None:
                self.known.discard(digest)
            else:
                self.known.add(digest, principal.expires_at)


#: at most one ``last_used_at`` write per key and process in this many seconds
LAST_USED_INTERVAL_SECONDS = 60.0


class KeyUsage:
    """Remembers that keys were used and writes ``last_used_at`` in the background: a key's first use in
    each ``interval`` (per process) is queued, and one task writes what is queued, so a request never
    waits for it and the database sees at most one write per key and process a minute. Best effort: a
    failed write is logged and dropped (the next minute's use writes again)."""

    def __init__(
        self,
        write: Callable[[dict[int, dt.datetime]], Awaitable[None]],
        interval: float = LAST_USED_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self.interval = interval
        self._clock = clock
        self._noted: dict[int, float] = {}
        self._due: dict[int, dt.datetime] = {}
        self._task: asyncio.Task[None] | None = None

    def touch(self, key_id: int) -> None:
        now = self._clock()
        last = self._noted.get(key_id)
        if last is not None and now - last < self.interval:
            return
        self._noted[key_id] = now
        self._due[key_id] = dt.datetime.now(dt.UTC)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._flush(), name="key-last-used")

    async def _flush(self) -> None:
        while self._due:
            due, self._due = self._due, {}
            try:
                await self._write(due)
            except Exception as exc:
                log.warning("last use of API keys not recorded: %s: %s", type(exc).__name__, exc)

    async def drain(self) -> None:
        """Wait for the writes under way (tests, shutdown)."""
        if self._task is not None:
            await asyncio.shield(self._task)


async def authenticate(scope: Scope, verifier: KeyVerifier) -> Principal:
    """The principal of the request's ``X-API-Key`` (``app.web.edge`` calls this for every route that asks
    for a key); 401 without a key, with an unknown, revoked or expired one."""
    key, digest = presented_key(scope)
    if not key:
        raise NotAuthorizedException(
            detail=msg(
                "problem.detail.no_key", f"send an API key in the {API_KEY_HEADER} header", header=API_KEY_HEADER
            )
        )
    principal = await verifier.verify(key, digest) if len(key) <= API_KEY_MAX_LENGTH else None
    if principal is None:
        raise NotAuthorizedException(detail=msg("problem.detail.unknown_key", "the API key is unknown or revoked"))
    if principal.expired(dt.datetime.now(dt.UTC)):
        assert principal.expires_at is not None
        raise ProblemException(
            401,
            "key-expired",
            "The API key has expired",
            f"the API key {principal.key_prefix}… expired at {principal.expires_at:%Y-%m-%d %H:%M:%S} UTC; "
            "ask for a new one (`compute-advisor keys rotate` or `keys create`)",
            headers={"WWW-Authenticate": f'ApiKey header="{API_KEY_HEADER}"'},
        )
    return principal


def route_scope(handler: BaseRouteHandler) -> str | None:
    scope = handler.opt.get("scope")
    return scope if isinstance(scope, str) else None


def principal_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    user = connection.scope.get("user")
    if not isinstance(user, Principal):
        raise NotAuthorizedException(
            detail=msg(
                "problem.detail.no_key", f"send an API key in the {API_KEY_HEADER} header", header=API_KEY_HEADER
            )
        )
    return user


def require_scope(principal: Principal, required: str | None) -> None:
    """The key must hold the route's ``opt["scope"]`` (or ``admin``): 403 otherwise.

    Routes open to everyone (health, docs) ask for no key and never get here; a route reached with a
    key but declaring no scope is refused (fail closed).
    """
    if required is None:
        raise PermissionDeniedException("this route declares no scope")
    if not principal.allows(required):
        raise PermissionDeniedException(
            detail=msg("problem.detail.missing_scope", f"the API key lacks the scope '{required}'", scope=required)
        )


def protected_handlers(app: Litestar) -> list[tuple[HTTPRoute, HTTPRouteHandler]]:
    """Every (route, handler) of the app that declares a scope."""
    found = []
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            for handler in route.route_handlers:
                if route_scope(handler) is not None:
                    found.append((route, handler))
    return found


def document_security(app: Litestar, openapi: OpenAPI) -> None:
    """Declare the ``X-API-Key`` scheme; on each protected operation require it and document 401/403."""
    if openapi.components is None:
        openapi.components = Components()
    openapi.components.security_schemes = {
        **(openapi.components.security_schemes or {}),
        SECURITY_SCHEME_NAME: SecurityScheme(
            type="apiKey",
            name=API_KEY_HEADER,
            security_scheme_in="header",
            description="An API key (`compute-advisor keys create`). Scopes: "
            + "; ".join(f"`{k}`: {v}" for k, v in SCOPES.items())
            + ".",
        ),
    }
    unauthorized = _problem_response(
        "No API key, or an unknown, revoked or (`…:key-expired`) expired one.",
        {
            "WWW-Authenticate": OpenAPIHeader(
                schema=Schema(type=OpenAPIType.STRING), description=f'`ApiKey header="{API_KEY_HEADER}"`'
            )
        },
    )
    forbidden = _problem_response("The API key lacks the scope this operation needs.")
    for route, handler in protected_handlers(app):
        item = (openapi.paths or {}).get(route.path_format)
        if item is None:
            continue
        for method in handler.http_methods:
            op = getattr(item, method.lower(), None)
            if not isinstance(op, Operation):
                continue
            op.security = [{SECURITY_SCHEME_NAME: []}]
            scope = route_scope(handler)
            op.description = ((op.description or "").rstrip() + f"\n\nRequires the API key scope `{scope}`.").strip()
            responses = op.responses if op.responses is not None else {}
            for status, spec in ((401, unauthorized), (403, forbidden)):
                if str(status) not in responses:
                    responses[str(status)] = spec
            op.responses = responses


def _problem_response(description: str, headers: dict[str, OpenAPIHeader] | None = None) -> OpenAPIResponse:
    return OpenAPIResponse(
        description=description,
        content={PROBLEM_JSON: OpenAPIMediaType(schema=Reference(ref="#/components/schemas/Problem"))},
        headers=headers,  # type: ignore[arg-type]
    )
