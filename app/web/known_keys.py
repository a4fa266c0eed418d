"""The digests of the active API keys, held by each worker: what tells a valid key's first request from a
guess without asking the database about that key.

The database stores each key's SHA-256 (``app.kb.keys``); a worker reads the digests of the keys neither
revoked nor expired — one query for all of them, keys are few — when first asked, and again in the
background once the set is ``KNOWN_KEYS_REFRESH_SECONDS`` old; a successful key lookup adds its digest at
once, a failed one removes it. The rate limits charge a key whose digest is here to its address's
known-keys budget and any other to the address's guesses budget (``app.web.rate_limits``); readiness
shows its details to a key whose digest is here.

The trade-off: a key created since the last refresh is a guess until its first successful lookup or the
next refresh (``KNOWN_KEYS_REFRESH_SECONDS``); one revoked or expired since stays known as long, and its
lookup (which refuses it) removes it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

#: the set is read again, in the background, once it is this old
KNOWN_KEYS_REFRESH_SECONDS = 10.0
#: after a failed read, the next is tried no sooner than this
KNOWN_KEYS_RETRY_SECONDS = 1.0

#: the active keys' digests and when each expires (``None``: never)
ActiveKeys = dict[str, dt.datetime | None]
Load = Callable[[], Awaitable[ActiveKeys]]


class KnownKeys:
    """The active keys' digests, read by ``load`` (one query), kept fresh in the background."""

    def __init__(
        self,
        load: Load,
        refresh_seconds: float = KNOWN_KEYS_REFRESH_SECONDS,
        timeout: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self.refresh_seconds = refresh_seconds
        self.timeout = timeout
        self._clock = clock
        self._active: ActiveKeys = {}
        #: digests a lookup confirmed, and when: a read that started earlier does not drop them
        self._added: dict[str, float] = {}
        self._loaded_at: float | None = None
        self._tried_at = float("-inf")
        self._loading: asyncio.Future[None] | None = None
        self._failing = False

    @property
    def loaded(self) -> bool:
        return self._loaded_at is not None

    async def contains(self, digest: str) -> bool:
        """Whether ``digest`` is an active key's, neither revoked nor expired as far as this worker knows.
        Until the set was first read, this waits for that read (one for all callers, within ``timeout``);
        afterwards it never waits: a stale set is read again behind the answer."""
        now = self._clock()
        if self._loaded_at is None:
            if self._loading is None and now - self._tried_at >= KNOWN_KEYS_RETRY_SECONDS:
                self._start(now)
            if self._loading is not None:
                await asyncio.wait({self._loading}, timeout=self.timeout)  # not cancelled when it times out
        elif now - self._loaded_at >= self.refresh_seconds and self._loading is None:
            self._start(now)
        if digest not in self._active:
            return False
        expires_at = self._active[digest]
        return expires_at is None or expires_at > dt.datetime.now(dt.UTC)

    def add(self, digest: str, expires_at: dt.datetime | None) -> None:
        """A lookup found this key valid."""
        self._active[digest] = expires_at
        self._added[digest] = self._clock()

    def discard(self, digest: str) -> None:
        """A lookup found this key unknown or revoked."""
        self._active.pop(digest, None)
        self._added.pop(digest, None)

    def _start(self, now: float) -> None:
        self._tried_at = now
        self._loading = asyncio.ensure_future(self._read(now))
        self._loading.add_done_callback(self._done)

    async def _read(self, started: float) -> None:
        active = await asyncio.wait_for(self._load(), self.timeout)
        # what lookups confirmed while the read ran stays: the read may not have seen it yet
        kept = {d: self._active[d] for d, at in self._added.items() if at >= started and d in self._active}
        self._active = {**active, **kept}
        self._added = {d: at for d, at in self._added.items() if at >= started}
        self._loaded_at = started

    def _done(self, done: asyncio.Future[Any]) -> None:
        self._loading = None
        if done.cancelled():
            return
        exc = done.exception()
        if exc is not None and not self._failing:  # said once until a read succeeds again
            log.warning("the active API keys could not be read: %s: %s", type(exc).__name__, exc)
        self._failing = exc is not None
