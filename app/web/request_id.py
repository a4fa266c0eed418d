"""The request id: a sane ``X-Request-ID`` the client sent, else a new one; echoed on every answer
and named in every problem and log line about the request."""

from __future__ import annotations

import uuid
from contextvars import ContextVar

from litestar.types import Scope

REQUEST_ID_HEADER = "x-request-id"
#: the id of the request being served in this task, for log lines (``app.web.logs``)
CURRENT_REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)


def request_id(scope: Scope) -> str:
    """The request's id, made once and kept in the scope's state."""
    state = scope.setdefault("state", {})
    rid = state.get("request_id")
    if isinstance(rid, str):
        return rid
    given = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"x-request-id"), "")
    # visible ASCII only: the id is echoed in a header and written in logs, where other bytes do not belong
    rid = given if 0 < len(given) <= 128 and given.isascii() and given.isprintable() else uuid.uuid4().hex
    state["request_id"] = rid
    return rid
