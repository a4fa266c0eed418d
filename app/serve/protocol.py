"""uvicorn's httptools protocol with the connection's bounds: the connection cap, the header-read and
body-read timeouts, the head's size, a bounded pipeline, problems for what cannot be parsed, and a
deadline for the requests in flight when the worker stops (docs/operations.md, "Connections").

uvicorn's own protocol hands everything that arrives to the parser at once and believes it: a 200 MB
header block is parsed and kept, 300,000 requests pipelined in one write become 300,000 request
objects, a connection that sends nothing (or a byte a minute) stays open for ever. Here the bytes go
to the parser :data:`~app.serve.connections.SLICE_BYTES` at a time, and between two slices the head's
size and the requests queued on the connection are checked: past ``MAX_HEADER_BYTES`` the answer is
``431``; past ``MAX_PIPELINED_REQUESTS`` what remains is kept unparsed and the connection is not read
until a request is answered. Everything else — the request cycle, keep-alive, flow control — is
uvicorn's.

A request whose body is too slow, or still in flight at the shutdown deadline, is *cut*: the next
time the application reads the body it gets a problem instead (``408``, ``503``), which it answers as
any other (with its request id and log line); if it has not answered within a grace, the problem is
written here and the connection closed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from app.serve.connections import (
    CUT_GRACE_SECONDS,
    LINGER_SECONDS,
    SHUTDOWN_GRACE_SECONDS,
    SLICE_BYTES,
    ConnectionBook,
    problem_answer,
)
from app.web.problems import ProblemException

if TYPE_CHECKING:
    from uvicorn._types import (
        ASGI3Application,
        ASGIReceiveCallable,
        ASGIReceiveEvent,
        ASGISendCallable,
        Scope,
    )
    from uvicorn.server import ServerState

#: (status, problem type slug, title) of each problem this module answers
REQUEST_TIMEOUT = (408, "request-timeout", "The request took too long to arrive")
URI_TOO_LONG = (414, "uri-too-long", "The request line is too long")
HEADERS_TOO_LARGE = (431, "headers-too-large", "The request headers are too large")
INVALID = (400, "invalid-request", "The request is invalid")
UNAVAILABLE = (503, "unavailable", "Service unavailable")


class _LineTooLong(Exception):
    """Raised by the parser's URL callback: the request line is over its limit."""


def book_of(config: Config) -> ConnectionBook:
    book = getattr(config, "connection_book", None)
    if not isinstance(book, ConnectionBook):
        raise TypeError("BoundedHttpToolsProtocol is served by `python -m app.serve` (app.serve.config.ServingConfig)")
    return book


