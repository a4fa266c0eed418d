"""Rate limits that count cost: each API key has a budget of cost units per window, and a request costs
the work it asks for (``app.domain.shared.costs``: one unit is about one profile's evaluation).

Charges, so that a flood never reaches the key lookup and a made-up key never gets a budget:

1. **Before authentication** (``app.web.edge``, ``RateLimiter.charge_address``): a request whose
   ``X-API-Key`` is not a key this worker has verified recently costs one unit of a budget of its
   **client address** — one of two:
   - **known keys** (``known:``): the key's SHA-256 is one of the active keys' (``app.web.known_keys``,
     refreshed every few seconds): a valid key's first requests on this worker;
   - **guesses** (``guess:``): anything else — no key, an empty, malformed, made-up or revoked one, or a
     key created since the last refresh. Over it: ``429``, and the key is not looked up. A known key
     whose lookup fails (revoked meanwhile) costs a unit of it too: a failed lookup is a guess.
   Guessing thus never spends what valid keys behind the same address (a NAT) need, while a flood of
   made-up keys stops at its own budget. Readiness (``PUBLIC_CHARGED_PATHS``) is charged the same way.
2. **After authentication**: the request's cost is charged to its **key**, identified by a hash of the
   normalised header (the string authentication verified, surrounding spaces removed; never the key
   itself) — by the edge itself when the request has no body to read (``RateLimiter.charge_key``), by
   the app's ``before_request`` when its cost is read from its body (``RateLimiter.charge_request``:
   the body Litestar decodes once, for the cost and the handler alike; ``defer_body_charge``).

The client address is the connection's peer, or — only when that peer is one of
``FORWARDED_ALLOW_IPS`` (none by default) — the right-most address of ``X-Forwarded-For`` that is not a
trusted proxy. An IPv6 address is budgeted by its /64 network (a host is usually given a whole /64:
rotating the last 64 bits would otherwise pick a fresh budget per request); IPv4 by the address.

Counters (``app.web.counters``) live in Redis when ``REDIS_URL`` is set (one budget across workers and
replicas; one atomic script per charge and per refund, and no counter without expiry), otherwise in the
process's memory (each worker counts alone; expired counters are swept once per window). Redis has
deadlines of a few milliseconds and a circuit (``SharedCounters``): a Redis that does not answer, or
refuses, is replaced by this process's counters — limits per worker rather than none — until it answers
again; its state is logged, exported (``compute_advisor_dependency_up{name="redis"}``) and shown in
``/health/ready``. Liveness and documentation are never limited.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import ipaddress
import math
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

from litestar.exceptions import ClientException, HTTPException, TooManyRequestsException

from app.settings import TrustedProxies
from app.web import metrics
from app.web.bodies import StrictJsonRequest
from app.web.counters import REDIS_FALLBACK, Counters, MemoryCounters, RedisCounters, SharedCounters
from app.web.dependencies import Circuit, Dependencies

if TYPE_CHECKING:
    from litestar import Request
    from litestar.types import Scope

    from app.settings import Settings

API_KEY_HEADER = b"x-api-key"
#: a route handler with ``opt={SKIP_OPT: True}`` is never counted
SKIP_OPT = "skip_rate_limit"
#: a route handler's ``opt[COST_OPT]``: ``cost(body) -> units`` of a request (default: 1 unit)
COST_OPT = "cost"
#: a refused body (400 while reading, 413) costs one unit per this many bytes
REFUSED_BYTES_PER_UNIT = 16_384
WINDOW_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_STATE = "rate_limit"  # scope["state"] key: the last charge, for the response's headers
_KEY_STATE = "api_key"  # scope["state"] key: the request's ``PresentedKey``, hashed once
_BODY_STATE = "rate_limit_body"  # scope["state"] key: the cost to charge from the body (``defer_body_charge``)
#: the methods whose cost is read from the body (``charge_request``); the others' cost is known without it
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: an IPv6 client is budgeted by this network (its /64)
IPV6_BUDGET_PREFIX = 64

Cost = Callable[[Any], int]


def normalised_key(value: str) -> str:
    """The API key as authentication reads the header: surrounding spaces removed."""
    return value.strip()


def key_digest(key: str) -> str:
    """The one hash of a (normalised) key: authentication's cache and the rate limits' counters; for a
    real key, the SHA-256 the database stores (``app.kb.keys.hash_key``)."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


class PresentedKey(NamedTuple):
    """The request's ``X-API-Key``, normalised (``""``: none), and its digest (``""`` without a key)."""

    key: str
    digest: str


def presented_key(scope: Scope) -> PresentedKey:
    """The request's key and its digest, computed once a request (the rate limits, authentication and
    readiness all ask) and kept in the scope's state."""
    state = scope.setdefault("state", {})
    found = state.get(_KEY_STATE)
    if isinstance(found, PresentedKey):
        return found
    raw = next((v for k, v in scope["headers"] if k == API_KEY_HEADER), b"")
    key = normalised_key(raw.decode("latin-1"))
    presented = PresentedKey(key, key_digest(key) if key else "")
    state[_KEY_STATE] = presented
    return presented


