"""Where a watch may send its events: ``WATCH_ALLOWED_HOSTS`` and the addresses never reached.

The list holds host names (``hooks.example.com``), IP addresses and networks (``10.20.0.0/16``) and ``*``
(any public host: an address that is globally routable). Empty — the default — no watch is accepted.

Whatever it says, a link-local address (169.254.0.0/16, fe80::/10) or a cloud metadata address
(169.254.169.254, fd00:ec2::254, ``metadata.google.internal``) is never reached unless that exact address is
listed (a network containing it is not enough). A URL is checked when the watch is made (its host by name,
resolved when only an address or ``*`` could allow it), and its resolved addresses again at each delivery:
``CheckedBackend`` resolves the host itself and connects only to an address that passes, so a name whose
DNS answer changed after the watch was made reaches no address the list refuses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import httpcore

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254"))
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata"})
#: seconds a name's resolution may take when a watch is made
RESOLVE_SECONDS = 5.0


class Refused(Exception):
    """The host may not be sent to; the message says why."""


def host_of(name: str) -> str:
    """A URL's host as compared: lower case, without a trailing dot or an IPv6 zone."""
    return name.strip().lower().rstrip(".").split("%", 1)[0]


def address(text: str) -> IPAddress | None:
    """``text`` as an IP address (an IPv4-mapped IPv6 address as its IPv4 one), or None for a name."""
    try:
        ip = ipaddress.ip_address(host_of(text))
    except ValueError:
        return None
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


@dataclasses.dataclass(frozen=True, slots=True)
class AllowList:
    """``WATCH_ALLOWED_HOSTS`` parsed: names, networks, the exact addresses among them, and ``*``."""

    names: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    exact: frozenset[IPAddress] = frozenset()
    public: bool = False

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """The setting's entries; a malformed network (``10.0.0.0/33``) or name is a ``ValueError``."""
        names: set[str] = set()
        networks: list[IPNetwork] = []
        public = False
        for raw in entries:
            entry = host_of(raw)
            if not entry:
                continue
            if entry == "*":
                public = True
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError as exc:
                if "/" in entry or ":" in entry or entry.replace(".", "").isdigit():
                    raise ValueError(f"WATCH_ALLOWED_HOSTS: {raw!r} is not an address or network ({exc})") from None
            if not all(c.isalnum() or c in "-._" for c in entry):
                raise ValueError(f"WATCH_ALLOWED_HOSTS: {raw!r} is not a host name, an address or a network (or *)")
            names.add(entry)
        exact = frozenset(n.network_address for n in networks if n.num_addresses == 1)
        return cls(frozenset(names), tuple(networks), exact, public)

    @property
    def empty(self) -> bool:
        return not (self.names or self.networks or self.public)

    def address_refusal(self, host: str, ip: IPAddress) -> str | None:
        """Why ``ip`` (an address ``host`` resolves to) may not be sent to, or None."""
        mapped = getattr(ip, "ipv4_mapped", None)
        ip = mapped if mapped is not None else ip
        if ip in self.exact:
            return None
        if ip in METADATA_ADDRESSES or any(ip in n for n in LINK_LOCAL if n.version == ip.version):
            return f"{ip} is a link-local or cloud metadata address (allowed only when WATCH_ALLOWED_HOSTS lists it)"
        if host in self.names and host not in METADATA_NAMES:
            return None
        if any(ip in n for n in self.networks if n.version == ip.version):
            return None
        if self.public and ip.is_global:
            return None
        what = f"{host} ({ip})" if address(host) is None else str(ip)
        return f"{what} is not in WATCH_ALLOWED_HOSTS"

    def name_refusal(self, host: str) -> str | None:
        """What the list says of a host before resolving it: why it is refused, or None when it may be
        (an address is decided here; a name may still need its addresses checked)."""
        if self.empty:
            return "no watch host is allowed: set WATCH_ALLOWED_HOSTS (host names, addresses, networks or *)"
        ip = address(host)
        if ip is not None:
            return self.address_refusal(host, ip)
        if host in METADATA_NAMES and not self.exact:
            return f"{host} is a cloud metadata host (allowed only when WATCH_ALLOWED_HOSTS lists its exact address)"
        return None

    async def check_new(self, host: str, port: int) -> None:
        """A new watch's host: refused (``Refused``) unless the list allows it by name, as an address, or
        by what the name resolves to now."""
        host = host_of(host)
        why = self.name_refusal(host)
        if why is not None:
            raise Refused(why)
        if address(host) is not None or (host in self.names and host not in METADATA_NAMES):
            return
        await self.allowed_addresses(host, port, timeout=RESOLVE_SECONDS)

    async def allowed_addresses(self, host: str, port: int, *, timeout: float | None) -> list[IPAddress]:
        """``host``'s addresses that may be sent to, in the resolver's order; ``Refused`` when none."""
        host = host_of(host)
        why = self.name_refusal(host)
        if why is not None:
            raise Refused(why)
        found = await resolve(host, port, timeout)
        allowed = [ip for ip in found if self.address_refusal(host, ip) is None]
        if not allowed:
            raise Refused(self.address_refusal(host, found[0]) or f"{host} has no address allowed")
        return allowed


async def resolve(host: str, port: int, timeout: float | None) -> list[IPAddress]:
    """The addresses ``host`` resolves to now (an address: itself), or ``Refused`` saying why none."""
    ip = address(host)
    if ip is not None:
        return [ip]
    try:
        async with asyncio.timeout(timeout):
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError) as exc:
        raise Refused(f"{host} does not resolve ({type(exc).__name__}: {exc})") from None
    found = [address(str(info[4][0])) for info in infos]
    unique = list(dict.fromkeys(ip for ip in found if ip is not None))
    if not unique:
        raise Refused(f"{host} does not resolve to an address")
    return unique


class CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to an address of the host that the allow-list passes
    (resolved at each connection; TLS still verifies the certificate against the URL's host name)."""

    def __init__(self, allow: AllowList, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.allow = allow
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        last: Exception | None = None
        for ip in await self.allow.allowed_addresses(host, port, timeout=timeout):
            try:
                return await self.inner.connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise Refused("deliveries go to TCP hosts only")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
