"""The request id: a sane ``X-Request-ID`` the client sent, else a new one; echoed on every answer
and named in every problem and log line about the request."""

from __future__ import annotations

import hashlib
import itertools
import os
from contextvars import ContextVar

from litestar.types import Scope

REQUEST_ID_HEADER = "x-request-id"
#: the id of the request being served in this task, for log lines (``app.web.logs``)
CURRENT_REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)


class _Ids:
    """New ids: 32 hex digits, a random half drawn once per process (again in a forked child) and a
    counter hashed with a key of the process's own (BLAKE2b, 8 bytes), so the ids are opaque: two of
    them say nothing of how many requests were served in between. Unique across workers and restarts
    as uuid4 would be, without a ``getrandom`` system call per request (about 30 µs on the service's
    virtual machines; the keyed hash costs under 1 µs)."""

    def __init__(self) -> None:
        self.reseed()
        os.register_at_fork(after_in_child=self.reseed)

    def reseed(self) -> None:
        self.prefix = os.urandom(8).hex()
        self._key = os.urandom(16)
        self.counter = itertools.count()

    def new(self) -> str:
        count = next(self.counter).to_bytes(16, "little")
        return self.prefix + hashlib.blake2b(count, digest_size=8, key=self._key).hexdigest()


_IDS = _Ids()


def request_id(scope: Scope) -> str:
    """The request's id, made once and kept in the scope's state."""
    state = scope.setdefault("state", {})
    rid = state.get("request_id")
    if isinstance(rid, str):
        return rid
    given = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"x-request-id"), "")
    # visible ASCII only: the id is echoed in a header and written in logs, where other bytes do not belong
    rid = given if 0 < len(given) <= 128 and given.isascii() and given.isprintable() else _IDS.new()
    state["request_id"] = rid
    return rid