class Standing(Enum):
    """What this worker knows of a key without asking the database (``KeyVerifier.standing``)."""

    #: verified by this worker recently: charged to the key alone
    VERIFIED = "verified"
    #: its digest is an active key's: its first requests cost the address's known-keys budget
    KNOWN = "known"
    #: anything else (none, made up, revoked, or too new to be known): the address's guesses budget
    UNKNOWN = "unknown"


KeyStanding = Callable[[str], Awaitable[Standing]]


class Charge(NamedTuple):
    """One charge of a budget: allowed or not, and what its ``RateLimit-*`` headers say."""

    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int
    window_seconds: int

    def headers(self) -> dict[str, str]:
        return {name: value.decode() for name, (_, value) in zip(CHARGE_HEADERS, self.raw_headers(), strict=True)}

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """``headers`` as raw ASGI headers (named as ``CHARGE_HEADERS``, in lower case)."""
        return [
            *_budget_headers(self.limit, self.window_seconds),
            (_REMAINING, str(self.remaining).encode()),
            (_RESET, str(self.reset_seconds).encode()),
        ]


#: the headers of a charge (``Charge.headers``)
CHARGE_HEADERS = ("RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
_POLICY, _LIMIT, _REMAINING, _RESET = (name.lower().encode() for name in CHARGE_HEADERS)


@functools.cache
def _budget_headers(limit: int, window_seconds: int) -> tuple[tuple[bytes, bytes], ...]:
    """The headers of a budget, the same on every charge of it (encoded once)."""
    return (_POLICY, f"{limit}; w={window_seconds}".encode()), (_LIMIT, str(limit).encode())


def _trusted(address: str, proxies: TrustedProxies) -> bool:
    if proxies is None:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_address(scope: Scope, proxies: TrustedProxies) -> str:
    """The peer's address; behind trusted proxies, the right-most ``X-Forwarded-For`` hop that is not one
    (written in its normal form, so ``::1`` and ``0::1`` are one client). A hop that is not an address
    ends the search at the proxy that forwarded it: the client is that proxy (nobody rotates through
    made-up values)."""
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    if not _trusted(peer, proxies):
        return peer
    forwarded = ",".join(v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for")
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    nearest = peer
    for hop in reversed(hops):
        try:
            address = str(ipaddress.ip_address(hop))
        except ValueError:
            return nearest
        if not _trusted(address, proxies):
            return address
        nearest = address
    return nearest


def budget_address(address: str) -> str:
    """The part of a client address that has a budget: an IPv6 address's /64 network (an IPv4 address
    mapped into IPv6 is that IPv4 address), an IPv4 address itself; anything else as it is."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_BUDGET_PREFIX), strict=False))
    return str(ip)


class RateLimiter:
    """The budget (``RATE_LIMIT``: units per window), the counters, and the two charges."""

    def __init__(
        self,
        budget: int,
        window_seconds: int,
        counters: Counters,
        standing: KeyStanding,
        proxies: TrustedProxies,
    ) -> None:
        self.budget = budget
        self.window_seconds = window_seconds
        self.counters = counters
        self._standing = standing
        self.proxies = proxies

    async def charge(self, identity: str, units: int) -> Charge:
        """Add ``units`` to ``identity``'s window; refused (and refunded) when that goes over the budget."""
        used, reset = await self.counters.add(identity, units, self.window_seconds)
        allowed = used <= self.budget
        if not allowed:
            with contextlib.suppress(Exception):  # the add just worked; a failed refund only over-counts
                await self.counters.refund(identity, units)
            used -= units
        return Charge(allowed, self.budget, max(0, self.budget - used), reset, self.window_seconds)

    def _refuse(self, charge: Charge) -> TooManyRequestsException:
        metrics.rate_limited()
        return TooManyRequestsException(headers=charge.headers())

    # ---- 1. before authentication: what is not a verified key counts against the address ----------

    def address_identity(self, scope: Scope, standing: Standing) -> str:
        """The address budget a request is charged to: its known keys' or its guesses'."""
        budget = budget_address(client_address(scope, self.proxies))
        return ("known:" if standing is not Standing.UNKNOWN else "guess:") + budget

    async def standing_of(self, scope: Scope) -> Standing:
        """The standing of the request's key (``UNKNOWN`` without one)."""
        presented = presented_key(scope)
        return await self._standing(presented.digest) if presented.key else Standing.UNKNOWN

    async def charge_address(self, scope: Scope, standing: Standing) -> None:
        """One unit of the request's address budget (its known keys' or its guesses'): 429 over it."""
        charge = await self.charge(self.address_identity(scope, standing), 1)
        if not charge.allowed:
            raise self._refuse(charge)
        scope.setdefault("state", {})[_STATE] = charge

    async def charge_guess(self, scope: Scope) -> None:
        """A known key whose lookup refused it (revoked since): a guess after all, charged as one."""
        with contextlib.suppress(Exception):
            await self.charge(self.address_identity(scope, Standing.UNKNOWN), 1)

    # ---- 2. after authentication: the request's cost against its key --------------------------------

    async def charge_key(self, scope: Scope, units: int) -> None:
        """Charge the authenticated key ``units``: 422 when they exceed the whole budget, 429 over it."""
        if units > self.budget:
            raise HTTPException(
                status_code=422,
                detail=f"this request costs {units} units, more than the whole budget of {self.budget} per "
                f"{self.window_seconds} s (RATE_LIMIT): split it into smaller ones",
            )
        charge = await self.charge("key:" + presented_key(scope).digest[:32], units)
        if not charge.allowed:
            raise self._refuse(charge)
        scope.setdefault("state", {})[_STATE] = charge

    async def charge_request(self, request: Request[Any, Any, Any], cost: Cost | None) -> None:
        """Charge the authenticated key the cost of a request with a body: ``cost`` (its route's
        ``opt["cost"]``) of the decoded body; a refused body by its size."""
        refused: ClientException | None = None
        try:
            body = await _body_or_none(request)
        except ClientException as exc:  # a hostile or oversized body (app.web.bodies): charged by its size
            body, refused = None, exc
        units = (
            min(self.budget, refused_cost(_refused_size(request)))  # refused: its 400 or 413, never a 422
            if refused is not None
            else request_cost(cost, request.method, body)
        )
        await self.charge_key(request.scope, units)
        if refused is not None:
            raise refused

    async def close(self) -> None:
        await self.counters.close()


async def _body_or_none(request: Request[Any, Any, Any]) -> Any:
    if request.method not in ("POST", "PUT", "PATCH") or not await request.body():
        return None
    assert isinstance(request, StrictJsonRequest), "the app's request_class reads bodies (app.web.bodies)"
    return await request.json_value()  # a hostile body is a 400 here already; a cost reads the JSON value


def _refused_size(request: Request[Any, Any, Any]) -> int:
    """The bytes a refused body sent (when read) or announced (``Content-Length`` of a 413 never read)."""
    body = request._connection_state.body
    if isinstance(body, bytes):
        return len(body)
    return request.content_length or 0


def refused_cost(size: int) -> int:
    """Units a refused body costs: one per :data:`REFUSED_BYTES_PER_UNIT` bytes, at least one — a client
    sending megabytes the service refuses spends its budget as fast as one sending valid work."""
    return max(1, math.ceil(size / REFUSED_BYTES_PER_UNIT))


def request_cost(cost: Cost | None, method: str, body: Any) -> int:
    """Units a request costs: its handler's cost function applied to the (decoded, not yet validated)
    body; 1 when the handler declares none. A body the schema will refuse costs what it asks for or 1."""
    if cost is None:
        return 1
    try:
        return max(1, int(cost(body)))
    except Exception:  # a malformed body: validation will answer 400
        return 1


class BodyCharge(NamedTuple):
    """The key's charge a request still owes once its body is read (``RateLimiter.charge_request``)."""

    cost: Cost | None


def defer_body_charge(scope: Scope, cost: Cost | None) -> None:
    """The edge leaves the key's charge of a request with a body to the app's ``before_request``."""
    scope.setdefault("state", {})[_BODY_STATE] = BodyCharge(cost)


def body_charge(scope: Scope) -> BodyCharge | None:
    """The charge the edge left to ``before_request``, or None: charged already, or never charged."""
    found = scope.get("state", {}).get(_BODY_STATE)
    return found if isinstance(found, BodyCharge) else None


def charge_of(scope: Scope) -> Charge | None:
    """The request's last charge (its ``RateLimit-*`` headers go on the answer: ``app.web.edge``)."""
    charge = scope.get("state", {}).get(_STATE)
    return charge if isinstance(charge, Charge) else None


def rate_limiter(
    settings: Settings, standing: KeyStanding, dependencies: Dependencies | None = None
) -> RateLimiter | None:
    """The configured limiter, or ``None`` when ``RATE_LIMIT=off``; with ``REDIS_URL``, Redis's counters
    behind a circuit whose state ``dependencies`` follows (as ``redis``)."""
    if settings.rate_limit is None:
        return None
    unit, budget = settings.rate_limit
    counters: Counters = MemoryCounters()
    if settings.redis_url:
        dependencies = dependencies if dependencies is not None else Dependencies()
        dependencies.watch("redis", REDIS_FALLBACK)
        redis = RedisCounters(
            settings.redis_url,
            settings.rate_limit_namespace,
            connect_timeout=settings.redis_connect_timeout_ms / 1000,
            timeout=settings.redis_timeout_ms / 1000,
        )
        circuit = Circuit(
            "redis",
            dependencies,
            failures=settings.redis_circuit_failures,
            open_seconds=settings.redis_circuit_open_seconds,
        )
        counters = SharedCounters(redis, circuit)
    return RateLimiter(budget, WINDOW_SECONDS[unit], counters, standing, settings.forwarded_allow_ips)


def retry_after(headers: dict[str, str]) -> str | None:
    """``Retry-After`` (whole seconds, at least 1) from the ``RateLimit-Reset`` of a 429."""
    reset = next((v for k, v in headers.items() if k.lower() == "ratelimit-reset"), None)
    if reset is None:
        return None
    try:
        return str(max(1, int(reset)))
    except ValueError:
        return "1"
