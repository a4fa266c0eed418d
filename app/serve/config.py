"""uvicorn's configuration, built from ``Settings``: the bounded protocol, the shutdown's deadlines, the
service's logging, and as many connections as the worker's file descriptors allow.

- ``ServingConfig`` is uvicorn's ``Config`` for ``app.asgi:create_app``: httptools with the bounds of
  ``app.serve.protocol``, no WebSocket (the service has no WebSocket route, and an upgraded connection
  would leave the bounds), no access log (``app.web.logs`` writes one line per request), proxy headers
  believed only from ``FORWARDED_ALLOW_IPS``, uvicorn's keep-alive timeout and graceful-shutdown timeout
  from the settings. It is pickled to each worker process, which builds its own book of connections
  when it loads the application.
- ``ServingLifespan``: the application's shutdown gets what is left of ``SHUTDOWN_TIMEOUT_SECONDS``
  (at least half a second), and from its start every log line is written where it is logged: the
  worker ends by re-raising SIGTERM, which runs no ``atexit`` hook and would lose lines still queued.
- ``descriptors_for``: a worker needs a descriptor per connection and
  :data:`~app.serve.connections.DESCRIPTOR_RESERVE` for itself. When the soft limit on open files is
  lower, it is raised as far as the hard limit allows; if that is not enough, the cap is lowered to
  what fits, and a warning says so. Connections past the cap are then refused by the service, never
  by the kernel (``EMFILE``, which stops the worker from accepting anything).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

from uvicorn.config import Config
from uvicorn.lifespan.on import LifespanOn

from app.serve.connections import DESCRIPTOR_RESERVE, ConnectionBook, Limits
from app.serve.protocol import BoundedHttpToolsProtocol
from app.settings import Settings
from app.web.logs import configure_logging, write_directly

log = logging.getLogger("app.serve")
APP = "app.asgi:create_app"


def forwarded_allow_ips(settings: Settings) -> list[str] | None:
    """``FORWARDED_ALLOW_IPS`` for uvicorn's proxy headers; None: no proxy is believed."""
    if settings.forwarded_allow_ips is None:
        return ["*"]
    return [str(network) for network in settings.forwarded_allow_ips] or None


class ServingConfig(Config):
    """uvicorn's ``Config`` for the service (module docstring)."""

    def __init__(self, settings: Settings, *, max_connections: int | None = None, **options: Any) -> None:
        self.settings = settings
        self.limits = Limits.of(settings, max_connections)
        self.connection_book: ConnectionBook | None = None
        trusted = forwarded_allow_ips(settings)
        super().__init__(
            APP,
            factory=True,
            http=BoundedHttpToolsProtocol,
            ws="none",
            lifespan="on",
            log_config=None,
            access_log=False,
            proxy_headers=trusted is not None,
            forwarded_allow_ips=trusted or [],
            timeout_keep_alive=max(1, round(settings.keep_alive_timeout_seconds)),
            timeout_graceful_shutdown=self.limits.graceful_seconds,
            **options,
        )

    def configure_logging(self) -> None:
        """uvicorn's levels (``--log-level``), then the service's handler and format (``LOG_FORMAT``),
        in the supervisor and in each worker before the application configures its own."""
        super().configure_logging()
        # warnings only until the application sets its level (LOG_LEVEL, else info): the libraries'
        # chatter while it is imported stays out, as it did under uvicorn's own logging; uvicorn's
        # lines (started, stopping) at --log-level, info by default
        configure_logging(self.settings, default_level="WARNING")
        if self.log_level is None:
            logging.getLogger("uvicorn.error").setLevel(logging.INFO)

    def load(self) -> None:
        super().load()
        self.lifespan_class = ServingLifespan
        self.connection_book = ConnectionBook(self.limits)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["connection_book"] = None  # the worker's own, made when it loads
        return state


class ServingLifespan(LifespanOn):
    """The application's lifespan, its shutdown within the worker's deadline (module docstring)."""

    async def shutdown(self) -> None:
        write_directly()
        config = self.config
        book = config.connection_book if isinstance(config, ServingConfig) else None
        limits = config.limits if isinstance(config, ServingConfig) else None
        now = time.monotonic()
        started = book.shutdown_started if book is not None and book.shutdown_started is not None else now
        budget = 5.0 if limits is None else max(0.5, started + limits.shutdown_timeout - 0.25 - now)
        try:
            async with asyncio.timeout(budget):
                await super().shutdown()
        except TimeoutError:
            log.error("the application's cleanup did not finish within %.1f s: the worker stops without it", budget)
        if book is not None:
            book.report()
        log.info(
            "worker stopping, %.1f s after its shutdown began; %d request(s) cut at the shutdown deadline",
            time.monotonic() - started,
            book.cut_at_deadline if book is not None else 0,
        )


def descriptors_for(max_connections: int) -> int:
    """The connection cap this process's descriptors allow, the soft limit raised first if need be."""
    needed = max_connections + DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (ValueError, OSError) as exc:
                log.warning("could not raise the limit on open files from %d to %d: %s", soft, raised, exc)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return max_connections
    fitting = max(1, soft - DESCRIPTOR_RESERVE)
    log.warning(
        "MAX_CONNECTIONS=%d needs %d open files per worker, and the limit is %d (hard %s): at most %d "
        "connections per worker. Raise the limit (systemd: LimitNOFILE=; a container: --ulimit nofile=)",
        max_connections,
        needed,
        soft,
        "unlimited" if hard == resource.RLIM_INFINITY else hard,
        fitting,
    )
    return fitting
