"""Settings, read from the environment when asked for — never at import time."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = f"sqlite:///{PROJECT_ROOT / 'compute-advisor.db'}"
DEFAULT_SEEDS_PATH = PROJECT_ROOT / "seeds"


def async_url(url: str) -> str:
    """Turn a plain ``sqlite:///…`` or ``postgresql://…`` URL into its async-driver form."""
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    for prefix in ("postgresql://", "postgres://", "postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url.removeprefix(prefix)
    return url


RateUnit = Literal["second", "minute", "hour", "day"]
DEFAULT_RATE_LIMIT = "10000/minute"
_RATE_UNITS: dict[str, RateUnit] = {
    "s": "second",
    "sec": "second",
    "second": "second",
    "m": "minute",
    "min": "minute",
    "minute": "minute",
    "h": "hour",
    "hour": "hour",
    "d": "day",
    "day": "day",
}


#: proxies whose ``X-Forwarded-For`` is believed; ``None``: every peer (``*``)
TrustedProxies = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None
#: none: a proxy is trusted only when configured (``make run``, for development, trusts 127.0.0.1) — a
#: default trusted address would let anything on the host pick a fresh rate-limit budget per request
DEFAULT_FORWARDED_ALLOW_IPS = ""


def parse_trusted_proxies(value: str) -> TrustedProxies:
    """``FORWARDED_ALLOW_IPS`` as uvicorn reads it: comma-separated addresses or networks, ``*`` for all."""
    items = [x.strip() for x in value.split(",") if x.strip()]
    if "*" in items:
        return None
    try:
        return tuple(ipaddress.ip_network(x, strict=False) for x in items)
    except ValueError as exc:
        raise ValueError(f"FORWARDED_ALLOW_IPS must list addresses or networks (or *): {exc}") from None


LogFormat = Literal["console", "json"]
SqliteSynchronous = Literal["FULL", "NORMAL"]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: trace exporters this installation provides (``OTEL_TRACES_EXPORTER``)
TRACE_EXPORTERS = ("otlp", "console")


def parse_bind(value: str) -> tuple[str, int]:
    """``"127.0.0.1:9464"``, ``":9464"`` (every address) or ``"[::1]:9464"`` -> (host, port)."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"METRICS_BIND must be HOST:PORT (or :PORT), not {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def parse_trace_exporters(env: dict[str, str]) -> tuple[str, ...]:
    """Which span exporters the standard OpenTelemetry variables ask for; none (tracing off) by default.

    ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn tracing off; ``OTEL_TRACES_EXPORTER``
    names exporters (``otlp``, ``console``); an OTLP endpoint alone (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) means ``otlp``.
    """
    if (env.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return ()
    named = [x.strip().lower() for x in (env.get("OTEL_TRACES_EXPORTER") or "").split(",") if x.strip()]
    if not named:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        return ("otlp",) if endpoint else ()
    if named == ["none"]:
        return ()
    unknown = [x for x in named if x not in TRACE_EXPORTERS]
    if unknown:
        raise ValueError(f"OTEL_TRACES_EXPORTER: unknown exporter {unknown[0]!r}; one of {', '.join(TRACE_EXPORTERS)}")
    return tuple(dict.fromkeys(named))


def parse_rate_limit(value: str) -> tuple[RateUnit, int] | None:
    """``"600/minute"`` -> ``("minute", 600)``; ``"off"`` (or ``none``, ``0``) -> ``None``: no limit."""
    text = value.strip().lower()
    if text in {"off", "none", "0", "false", "no"}:
        return None
    count, sep, unit = text.partition("/")
    unit = unit.strip()
    unit = unit if unit in _RATE_UNITS else unit.removesuffix("s")  # "minutes" is "minute"
    if not sep or not count.strip().isdigit() or int(count) < 1 or unit not in _RATE_UNITS:
        raise ValueError(f"RATE_LIMIT must be N/second, N/minute, N/hour, N/day or off, not {value!r}")
    return _RATE_UNITS[unit], int(count)


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    seeds_path: Path = DEFAULT_SEEDS_PATH
    #: seconds between two checks for a new knowledge version
    knowledge_refresh_seconds: float = 2.0
    #: freeze the objects alive after each snapshot load out of the cyclic collector's walks (app.kb.heap)
    gc_freeze: bool = True
    #: allocations of container objects between two collections of the cyclic collector's youngest
    #: generation (Python's default: 700; app.kb.heap.tune)
    gc_young_threshold: int = 10_000
    #: largest request body accepted, in bytes
    max_body_bytes: int = 4_194_304
    #: seconds a verified API key is trusted in-process before the database is asked again
    #: (revocation takes effect within this time in every worker; 0 = check every request)
    api_key_cache_seconds: float = 1.0
    debug: bool = False
    #: cost units per API key (or client address) and window; ``None`` disables rate limiting
    rate_limit: tuple[RateUnit, int] | None = parse_rate_limit(DEFAULT_RATE_LIMIT)
    #: peers whose ``X-Forwarded-For`` names the client (rate limits by address); ``None``: any peer
    forwarded_allow_ips: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None = parse_trusted_proxies(
        DEFAULT_FORWARDED_ALLOW_IPS
    )
    #: Redis holding the rate-limit counters for every worker; ``None``: each process counts alone
    redis_url: str | None = None
    #: prefix of the rate-limit keys in Redis (one per deployment sharing a Redis)
    rate_limit_namespace: str = "compute-advisor:rate-limit"
    #: Redis: connecting gives up after this long (ms)
    redis_connect_timeout_ms: int = 100
    #: Redis: one charge (a round trip) gives up after this long (ms); the request is then counted locally
    redis_timeout_ms: int = 50
    #: Redis failures in a row after which the circuit opens: no call to Redis, local counts only
    redis_circuit_failures: int = 3
    #: seconds the circuit stays open before one call tries Redis again
    redis_circuit_open_seconds: float = 5.0
    #: ``console`` (for people) or ``json`` (one object a line, for log collectors)
    log_format: LogFormat = "console"
    #: the service's log level; the CLI logs warnings and errors only unless ``LOG_LEVEL`` says otherwise
    log_level: str | None = None
    #: a second listener serving only ``/metrics``, without a key, for a private network
    metrics_bind: tuple[str, int] | None = None
    #: prometheus-client's multiprocess directory (several workers export one set of metrics)
    prometheus_multiproc_dir: Path | None = None
    #: span exporters (``otlp``, ``console``); empty: tracing off
    trace_exporters: tuple[str, ...] = ()
    #: threads computing CPU-heavy requests off the event loop (``app.web.offload``)
    worker_pool_size: int = 2
    #: heavy requests that may wait for a thread; one more is answered 503 with ``Retry-After``
    worker_pool_queue: int = 8
    #: one API key's heavy requests computing or waiting; one more is answered 429 with ``Retry-After``
    #: (``None``: half of ``worker_pool_size`` + ``worker_pool_queue``, at least 1)
    worker_pool_per_key: int | None = None
    #: origins a browser page may call the API from (CORS); empty: none
    cors_origins: tuple[str, ...] = ()
    #: SQLite's ``synchronous`` pragma: ``FULL`` (a commit survives a power loss) or ``NORMAL``
    sqlite_synchronous: SqliteSynchronous = "FULL"
    #: PostgreSQL sessions: a statement running longer is cancelled (ms; 0 = no limit)
    database_statement_timeout_ms: int = 30_000
    #: PostgreSQL sessions: waiting longer for a lock fails the statement (ms; 0 = no limit)
    database_lock_timeout_ms: int = 5_000
    #: seconds a request waits for a pooled database connection before it answers 503 (``Retry-After``)
    database_pool_timeout_seconds: float = 5.0
    #: stored recommendations waiting for the writer beyond which POST answers 503
    writer_queue_limit: int = 1024
    #: while a write failed for a full disk or a read-only database, seconds between two write probes
    #: (the ``Retry-After`` of those 503s); a successful write clears the state at once
    storage_probe_seconds: float = 15.0
    #: stored recommendations one API key may create per day (UTC); ``None``: no quota
    recommendation_daily_quota: int | None = None
    #: days a stored recommendation is kept by ``recommendations prune``; ``None``: kept forever
    recommendation_retention_days: int | None = None
    #: connections one serving worker holds open (``app.serve``); past it the longest-waiting connection
    #: with no request in flight is closed to make room, or, when every one is busy, the new one is
    #: answered 503 and closed
    max_connections: int = 768
    #: seconds from a connection's opening, or the end of its previous answer, until a request's headers
    #: are complete; then the connection is closed (408 when part of a request had arrived)
    header_read_timeout_seconds: float = 10.0
    #: seconds a request body may pause between two chunks; then 408 and the connection is closed
    body_read_timeout_seconds: float = 10.0
    #: seconds a whole request body may take from the end of its headers; then 408, connection closed
    body_read_deadline_seconds: float = 60.0
    #: longest request line (method, target, version) in bytes; a longer one is answered 414
    max_request_line_bytes: int = 8_192
    #: largest request head (request line and header fields) in bytes; a larger one is answered 431
    max_header_bytes: int = 32_768
    #: requests read ahead on one connection while an earlier one is answered; past it the connection
    #: is not read until one is answered
    max_pipelined_requests: int = 16
    #: seconds an idle keep-alive connection stays open after an answer (uvicorn's ``timeout_keep_alive``)
    keep_alive_timeout_seconds: float = 5.0
    #: seconds from SIGTERM to a worker's exit: requests in flight get all but the last
    #: ``min(5, half)`` of them, the application's cleanup the rest
    shutdown_timeout_seconds: float = 20.0
    #: hosts watch events may go to: names, addresses, networks, ``*`` (any public host); empty: no watch
    watch_allowed_hosts: tuple[str, ...] = ()
    #: seconds between two looks for watches to check and deliveries due (app.domain.procurement)
    watch_poll_seconds: float = 5.0
    #: seconds a delivery may take; seconds before each retry of a failed one (then it is ``failed``)
    watch_timeout_seconds: float = 10.0
    watch_retry_seconds: tuple[float, ...] = (1.0, 4.0, 16.0, 64.0, 256.0)

    @property
    def async_database_url(self) -> str:
        return async_url(self.database_url)

    @property
    def engine_options(self) -> dict[str, Any]:
        """Engine options that let the service notice a database going away (see "Health and degraded mode").

        SQLite keeps its pooled connections (opening one costs a thread); ``app.kb.db`` checks at each
        checkout that the file at the path is still the one the connection opened, so a file moved,
        deleted, unmounted or replaced is noticed at once. PostgreSQL: a connection attempt gives up
        after 5 s instead of asyncpg's 60 s, and a request waits at most ``DATABASE_POOL_TIMEOUT_SECONDS``
        for a pooled connection (then 503 with ``Retry-After``, ``app.web.degraded``), not SQLAlchemy's 30 s.
        """
        url = self.async_database_url
        if url.startswith("postgresql+asyncpg"):
            return {
                "connect_args": {"timeout": 5, "server_settings": self.postgres_session_settings},
                "pool_timeout": self.database_pool_timeout_seconds,
            }
        return {}

    @property
    def postgres_session_settings(self) -> dict[str, str]:
        """Set on every PostgreSQL session the service and the CLI open: no statement runs, and no lock
        is waited for, without end (a table lock would otherwise hang every stored recommendation)."""
        return {
            "statement_timeout": str(self.database_statement_timeout_ms),
            "lock_timeout": str(self.database_lock_timeout_ms),
        }

    @property
    def sqlite_path(self) -> Path | None:
        """The database file, for a ``sqlite:///`` URL on disk."""
        if not self.database_url.startswith("sqlite:///") or ":memory:" in self.database_url:
            return None
        return Path(self.database_url.removeprefix("sqlite:///"))

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            database_url=env.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
            seeds_path=Path(env.get("SEEDS_PATH") or DEFAULT_SEEDS_PATH),
            knowledge_refresh_seconds=float(env.get("KNOWLEDGE_REFRESH_SECONDS") or 2.0),
            gc_freeze=(env.get("GC_FREEZE") or "on").strip().lower() not in {"off", "0", "false", "no"},
            gc_young_threshold=_count(env, "GC_YOUNG_THRESHOLD", 10_000, minimum=100),
            max_body_bytes=int(env.get("MAX_BODY_BYTES") or 4_194_304),
            api_key_cache_seconds=float(env.get("API_KEY_CACHE_SECONDS") or 1.0),
            debug=(env.get("DEBUG") or "").lower() in {"1", "true", "yes"},
            rate_limit=parse_rate_limit(env.get("RATE_LIMIT") or DEFAULT_RATE_LIMIT),
            forwarded_allow_ips=parse_trusted_proxies(env.get("FORWARDED_ALLOW_IPS") or DEFAULT_FORWARDED_ALLOW_IPS),
            redis_url=env.get("REDIS_URL") or None,
            rate_limit_namespace=env.get("RATE_LIMIT_NAMESPACE") or "compute-advisor:rate-limit",
            redis_connect_timeout_ms=_count(env, "REDIS_CONNECT_TIMEOUT_MS", 100, minimum=1),
            redis_timeout_ms=_count(env, "REDIS_TIMEOUT_MS", 50, minimum=1),
            redis_circuit_failures=_count(env, "REDIS_CIRCUIT_FAILURES", 3, minimum=1),
            redis_circuit_open_seconds=_seconds(env, "REDIS_CIRCUIT_OPEN_SECONDS", 5.0),
            log_format=_log_format(env.get("LOG_FORMAT") or "console"),
            log_level=_log_level(env.get("LOG_LEVEL")),
            metrics_bind=parse_bind(env["METRICS_BIND"]) if env.get("METRICS_BIND") else None,
            prometheus_multiproc_dir=Path(d) if (d := env.get("PROMETHEUS_MULTIPROC_DIR")) else None,
            trace_exporters=parse_trace_exporters(env),
            worker_pool_size=_positive("WORKER_POOL_SIZE", env.get("WORKER_POOL_SIZE") or "2", minimum=1),
            worker_pool_queue=_positive("WORKER_POOL_QUEUE", env.get("WORKER_POOL_QUEUE") or "8", minimum=0),
            worker_pool_per_key=_count(env, "WORKER_POOL_PER_KEY", 0, minimum=1) or None,  # unset: the default
            cors_origins=tuple(o.strip() for o in (env.get("CORS_ORIGINS") or "").split(",") if o.strip()),
            sqlite_synchronous=_sqlite_synchronous(env.get("SQLITE_SYNCHRONOUS") or "FULL"),
            database_statement_timeout_ms=_count(env, "DATABASE_STATEMENT_TIMEOUT_MS", 30_000, minimum=0),
            database_lock_timeout_ms=_count(env, "DATABASE_LOCK_TIMEOUT_MS", 5_000, minimum=0),
            database_pool_timeout_seconds=_seconds(env, "DATABASE_POOL_TIMEOUT_SECONDS", 5.0),
            writer_queue_limit=_count(env, "WRITER_QUEUE_LIMIT", 1024, minimum=1),
            storage_probe_seconds=_seconds(env, "STORAGE_PROBE_SECONDS", 15.0),
            recommendation_daily_quota=_optional_count(env, "RECOMMENDATION_DAILY_QUOTA"),
            recommendation_retention_days=_optional_count(env, "RECOMMENDATION_RETENTION_DAYS"),
            max_connections=_count(env, "MAX_CONNECTIONS", 768, minimum=1),
            header_read_timeout_seconds=_seconds(env, "HEADER_READ_TIMEOUT_SECONDS", 10.0),
            body_read_timeout_seconds=_seconds(env, "BODY_READ_TIMEOUT_SECONDS", 10.0),
            body_read_deadline_seconds=_seconds(env, "BODY_READ_DEADLINE_SECONDS", 60.0),
            max_request_line_bytes=_count(env, "MAX_REQUEST_LINE_BYTES", 8_192, minimum=256),
            max_header_bytes=_header_bytes(env),
            max_pipelined_requests=_count(env, "MAX_PIPELINED_REQUESTS", 16, minimum=1),
            keep_alive_timeout_seconds=_seconds(env, "KEEP_ALIVE_TIMEOUT_SECONDS", 5.0),
            shutdown_timeout_seconds=_shutdown_seconds(env),
            watch_allowed_hosts=tuple(
                h.strip() for h in (env.get("WATCH_ALLOWED_HOSTS") or "").split(",") if h.strip()
            ),
            watch_poll_seconds=_seconds(env, "WATCH_POLL_SECONDS", 5.0),
            watch_timeout_seconds=_seconds(env, "WATCH_TIMEOUT_SECONDS", 10.0),
            watch_retry_seconds=_retries(env.get("WATCH_RETRY_SECONDS") or "1,4,16,64,256"),
        )


