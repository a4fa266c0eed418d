"""Rate limits per API key (or client address), on Litestar's ``RateLimitMiddleware``.

The counters live in Redis when ``REDIS_URL`` is set, so every worker and replica draws on one
budget per key; otherwise in the process's memory, so each worker counts alone (the effective
limit is then the configured one times the number of workers). Health and documentation are never
limited. A Redis that does not answer lets requests through (logged) rather than failing them.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from litestar.exceptions import TooManyRequestsException
from litestar.middleware.rate_limit import (
    DURATION_VALUES,
    CacheObject,
    RateLimitConfig,
    RateLimitMiddleware,
)
from litestar.stores.memory import MemoryStore

from app.lib import metrics
from app.lib.public import PUBLIC_PATHS

if TYPE_CHECKING:
    from litestar import Litestar, Request
    from litestar.stores.base import Store
    from litestar.types import Receive, Scope, Send

    from app.settings import Settings

log = logging.getLogger(__name__)
API_KEY_HEADER = "x-api-key"
#: a route handler with ``opt={SKIP_OPT: True}`` is never counted
SKIP_OPT = "skip_rate_limit"


def request_identity(request: Request[Any, Any, Any]) -> str:
    """Whom a request counts against: a hash of its API key (never the key itself), else the client address."""
    key = request.headers.get(API_KEY_HEADER)
    if key:
        return "key:" + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return "addr:" + (request.client.host if request.client else "unknown")


class FailOpenRateLimitMiddleware(RateLimitMiddleware):
    """Litestar's middleware, except that a store that does not answer lets the request through."""

    _store_down = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except TooManyRequestsException:
            metrics.rate_limited()
            raise

    def _store_failed(self, exc: Exception) -> None:
        if not self._store_down:
            log.warning("rate-limit store unavailable, not limiting: %s: %s", type(exc).__name__, exc)
        self._store_down = True

    async def retrieve_cached_history(self, key: str, store: Store) -> CacheObject:
        try:
            found = await super().retrieve_cached_history(key, store)
        except Exception as exc:
            self._store_failed(exc)
            return CacheObject(history=[], reset=int(time.time()) + DURATION_VALUES[self.unit])
        if self._store_down:
            log.warning("rate-limit store answers again")
            self._store_down = False
        return found

    async def set_cached_history(self, key: str, cache_object: CacheObject, store: Store) -> None:
        try:
            await super().set_cached_history(key, cache_object, store)
        except Exception as exc:
            self._store_failed(exc)


@dataclass
class AppRateLimitConfig(RateLimitConfig):
    """A rate-limit config that carries its own store (memory or Redis) instead of looking it up by name."""

    own_store: Store = field(default_factory=MemoryStore)

    def get_store_from_app(self, app: Litestar) -> Store:
        return self.own_store

    @asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        """Close the Redis connections at shutdown."""
        try:
            yield
        finally:
            await self.own_store.__aexit__(None, None, None)


def rate_limit_config(settings: Settings) -> AppRateLimitConfig | None:
    """The configured limit, or ``None`` when ``RATE_LIMIT=off``."""
    if settings.rate_limit is None:
        return None
    store: Store
    if settings.redis_url:
        from litestar.stores.redis import RedisStore

        store = RedisStore.with_client(settings.redis_url, namespace=settings.rate_limit_namespace)
    else:
        store = MemoryStore()
    return AppRateLimitConfig(
        rate_limit=settings.rate_limit,
        exclude=PUBLIC_PATHS,
        exclude_opt_key=SKIP_OPT,
        identifier_for_request=request_identity,
        middleware_class=FailOpenRateLimitMiddleware,
        own_store=store,
    )


def retry_after(headers: dict[str, str]) -> str | None:
    """``Retry-After`` (whole seconds, at least 1) from the ``RateLimit-Reset`` Litestar puts on its 429."""
    reset = next((v for k, v in headers.items() if k.lower() == "ratelimit-reset"), None)
    if reset is None:
        return None
    try:
        return str(max(1, int(reset)))
    except ValueError:
        return "1"
