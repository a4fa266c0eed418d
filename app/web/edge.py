"""The service's edge: one pass around the whole application for what every request shares.

One pure-ASGI layer, outermost (404s and 405s of the router, and the 401/403/429 that authentication
and the rate limit raise, pass through it like any answer), does in a single wrapper of ``send``:

- the **request id**: a sane ``X-Request-ID`` the client sent, else a new one, fixed before anything
  runs (``app.web.request_id``), set for the request's log lines and echoed on the answer;
- the **response headers** every answer carries, added in one pass over the answer's raw headers:
  the security headers (``app.web.security``), ``Cache-Control: private, no-store`` where the handler
  said nothing of caching (not on ``/docs``), ``Content-Language`` (``app.i18n``), the ``RateLimit-*``
  headers of the request's charge (``app.web.rate_limits``), and ``X-Knowledge-Source`` on successful
  ``/v1/`` answers while the service serves its last snapshot (``app.web.degraded``);
- the **request metrics**: count, duration and errors by route template, method and status
  (``app.web.metrics.RequestMetrics``; a request no route matched is not counted: its raw path would
  be a label anyone could multiply); the in-progress gauge is raised when the handler's route is known
  (``RequestMetrics.started``, from the app's ``before_request``) and lowered here;
- the **access log**: one line per request when it ends (``app.web.logs.log_request``).

Authentication and the rate limit stay Litestar middleware: they need the route's options (its
scope, its cost) and answer by raising, which Litestar's exception handling turns into problems.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from litestar.enums import ScopeType

from app.i18n import CONTENT_LANGUAGE, language
from app.web import metrics
from app.web.caching import NO_STORE
from app.web.degraded import KNOWLEDGE_SOURCE_HEADER
from app.web.logs import log_request
from app.web.rate_limits import charge_of
from app.web.request_id import CURRENT_REQUEST_ID, REQUEST_ID_HEADER, request_id
from app.web.security import security_headers

if TYPE_CHECKING:
    from litestar.types import ASGIApp, Message, Receive, Scope, Send

_CACHE_CONTROL = b"cache-control"
_SOURCE = KNOWLEDGE_SOURCE_HEADER.lower().encode()


class Edge:
    """The one pass in front of every handler (module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        knowledge_version: Callable[[], str | None],
        knowledge_source: Callable[[], str | None],
    ) -> None:
        self.app = app
        #: the knowledge version being served, for the access log
        self.knowledge_version = knowledge_version
        #: ``X-Knowledge-Source``'s value while answers come from the last snapshot (None: from the database)
        self.knowledge_source = knowledge_source
        self.metrics = metrics.request_metrics()

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
            await self.app(scope, receive, edge_send)
        finally:
            seconds = (finished or time.perf_counter()) - started
            self.metrics.finished(scope, status, seconds)
            log_request(scope, status, seconds, self.knowledge_version())
            CURRENT_REQUEST_ID.reset(token)

    def headers(self, scope: Scope, status: int, given: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """The answer's headers and the edge's, in one list: the edge's replace those of the same name,
        except ``Cache-Control``, which the edge only adds where the handler set none."""
        path = scope["path"]
        added: list[tuple[bytes, bytes]] = [(REQUEST_ID_HEADER.encode(), request_id(scope).encode("latin-1"))]
        added += security_headers(path)
        added.append((b"content-language", CONTENT_LANGUAGE[language(scope)].encode()))
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
            kept.append((_CACHE_CONTROL, NO_STORE.encode()))
        kept += added
        return kept