def _positive(name: str, value: str, minimum: int) -> int:
    if not value.strip().isdigit() or int(value) < minimum:
        raise ValueError(f"{name} must be an integer of at least {minimum}, not {value!r}")
    return int(value)


def _log_format(value: str) -> LogFormat:
    text = value.strip().lower()
    if text == "json":
        return "json"
    if text == "console":
        return "console"
    raise ValueError(f"LOG_FORMAT must be console or json, not {value!r}")


def _log_level(value: str | None) -> str | None:
    if not value:
        return None
    if value.strip().upper() not in LOG_LEVELS:
        raise ValueError(f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {value!r}")
    return value.strip().upper()


def _sqlite_synchronous(value: str) -> SqliteSynchronous:
    text = value.strip().upper()
    if text == "FULL":
        return "FULL"
    if text == "NORMAL":
        return "NORMAL"
    raise ValueError(f"SQLITE_SYNCHRONOUS must be FULL or NORMAL, not {value!r}")


def _count(env: dict[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, not {raw!r}")
    return int(raw)


def _seconds(env: dict[str, str], name: str, default: float) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 86_400:
        raise ValueError(f"{name} must be a number of seconds above 0, not {raw!r}")
    return value


def _optional_count(env: dict[str, str], name: str) -> int | None:
    """A positive whole number, or ``off`` (also unset, ``none``, ``0``): None."""
    raw = (env.get(name) or "").strip().lower()
    if raw in {"", "off", "none", "0"}:
        return None
    if not raw.isdigit():
        raise ValueError(f"{name} must be a whole number or off, not {raw!r}")
    return int(raw)


def _header_bytes(env: dict[str, str]) -> int:
    """``MAX_HEADER_BYTES``: at least 1 KiB, and room for the longest request line it contains."""
    value = _count(env, "MAX_HEADER_BYTES", 32_768, minimum=1_024)
    line = _count(env, "MAX_REQUEST_LINE_BYTES", 8_192, minimum=256)
    if value < line:
        raise ValueError(f"MAX_HEADER_BYTES ({value}) must be at least MAX_REQUEST_LINE_BYTES ({line})")
    return value


def _shutdown_seconds(env: dict[str, str]) -> float:
    """``SHUTDOWN_TIMEOUT_SECONDS``: at least 2 s (1 for the requests in flight, 1 for the cleanup)."""
    value = _seconds(env, "SHUTDOWN_TIMEOUT_SECONDS", 20.0)
    if value < 2:
        raise ValueError(f"SHUTDOWN_TIMEOUT_SECONDS must be at least 2, not {value}")
    return value


def _retries(value: str) -> tuple[float, ...]:
    """``WATCH_RETRY_SECONDS``: comma-separated seconds, each above 0 (one retry after each)."""
    try:
        found = tuple(float(x) for x in value.split(",") if x.strip())
    except ValueError:
        found = ()
    if not found or not all(0 < x < 86_400 for x in found):
        raise ValueError(f"WATCH_RETRY_SECONDS must be seconds above 0, comma-separated, not {value!r}")
    return found
