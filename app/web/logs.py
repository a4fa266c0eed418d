"""Logging for the service and the CLI: one configuration, for people (``console``) or collectors (``json``).

The standard library's ``logging`` with two formatters of our own (``app.web.log_lines``), not
structlog: every module here, uvicorn, SQLAlchemy, Alembic and Litestar already log through
``logging.getLogger``, so one handler on the root logger formats all of their lines alike, with no
bridge between two logging systems and no new dependency. ``configure_logging`` is called by
``app.asgi.create_app`` and by the CLI when a command starts (``app.cli.common.pass_settings``); both
read ``LOG_FORMAT`` and ``LOG_LEVEL``.

- Every line logged while a request is served carries its request id (a context variable set by
  ``app.web.edge``, read by ``RequestContextFilter``), whichever logger wrote it.
- Each request ends with one line of its own (logger ``app.request``): method, route template and
  path, status, duration, the API key's *name* (never the key), the knowledge version being served,
  the client address and, when tracing is on, the trace id. It replaces uvicorn's access log, which
  is switched off.
- In the serving worker the lines are formatted and written by a thread of their own
  (``configure_logging(queued=True)``): a request only queues its record — and of its own line, where
  that handler alone would take it, only the line's fields (``RequestLine``), which the thread writes as
  the record would have been written. Once the worker begins to stop (``write_directly()``, called by
  ``app.serve`` when the application's shutdown starts), every line is written where it is logged,
  after those queued before it: the last lines of a worker that ends by its re-raised SIGTERM — which
  runs no ``atexit`` hook — are written too.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, TextIO

from app.web.log_lines import REQUEST_LOGGER, ConsoleFormatter, JsonFormatter, RequestLine
from app.web.request_id import CURRENT_REQUEST_ID

if TYPE_CHECKING:
    from litestar.types import HTTPScope

    from app.settings import Settings

HANDLER_NAME = "compute-advisor"
#: how often the serving worker's log thread writes what was logged since (``configure_logging(queued=True)``)
WRITE_INTERVAL_SECONDS = 0.05
#: the most lines waiting for that thread: past it (a stream that does not take them), new lines are
#: counted and dropped, and the count is written once the stream takes lines again
MAX_QUEUED = 100_000

log = logging.getLogger(REQUEST_LOGGER)


class RequestContextFilter(logging.Filter):
    """Put the current request's id on every record logged while it is served."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = CURRENT_REQUEST_ID.get()
        return True


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


class _QueuedStderrHandler(_StderrHandler):
    """The serving worker's handler: a record is queued where it is logged (its request id already on
    it, its message merged with its arguments) and formatted and written by one thread of its own, which
    wakes every :data:`WRITE_INTERVAL_SECONDS` and writes every line queued since in one ``write``. A
    request pays for the record and an append, not for formatting it, the write, or waking a thread.
    ``flush()`` returns once every line queued before it is written (the app's shutdown and the
    interpreter's exit call it). After ``write_directly()`` the thread is not waited for: each line
    is written at once by whoever logs it, after every line queued before it."""

    def __init__(self) -> None:
        super().__init__()
        #: records (and request lines) to write; an Event is set once what came before it is written; None
        #: ends the thread
        self.queued: collections.deque[logging.LogRecord | RequestLine | threading.Event | None] = collections.deque()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.started = threading.Lock()
        #: held while queued lines are formatted and written (the thread, or a direct writer)
        self.writing = threading.Lock()
        #: lines are written where they are logged (``write_directly``)
        self.direct = False
        #: the thread's end was taken from the queue (by the thread, or by a direct writer)
        self.ended = False
        self.dropped = 0
        atexit.register(self.flush)
        _QUEUED_HANDLERS.add(self)

    def emit(self, record: logging.LogRecord) -> None:
        if record.args:  # merged now: an argument may change once the caller goes on
            record.msg, record.args = record.getMessage(), None
        self.take(record)

    def take(self, item: logging.LogRecord | RequestLine) -> None:
        """Queue a record, or a request line this handler alone takes (``log_request``)."""
        if self.direct:
            self.queued.append(item)
            self._drain()
            return
        if self.thread is None:
            self._start()
        if len(self.queued) >= MAX_QUEUED:
            self.dropped += 1
            return
        self.queued.append(item)

    def _forked(self) -> None:
        """In a forked child the parent's thread is gone: the next line starts one of the child's own;
        the lines queued before the fork are the parent's to write, not written twice."""
        self.queued = collections.deque()
        self.wake = threading.Event()
        self.thread = None
        self.started = threading.Lock()
        self.writing = threading.Lock()
        self.direct = False
        self.ended = False
        self.dropped = 0

    def _start(self) -> None:
        with self.started:
            if self.thread is None:
                self.thread = threading.Thread(target=self._write_queued, name="log-writer", daemon=True)
                self.thread.start()

    def _write_queued(self) -> None:
        while True:
            self.wake.wait(WRITE_INTERVAL_SECONDS)
            self.wake.clear()
            if self._drain() or self.ended:
                return

    def _drain(self) -> bool:
        """Write every line queued, in order; True once the thread's end (None) was taken."""
        with self.writing:
            lines: list[str] = []
            while self.queued:
                item = self.queued.popleft()
                if item is None:
                    self._write(lines)
                    self.ended = True
                    return True
                if isinstance(item, threading.Event):
                    self._write(lines)
                    lines = []
                    item.set()
                    continue
                try:
                    lines.append(self._formatted(item) + self.terminator)
                except Exception:  # logging's own rule: a bad record never stops the others
                    self.handleError(item.record() if isinstance(item, RequestLine) else item)
            if self.dropped:
                dropped, self.dropped = self.dropped, 0
                lines.append(f"{dropped} log lines dropped: the log stream did not take them{self.terminator}")
            self._write(lines)
            return False

    def _formatted(self, item: logging.LogRecord | RequestLine) -> str:
        """A record formatted; a queued request line by a formatter of ours, else as its record."""
        if not isinstance(item, RequestLine):
            return self.format(item)
        formatter = self.formatter
        if isinstance(formatter, JsonFormatter | ConsoleFormatter):
            return formatter.request_line(item)
        return self.format(item.record())

    def sole_taker(self) -> bool:
        """Whether a request's line, once its level passes, would reach this handler alone and be queued
        as its record would: the request logger and its ancestors have no other handler and no filter,
        and this handler's only filter is ours (``log_request``)."""
        if self.direct or len(self.filters) != 1 or type(self.filters[0]) is not RequestContextFilter:
            return False
        logger: logging.Logger | None = log
        while logger is not None:
            if logger.filters or logger.disabled:
                return False
            if logger.handlers:
                return logger.parent is None and logger.handlers == [self]
            if not logger.propagate:
                return False
            logger = logger.parent
        return False

    def write_directly(self) -> None:
        """From now on each line is written where it is logged, after every line queued before it."""
        self.direct = True
        self._drain()

    def _write(self, lines: list[str]) -> None:
        if not lines:
            return
        try:
            stream = self.stream
            stream.write("".join(lines))
            stream.flush()
        except Exception:  # a closed or full stream loses these lines, never the worker
            pass

    def flush(self) -> None:
        if self.direct or self.thread is None or not self.thread.is_alive():
            self._drain()  # nothing queued unless the thread is gone (the interpreter ending)
            super().flush()
            return
        written = threading.Event()
        self.queued.append(written)
        self.wake.set()
        written.wait(timeout=5)

    def close(self) -> None:
        """Write what is queued and end the thread (the handler replaced, or the interpreter exiting)."""
        self.flush()
        atexit.unregister(self.flush)
        if self.thread is not None:
            self.queued.append(None)
            self.wake.set()
        super().close()


