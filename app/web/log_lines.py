"""What a log line says and how it reads: one JSON object a line for collectors, or a line for people
(``app.web.logs`` installs them). A request's own line may arrive as its fields alone (``RequestLine``):
it reads exactly as its record would."""

from __future__ import annotations

import logging
import math
import time
from typing import Any, NamedTuple

import msgspec

#: the logger of each request's own line (``app.web.logs.log_request``)
REQUEST_LOGGER = "app.request"
#: a request line's fields that its console message already shows
_IN_CONSOLE_MESSAGE = frozenset({"method", "path", "status", "duration_ms"})
_JSON = msgspec.json.Encoder(enc_hook=str)  # anything it cannot encode as itself, as its str()


#: the last whole second a line's time was written for, and its RFC 3339 text (``_time``)
_second: tuple[float, str] = (math.nan, "")


def _time(created: float) -> str:
    """``created`` in RFC 3339, UTC, to the millisecond: as ``datetime.fromtimestamp(created, UTC)
    .isoformat(timespec="milliseconds")`` writes it (microseconds rounded half to even, then cut to
    milliseconds), with the whole second's text made once per second — lines come many a second."""
    global _second
    fraction, whole = math.modf(created)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    second = _second
    if second[0] != whole:
        second = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{second[1]}.{micros // 1000:03d}Z"


def _fields(said: Any) -> dict[str, Any]:
    """The ``fields`` of a record (or of a queued request line): ``{}`` where it has none."""
    found = getattr(said, "fields", None)
    return found if isinstance(found, dict) else {}


class RequestLine(NamedTuple):
    """A request's own line as the serving worker queues it when its handler alone takes the line
    (``log_request``): what its record would carry, formatted by the writer thread without a record."""

    created: float
    levelno: int
    message: str
    request_id: str | None
    fields: dict[str, Any]

    def record(self) -> logging.LogRecord:
        """The record the line would have been, for a formatter that formats records only."""
        record = logging.makeLogRecord({"name": REQUEST_LOGGER, "levelno": self.levelno, "msg": self.message})
        record.levelname = logging.getLevelName(self.levelno)
        record.created, record.request_id, record.fields = self.created, self.request_id, self.fields
        return record


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``message``,
    ``request_id`` (within a request), the record's ``fields`` and ``exception`` (a traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = self._doc(record.created, record.levelname, record.name, record.getMessage(), record)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        elif record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        return _JSON.encode(doc).decode()

    def request_line(self, line: RequestLine) -> str:
        """A queued request line, as ``format`` writes its record."""
        doc = self._doc(line.created, logging.getLevelName(line.levelno), REQUEST_LOGGER, line.message, line)
        return _JSON.encode(doc).decode()

    @staticmethod
    def _doc(created: float, level: str, name: str, message: str, said: Any) -> dict[str, Any]:
        """The line's object; ``said``: the record or queued line its request id and fields are read from."""
        doc: dict[str, Any] = {"time": _time(created), "level": level.lower(), "logger": name, "message": message}
        if (rid := getattr(said, "request_id", None)) is not None:
            doc["request_id"] = rid
        doc.update(_fields(said))
        return doc


class ConsoleFormatter(logging.Formatter):
    """``time LEVEL logger [request id] message key=value …`` and the traceback, if any, below."""

    def format(self, record: logging.LogRecord) -> str:
        line = self._line(record.created, record.levelname, record.name, record.getMessage(), record)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line

    def request_line(self, line: RequestLine) -> str:
        """A queued request line, as ``format`` writes its record."""
        return self._line(line.created, logging.getLevelName(line.levelno), REQUEST_LOGGER, line.message, line)

    @staticmethod
    def _line(created: float, level: str, name: str, message: str, said: Any) -> str:
        rid = getattr(said, "request_id", None)
        extra = " ".join(f"{k}={v}" for k, v in _fields(said).items() if k not in _IN_CONSOLE_MESSAGE and v is not None)
        return (
            f"{_time(created)} {level:<7} {name}{f' [{rid}]' if rid else ''} {message}{f'  {extra}' if extra else ''}"
        )
