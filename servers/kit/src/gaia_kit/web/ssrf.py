"""The SSRF guard: which addresses outbound requests may reach, checked where the connection is made.

Loopback, private, link-local, multicast, unspecified, reserved and cloud-metadata addresses are
refused unless GAIA_HTTP_ALLOW lists the host or a network holding the address. The literal host is
checked, then every address DNS returns; the transport's network backend resolves the name once and
connects to an address from that same answer, so nothing resolves it again between check and
connect (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore
import httpx

from gaia_kit.core.errors import ToolFailure

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = {"metadata.google.internal", "metadata.goog", "metadata"}
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
}
NAT64 = ipaddress.ip_network("64:ff9b::/96")


def literal_ip(host: str) -> IPAddress | None:
    """The address a host names literally, including legacy IPv4 forms (2130706433, 0177.1, 0x7f.1)."""
    host = host.strip("[]").split("%")[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    # inet_aton accepts what C resolvers accept; a name such as "1e100.net" does not parse.
    if host[:1].isdigit() and all(c in "0123456789abcdefxABCDEFX." for c in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo, NAT64), which is what is reached."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped or ip.sixtofour:
        return ip.ipv4_mapped or ip.sixtofour
    if ip.teredo:
        return ip.teredo[1]
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal(ip: IPAddress) -> str | None:
    """Why the guard refuses this address ("a loopback address"), or None for a public one."""
    inner = _embedded_ipv4(ip)
    if inner is not None:
        return refusal(inner)
    checks = (
        (ip in METADATA_ADDRESSES, "a cloud metadata address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_unspecified, "the unspecified address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_private, "a private address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "a non-public address"),
    )
    return next((why for refused, why in checks if refused), None)


class AllowList:
    """GAIA_HTTP_ALLOW: host names (`*.` for subdomains), addresses and CIDRs."""

    def __init__(self, text: str):
        self.names: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in (part.strip().lower() for part in text.split(",")):
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self.names.add(entry.rstrip("."))

    def has_host(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(host_matches(host, name) for name in self.names)

    def has_ip(self, ip: IPAddress) -> bool:
        candidates = [ip, _embedded_ipv4(ip)]
        return any(
            c is not None and c.version == n.version and c in n for c in candidates for n in self.networks
        )


def _refused(host: str, what: str) -> ToolFailure:
    return ToolFailure(
        f"Refused to fetch from {host}: it is {what}, and only public addresses are fetched; "
        f"an operator can allow it by adding the host or its network to GAIA_HTTP_ALLOW."
    )


def check_literal(host: str, allow: AllowList) -> None:
    """The checks that need no DNS: metadata names and literal addresses."""
    name = host.lower().rstrip(".")
    if allow.has_host(name):
        return
    if name in METADATA_HOSTS:
        raise _refused(host, "a cloud metadata host")
    ip = literal_ip(name)
    if ip is not None and not allow.has_ip(ip) and (why := refusal(ip)):
        raise _refused(host, why)


async def resolve_checked(host: str, port: int, allow: AllowList) -> list[IPAddress]:
    """The addresses to connect to: every address the name resolves to must pass the guard."""
    check_literal(host, allow)
    ip = literal_ip(host)
    if ip is not None:
        return [ip]
    try:
        addresses = await _resolve(host, port)
    except (socket.gaierror, UnicodeError) as exc:
        raise ToolFailure(f"Cannot resolve the host {host} ({exc}); check the URL.") from None
    if not allow.has_host(host):
        for address in addresses:
            if not allow.has_ip(address) and (why := refusal(address)):
                raise _refused(host, f"resolving to {address}, {why}")
    return addresses


async def _resolve(host: str, port: int) -> list[IPAddress]:
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Opens connections only to addresses the guard has just checked, so DNS cannot change in between.

    The pool still keys connections by host name, and TLS verifies the certificate against it.
    """

    def __init__(self, allow: AllowList):
        self.allow = allow
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await resolve_checked(host, port, self.allow)
        for n, address in enumerate(addresses):
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout):
                if n == len(addresses) - 1:
                    raise
        raise AssertionError("unreachable")

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise ToolFailure("Unix sockets are not fetched.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport(allow: AllowList, verify: ssl.SSLContext) -> httpx.AsyncHTTPTransport:
    transport = httpx.AsyncHTTPTransport(verify=verify, trust_env=False)
    # httpx has no parameter for the network backend; its connection pool does, so give it one.
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=verify,
        max_connections=100,
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=GuardedBackend(allow),
    )
    return transport


def host_matches(host: str, pattern: str) -> bool:
    """`pattern` is a host name, or `*.example.org` for its subdomains (the form settings use)."""
    return host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:]))