_QUEUED_HANDLERS: weakref.WeakSet[_QueuedStderrHandler] = weakref.WeakSet()
#: the serving worker's handler, while ``configure_logging(queued=True)``'s is installed
_serving: _QueuedStderrHandler | None = None


def _after_fork() -> None:
    for handler in _QUEUED_HANDLERS:
        handler._forked()


os.register_at_fork(after_in_child=_after_fork)


def configure_logging(settings: Settings, *, default_level: str = "INFO", queued: bool = False) -> None:
    """Install the one handler on the root logger (replacing an earlier one of ours, leaving others),
    in ``settings.log_format``, at ``settings.log_level`` (else ``default_level``); route uvicorn's
    loggers through it and switch its access log off. ``queued`` (the serving worker): lines are
    formatted and written by a thread of their own, off the request's path."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == HANDLER_NAME:
            root.removeHandler(handler)
            handler.close()
    global _serving
    handler = _QueuedStderrHandler() if queued else _StderrHandler()
    _serving = handler if isinstance(handler, _QueuedStderrHandler) else None
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if settings.log_format == "json" else ConsoleFormatter())
    handler.addFilter(RequestContextFilter())
    root.addHandler(handler)
    root.setLevel(settings.log_level or default_level)
    for name in ("uvicorn", "uvicorn.error"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # the request line below replaces it


def flush_logs() -> None:
    """Every line logged so far written (the queued handler's thread waited for)."""
    for handler in logging.getLogger().handlers:
        if handler.get_name() == HANDLER_NAME:
            handler.flush()


def write_directly() -> None:
    """Every line logged so far written, and each later line written where it is logged, not queued
    (the serving worker is stopping: see the module's docstring)."""
    for handler in logging.getLogger().handlers:
        if handler.get_name() == HANDLER_NAME and isinstance(handler, _QueuedStderrHandler):
            handler.write_directly()


def log_request(scope: HTTPScope, status: int | None, seconds: float, knowledge_version: str | None) -> None:
    """The request's own line (logger ``app.request``), written by ``app.web.edge`` when it ends."""
    level = logging.ERROR if status is None or status >= 500 else logging.INFO
    if not log.isEnabledFor(level):
        return
    user = scope.get("user")
    state = scope.get("state") or {}
    client = scope.get("client")
    fields = {
        "method": scope["method"],
        "route": scope.get("path_template") or None,
        "path": scope["path"],
        "status": status,
        "duration_ms": round(seconds * 1000, 3),
        "key": getattr(user, "name", None),  # the API key's name (app.web.auth.Principal), never the key
        "knowledge_version": knowledge_version,
        "client": client[0] if client else None,
    }
    if trace_id := state.get("trace_id"):
        fields["trace_id"] = trace_id
    message = f"{scope['method']} {scope['path']} {status if status is not None else '-'} {fields['duration_ms']} ms"
    # the serving worker's handler alone takes the line: queued as its fields, formatted by the writer thread
    # as its record would be, without the record (the request pays for a tuple and an append)
    handler = _serving
    if handler is not None and level >= handler.level and handler.sole_taker():
        handler.take(RequestLine(time.time(), level, message, CURRENT_REQUEST_ID.get(), fields))
        return
    # a record made here: the logger would otherwise search the stack for its caller on every request
    log.handle(log.makeRecord(log.name, level, __file__, 0, message, (), None, extra={"fields": fields}))
