"""The service's edge: one pass around the whole application for what every request shares.

One pure-ASGI layer, outermost (404s and 405s of the router pass through it like any answer), does in
a single wrapper of ``send``:

- the **request id**: a sane ``X-Request-ID`` the client sent, else a new one, fixed before anything
  runs (``app.web.request_id``), set for the request's log lines and echoed on the answer;
- the **key and the limit**, before the router runs the route: the rate limit's flood check of the
  client address before any key lookup, the API key's principal (``app.web.auth``: cached, set as the
  scope's ``user``), its scope, and the key's charge (``app.web.rate_limits``) — a request whose cost
  is read from its body leaves that charge to the app's ``before_request``, where Litestar decodes the
  body once for the cost and the handler. What a route asks (``opt["scope"]``, ``opt["cost"]``, open
  to everyone or not: ``app.web.public``) is read once per route handler and path (``RouteRules``). A
  refusal (401, 403, 429, 503, 422) is answered here, by the route's exception handlers as Litestar
  would (``app.web.problems``: the same problem, the same headers), behind the same CORS and tracing
  layers as every answer;
- the **known 304**: a catalog read (a route with ``app.web.caching.conditional_get_middleware``)
  whose ``If-None-Match`` names an ETag this worker answered 200 is answered 304 here, once the key is
  checked and charged, behind the same layers — the route would answer that same 304;
- the **response headers** every answer carries, added in one pass over the answer's raw headers:
  the security headers (``app.web.security``), ``Cache-Control: private, no-store`` where the handler
  said nothing of caching (not on ``/docs``), ``Content-Language`` (``app.i18n``), the ``RateLimit-*``
  headers of the request's charge (``app.web.rate_limits``), and ``X-Knowledge-Source`` on successful
  ``/v1/`` answers while the service serves its last snapshot (``app.web.degraded``);
- the **request metrics**: count, duration and errors by route template, method and status
  (``app.web.metrics.RequestMetrics``; a request no route matched is not counted: its raw path would
  be a label anyone could multiply); the in-progress gauge is raised when the handler's route is known
  (``RequestMetrics.started``, from the app's ``before_request``, or here for a known 304) and lowered
  here;
- the **access log**: one line per request when it ends (``app.web.logs.log_request``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from litestar._asgi.utils import is_valid_host
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException, NotAuthorizedException
from litestar.middleware._internal.cors import CORSMiddleware
from litestar.plugins.opentelemetry import OpenTelemetryPlugin
from litestar.utils import normalize_path

from app.i18n import CONTENT_LANGUAGE, language
from app.web import metrics, tracing
from app.web.auth import KeyUsage, KeyVerifier, authenticate, require_scope, route_scope
from app.web.caching import NO_STORE, answer_not_modified, conditional_get_middleware, known_not_modified
from app.web.degraded import KNOWLEDGE_SOURCE_HEADER
from app.web.logs import log_request
from app.web.public import PUBLIC_CHARGED_PATHS, PUBLIC_PATHS
from app.web.rate_limits import (
    BODY_METHODS,
    COST_OPT,
    SKIP_OPT,
    Cost,
    RateLimiter,
    Standing,
    charge_of,
    defer_body_charge,
    request_cost,
)
from app.web.request_id import CURRENT_REQUEST_ID, REQUEST_ID_HEADER, request_id
from app.web.security import security_headers

if TYPE_CHECKING:
    from litestar import Litestar
    from litestar.handlers.base import BaseRouteHandler
    from litestar.types import (
        ASGIApp,
        ExceptionHandler,
        ExceptionHandlersMap,
        HTTPScope,
        Message,
        Receive,
        RouteHandlerType,
        Scope,
        Send,
        TypeEncodersMap,
    )

_CACHE_CONTROL = b"cache-control"
_SOURCE = KNOWLEDGE_SOURCE_HEADER.lower().encode()
#: the edge's constant header names and values, encoded once
_REQUEST_ID = REQUEST_ID_HEADER.lower().encode()
_NO_STORE = NO_STORE.encode()
_CONTENT_LANGUAGE = {lang: (b"content-language", tag.encode()) for lang, tag in CONTENT_LANGUAGE.items()}
_OPEN = re.compile("|".join(PUBLIC_PATHS))
_CHARGED = re.compile("|".join(PUBLIC_CHARGED_PATHS))
#: Litestar's ``opt`` key of a route handler that asks for no key
_EXCLUDE_FROM_AUTH = "exclude_from_auth"
_REFUSAL = "edge_refusal"  # scope["state"] key: what refused the request, for its answer
_NOT_MODIFIED = "edge_not_modified"  # scope["state"] key: the ETag of a 304 the edge answers


@dataclass(frozen=True, slots=True)
class RouteRules:
    """What the edge needs of a route handler at a path template, read once (``RouteRules.of``)."""

    #: ``opt["scope"]``: the scope a key needs (None: a route reached with a key is refused)
    required_scope: str | None
    #: ``opt["cost"]``: the request's cost in units, from its body (None: one unit)
    cost: Cost | None
    #: the rate limits count it (not ``opt["skip_rate_limit"]``)
    counted: bool
    #: open to everyone (``PUBLIC_PATHS``): no key asked, the address charged only where ``charged``
    open: bool
    #: an open path charged to the client address (``PUBLIC_CHARGED_PATHS``: readiness)
    charged: bool
    #: a key is asked (neither open nor ``opt["exclude_from_auth"]``)
    asks_key: bool
    #: a catalog read answered 304 where ``If-None-Match`` names an ETag it answered 200
    #: (``app.web.caching.conditional_get_middleware`` among its middleware)
    conditional: bool
    #: how the route answers an exception, and encodes what it answers (Litestar's, resolved)
    exception_handlers: ExceptionHandlersMap
    type_encoders: TypeEncodersMap | None

    @classmethod
    def of(cls, handler: BaseRouteHandler, template: str) -> RouteRules:
        opt = handler.opt
        is_open = bool(_OPEN.search(template))
        return cls(
            required_scope=route_scope(handler),
            cost=opt.get(COST_OPT),
            counted=not opt.get(SKIP_OPT),
            open=is_open,
            charged=bool(_CHARGED.search(template)),
            asks_key=not is_open and not opt.get(_EXCLUDE_FROM_AUTH),
            conditional=conditional_get_middleware in handler.resolve_middleware(),
            exception_handlers=handler.resolve_exception_handlers(),
            type_encoders=handler.resolve_type_encoders(),
        )


def exception_handler(handlers: ExceptionHandlersMap, exc: Exception) -> ExceptionHandler[Exception]:
    """The handler Litestar would choose for ``exc``: by status code first, then by the exception's
    classes (the app maps ``Exception`` itself: ``app.web.problems``)."""
    if isinstance(exc, HTTPException) and (by_status := handlers.get(exc.status_code)) is not None:
        return by_status
    return next(handlers[kind] for kind in type(exc).__mro__ if kind in handlers)


class Edge:
    """The one pass in front of every handler (module docstring), around ``app``'s ASGI handler."""

    def __init__(
        self,
        app: Litestar,
        *,
        knowledge_version: Callable[[], str | None],
        knowledge_source: Callable[[], str | None],
        verifier: KeyVerifier,
        usage: KeyUsage | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.app: ASGIApp = app.asgi_handler
        self.router = app.asgi_router
        #: the knowledge version being served, for the access log
        self.knowledge_version = knowledge_version
        #: ``X-Knowledge-Source``'s value while answers come from the last snapshot (None: from the database)
        self.knowledge_source = knowledge_source
        self.verifier, self.usage, self.limiter = verifier, usage, limiter
        self.metrics = metrics.request_metrics()
        #: the rules of each route handler at each path template, read at its first request
        self.rules: dict[tuple[BaseRouteHandler, str], RouteRules] = {}
        self.cors = app.cors_config is not None
        self.refusals = _answer_layers(app, self._answer_refusal)
        self.not_modified = _answer_layers(app, self._answer_not_modified)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        token = CURRENT_REQUEST_ID.set(request_id(scope))
        started = time.perf_counter()
        status: int | None = None
        finished: float | None = None

        async def edge_send(message: Message) -> None:
            nonlocal status, finished
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = self.headers(scope, status, message.get("headers") or ())
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = time.perf_counter()
            await send(message)

        try:
            answer = await self.answer_of(scope)
            await answer(scope, receive, edge_send)
        finally:
            seconds = (finished or time.perf_counter()) - started
            self.metrics.finished(scope, status, seconds)
            log_request(scope, status, seconds, self.knowledge_version())
            CURRENT_REQUEST_ID.reset(token)

    async def answer_of(self, scope: HTTPScope) -> ASGIApp:
        """Who answers the request: the application (its router and route), or the edge itself — a
        refusal, its reason kept in the scope, or a catalog read's 304 (``app.web.caching``). A request
        no route answers (404, 405, a bad ``Host``) and a CORS preflight go to the application: the router
        and the CORS layer answer them, as before any key."""
        path = scope["path"]
        if root_path := scope.get("root_path", ""):
            path = path.split(root_path, maxsplit=1)[-1]
        host = next((value for name, value in scope["headers"] if name == b"host"), None)
        if (host is not None and not is_valid_host(host)) or (
            self.cors and scope["method"] == "OPTIONS" and any(name == b"origin" for name, _ in scope["headers"])
        ):
            return self.app
        try:
            _, handler, path, params, template = self.router.handle_routing(
                path=normalize_path(path), method=scope["method"]
            )
        except Exception:  # the router's 404 or 405, answered when it routes the request itself
            return self.app
        rules = self.rules.get((handler, template))
        if rules is None:
            rules = self.rules[handler, template] = RouteRules.of(handler, template)
        try:
            await self.admit(scope, rules)
        except Exception as exc:  # answered as the route would have answered it, from where the router leaves it
            _routed(scope, handler, path, params, template)
            scope["state"][_REFUSAL] = (exc, rules)
            return self.refusals
        if rules.conditional and (etag := known_not_modified(scope, path)) is not None:
            _routed(scope, handler, path, params, template)
            self.metrics.started(scope)
            scope["state"][_NOT_MODIFIED] = etag
            return self.not_modified
        return self.app

    async def admit(self, scope: HTTPScope, rules: RouteRules) -> None:
        """The request's checks, in order; raises what refuses it. The address is charged before the key
        is looked up (a flood never reaches the database); a known key refused by its lookup is a guess."""
        limiter = self.limiter if rules.counted else None
        standing = Standing.VERIFIED
        if limiter is not None and (not rules.open or rules.charged):
            standing = await limiter.standing_of(scope)
            if rules.open or standing is not Standing.VERIFIED:
                await limiter.charge_address(scope, standing)
        if not rules.asks_key or scope["method"] == "OPTIONS":
            return
        try:
            principal = await authenticate(scope, self.verifier)
        except NotAuthorizedException:
            if limiter is not None and standing is Standing.KNOWN:
                await limiter.charge_guess(scope)
            raise
        if self.usage is not None:
            self.usage.touch(principal.id)
        scope["user"], scope["auth"] = principal, principal.id
        require_scope(principal, rules.required_scope)
        if limiter is None:
            return
        if scope["method"] in BODY_METHODS:
            defer_body_charge(scope, rules.cost)
        else:
            await limiter.charge_key(scope, request_cost(rules.cost, scope["method"], None))

    async def _answer_refusal(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A refused request's answer, by its route's exception handlers, as Litestar answers an
        exception raised in front of the handler."""
        exc, rules = scope["state"].pop(_REFUSAL)
        app = scope["litestar_app"]
        for hook in app.after_exception:
            await hook(exc, scope)
        request = app.request_class(scope=scope, receive=receive, send=send)
        response = exception_handler(rules.exception_handlers, exc)(request, exc)
        await response.to_asgi_response(app=None, request=request, type_encoders=rules.type_encoders)(
            scope, receive, send
        )

    async def _answer_not_modified(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A catalog read's 304, for an ETag this worker answered 200 (``app.web.caching``)."""
        await answer_not_modified(scope, scope["state"].pop(_NOT_MODIFIED), send)

    def headers(self, scope: Scope, status: int, given: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """The answer's headers and the edge's, in one list: the edge's replace those of the same name,
        except ``Cache-Control``, which the edge only adds where the handler set none."""
        path = scope["path"]
        added: list[tuple[bytes, bytes]] = [(_REQUEST_ID, request_id(scope).encode("latin-1"))]
        added += security_headers(path)
        added.append(_CONTENT_LANGUAGE[language(scope)])
        charge = charge_of(scope)
        if charge is not None:
            added += charge.raw_headers()
        if status < 400 and path.startswith("/v1/") and (source := self.knowledge_source()) is not None:
            added.append((_SOURCE, source.encode("latin-1")))
        names = {name for name, _ in added}
        kept: list[tuple[bytes, bytes]] = []
        caching_said = False
        for name, value in given:
            lowered = name.lower()
            if lowered in names:
                continue
            caching_said = caching_said or lowered == _CACHE_CONTROL
            kept.append((name, value))
        if not caching_said and not path.startswith("/docs"):
            kept.append((_CACHE_CONTROL, _NO_STORE))
        kept += added
        return kept


def _routed(scope: HTTPScope, handler: RouteHandlerType, path: str, params: dict[str, Any], template: str) -> None:
    """The scope as Litestar's router leaves it for the route (its handler, path, parameters, template)."""
    scope["path"], scope["path_params"] = path, params
    scope["route_handler"], scope["path_template"] = handler, template


def _answer_layers(app: Litestar, answer: ASGIApp) -> ASGIApp:
    """``answer`` behind the layers Litestar puts around its router (``Litestar._create_asgi_handler``):
    CORS when configured, the request span when tracing is on (named after the route, as
    ``app.web.tracing.name_request_span`` names it for every routed request)."""
    layers = answer
    try:
        traced: OpenTelemetryPlugin | None = app.plugins.get(OpenTelemetryPlugin)
    except KeyError:
        traced = None
    if traced is not None:
        layers = tracing.name_request_span(layers)
    if app.cors_config is not None:
        layers = CORSMiddleware(app=layers, config=app.cors_config)
    if traced is not None:
        layers = traced.middleware(app=layers)
    return layers