class _Flow(FlowControl):
    """uvicorn's flow control, except that reading stays paused while the connection's pipeline is full
    (uvicorn resumes it whenever a request reads its body or is answered)."""

    def __init__(self, transport: asyncio.Transport, held: Callable[[], bool]) -> None:
        super().__init__(transport)
        self._held = held

    def resume_reading(self) -> None:
        if not self._held():
            super().resume_reading()


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """One client connection (module docstring)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.book = book_of(config)
        self.limits = self.book.limits
        #: bytes received and not yet parsed (the pipeline is full)
        self._pending = bytearray()
        self._feed_scheduled = False
        #: bytes of the current request head handed to the parser (a slice's worth short at most)
        self._head_bytes = 0
        self._in_body = False
        #: bytes of the current body still to come by its Content-Length (None: chunked, or no body)
        self._body_left: int | None = None
        self._url_bytes = 0
        #: part of a request head arrived while the connection waited (a timeout answers 408 then)
        self._partial = False
        #: a problem of this module's own was written: what the client still sends is dropped
        self._answered = False
        self._body_last = 0.0
        self._body_deadline = 0.0
        #: the request being answered (``self.cycle`` is the last one parsed, maybe queued behind it)
        self._running: RequestResponseCycle | None = None
        #: requests cut: the problem their next read of the body raises
        self._cuts: dict[RequestResponseCycle, Callable[[], Exception]] = {}

    # -- the connection ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if self.book.shutdown_started is not None or not self.book.has_room():
            self.transport = transport  # for connection_lost, which closes it
            self.book.count("cap-refused")
            status, slug, title = UNAVAILABLE
            detail = "the service has as many connections as it may hold: retry in a moment"
            transport.write(problem_answer(status, slug, title, detail, self._default_headers(), retry_after=1))
            transport.close()
            return
        super().connection_made(transport)
        self.flow = _Flow(transport, self._held)
        self.book.admit(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.book.release(self)
        super().connection_lost(exc)

    def _default_headers(self) -> list[tuple[bytes, bytes]]:
        return list(self.server_state.default_headers)

    def _held(self) -> bool:
        return len(self.pipeline) >= self.limits.max_pipelined

    # -- reading -------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._answered:
            return
        self._unset_keepalive_if_required()
        if self in self.book.waiting:
            self._partial = True
        if self._pending:
            self._pending += data
            self._feed_pending()
        else:
            self._feed(data)

    def _feed_pending(self) -> None:
        self._feed_scheduled = False
        if not self._pending or self.parser is None or self.transport.is_closing():
            return
        buffer, self._pending = self._pending, bytearray()
        self._feed(buffer)

    def _feed(self, data: bytes | bytearray) -> None:
        """Hand ``data`` to the parser a slice at a time, checking the head and the pipeline between two."""
        limits = self.limits
        with memoryview(data) as view:
            pos, end = 0, len(view)
            while pos < end:
                if self._held():
                    self._pending = bytearray(view[pos:])
                    self.flow.pause_reading()
                    return
                # a body with a length is handed over to its end at once (a slice of it would only
                # cost callbacks); a head, a chunked body and what follows a body, a slice at a time
                size = self._body_slice() if self._in_body else SLICE_BYTES
                with view[pos : pos + size] as piece:
                    if not self._in_body:
                        self._head_bytes += len(piece)
                    try:
                        self.parser.feed_data(piece)
                    except httptools.HttpParserCallbackError as exc:
                        if isinstance(exc.__context__, _LineTooLong):
                            detail = f"the request line is longer than {limits.max_line:,} bytes"
                            self._refuse(URI_TOO_LONG, detail, "line-too-long")
                        else:
                            self._refuse_malformed(exc.__context__ or exc)
                        return
                    except httptools.HttpParserUpgrade:
                        # no protocol to switch to (WebSocket is off): the request is answered as plain
                        # HTTP, and the connection ends with it
                        if self.cycle is not None:
                            self.cycle.keep_alive = False
                        self._answered = True
                        return
                    except httptools.HttpParserError as exc:
                        self._refuse_malformed(exc)
                        return
                pos += size
                if self.parser is None or self.transport.is_closing():
                    return
                if not self._in_body and self._head_bytes > limits.max_head:
                    detail = f"the request line and header fields are larger than {limits.max_head:,} bytes"
                    self._refuse(HEADERS_TOO_LARGE, detail, "head-too-large")
                    return

    def _body_slice(self) -> int:
        return max(self._body_left, 1) if self._body_left is not None else SLICE_BYTES

    def _refuse_malformed(self, exc: BaseException) -> None:
        self._refuse(INVALID, f"the request is not valid HTTP/1.1: {str(exc)[:120] or type(exc).__name__}", "malformed")

    def _refuse(self, problem: tuple[int, str, str], detail: str, reason: str) -> None:
        """Answer ``problem`` and close, or, with a request in flight (its answer under way on this
        connection), read nothing more and close after that answer."""
        self.book.count(reason)
        self._answered = True
        self._pending = bytearray()
        running = self._running
        if running is not None and not running.response_complete:
            running.keep_alive = False
            self.pipeline.clear()
            return
        self._answer(problem, detail)

    def _answer(self, problem: tuple[int, str, str], detail: str, retry_after: int | None = None) -> None:
        """Write a problem, end the writing side, drop what still comes for a while, then close."""
        status, slug, title = problem
        self._answered = True
        self.transport.write(
            problem_answer(status, slug, title, detail, self._default_headers(), retry_after=retry_after)
        )
        if self.transport.can_write_eof():
            self.transport.write_eof()
        FlowControl.resume_reading(self.flow)  # read and dropped: closing on unread bytes would reset
        self.book.close_at(self, LINGER_SECONDS)

    # -- the parser's callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._url_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._url_bytes += len(url)
        if self._url_bytes > self.limits.max_line:
            raise _LineTooLong
        super().on_url(url)

    def on_headers_complete(self) -> None:
        self._in_body = True
        length = next((value for name, value in self.headers if name == b"content-length"), b"")
        self._body_left = int(length) if length.isdigit() else None
        self._head_bytes = 0
        self.book.waiting.pop(self, None)
        super().on_headers_complete()
        now = time.monotonic()
        self._body_last, self._body_deadline = now, now + self.limits.body_deadline
        self.book.reading[self] = None

    def on_body(self, body: bytes) -> None:
        self._body_last = time.monotonic()
        if self._body_left is not None:
            self._body_left -= len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_body = False
        self.book.reading.pop(self, None)
        super().on_message_complete()

    # -- answering -----------------------------------------------------------------------------------

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
        self._running = cycle
        cuts = self._cuts

        async def guarded(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
            async def receive_or_cut() -> ASGIReceiveEvent:
                make = cuts.get(cycle)
                if make is None:
                    message = await receive()
                    make = cuts.get(cycle)
                    if make is None:
                        return message
                raise make()

            await app(scope, receive_or_cut, send)

        super()._start_asgi_task(cycle, guarded)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or self._answered:
            return
        if not self.pipeline:
            self._partial = False
            self.book.wait(self)
        self.flow.resume_reading()  # uvicorn's resume came before the queue moved on: again, now
        if self._pending and not self._held() and not self._feed_scheduled:
            self._feed_scheduled = True
            self.loop.call_soon(self._feed_pending)

    def _cut(self, cycle: RequestResponseCycle, make: Callable[[], Exception], grace: float) -> None:
        """The request's next read of its body raises ``make()``; the connection closes after its answer,
        or after ``grace`` seconds without one."""
        if cycle.response_complete:
            return
        cycle.keep_alive = False
        self._cuts[cycle] = make
        cycle.message_event.set()
        self.book.close_at(self, grace)

    # -- what the book asks ---------------------------------------------------------------------------

    def head_timed_out(self) -> None:
        self.book.count("header-timeout")
        if self._partial:
            detail = f"the request's headers did not arrive within {self.limits.header_timeout:g} s"
            self._answer(REQUEST_TIMEOUT, detail)
        else:
            self.close_now()

    def check_body(self, now: float, elapsed: float) -> None:
        cycle = self.cycle
        if cycle is None or cycle.response_complete:  # answered already: the header-read time runs instead
            self.book.reading.pop(self, None)
            return
        if self.pipeline or self.flow.read_paused:  # the server is not reading: the clocks stop
            self._body_last = now
            self._body_deadline += elapsed
            return
        limits = self.limits
        if now - self._body_last <= limits.body_timeout and now <= self._body_deadline:
            return
        self.book.count("body-timeout")
        if now - self._body_last > limits.body_timeout:
            detail = f"the request body paused for more than {limits.body_timeout:g} s"
        else:
            detail = f"the request body took more than {limits.body_deadline:g} s"

        def timed_out() -> Exception:
            status, slug, title = REQUEST_TIMEOUT
            return ProblemException(status, slug, title, detail, headers={"Connection": "close"})

        self._cut(cycle, timed_out, CUT_GRACE_SECONDS)

    def close_for_room(self) -> None:
        self.close_now()

    def close_now(self) -> None:
        """Close at once; a request cut and not answered by the application gets its problem from here."""
        self.book.release(self)
        cycle = self._running
        make = self._cuts.get(cycle) if cycle is not None else None
        if cycle is not None and make is not None and not cycle.response_started and not self.transport.is_closing():
            exc = make()
            if isinstance(exc, ProblemException):
                wait = (exc.headers or {}).get("Retry-After")
                answer = problem_answer(
                    exc.status_code,
                    exc.slug,
                    exc.title,
                    exc.detail,
                    self._default_headers(),
                    retry_after=int(wait) if wait else None,
                )
                self.transport.write(answer)
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # what the application still sends is dropped
            cycle.message_event.set()
        if not self.transport.is_closing():
            self.transport.close()

    def shutdown(self) -> None:
        """The worker is stopping (uvicorn calls this on every connection): one waiting for a request
        closes now, one with a request in flight closes after its answer, or at the deadline."""
        self.book.begin_shutdown()
        if self in self.book.waiting or self._answered:
            self.close_now()
            return
        super().shutdown()

    def deadline_reached(self) -> None:
        cycle = self._running
        if cycle is None or cycle.response_complete:
            self.close_now()
            return
        self.book.count("shutdown")
        self.book.cut_at_deadline += 1
        if cycle.response_started:  # the answer cannot change any more: cut short
            self.close_now()
            return

        def stopping() -> Exception:
            status, slug, title = UNAVAILABLE
            detail = "the service is stopping and this request did not finish in time: retry it"
            return ProblemException(status, slug, title, detail, headers={"Connection": "close", "Retry-After": "1"})

        self._cut(cycle, stopping, SHUTDOWN_GRACE_SECONDS)
