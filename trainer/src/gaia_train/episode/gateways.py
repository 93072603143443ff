"""Which gateway an episode talks to, and at which URL.

`MCP_SERVER_URL` names one gateway, several (a comma list), or a host name that resolves to several
addresses (a Kubernetes headless Service): each address is then a gateway, reached by its address
with the name kept in the Host header (plain http only: an https name stays one endpoint, since its
certificate names the host, not the addresses).

Each episode is pinned to one gateway for its whole life by its session id: the gateways are ranked
by rendezvous hashing of (session id, gateway), and the episode takes the first one not known to be
down. The ranking is stable, so every role of a team finds the same gateway, and a gateway that goes
away moves only its own sessions. A gateway that refuses a connection is marked down for `DOWN_S`
seconds in this process, so the episodes that start next skip it without trying it.

The episode's session travels in the URL (`/sessions/<id>/mcp`, the gateway's session endpoint), the
one thing every request carries whatever the protocol version.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import anyio

DOWN_S = 10.0
"""How long a gateway that refused a connection is skipped by the episodes that start after it."""
RESOLVE_TTL_S = 30.0
"""How long a host name's addresses are reused before it is resolved again (pods come and go)."""

_MCP_PATH = re.compile(r"(?P<prefix>.*?)(?P<server>/servers/[^/]+)?/mcp/?")
_down_until: dict[str, float] = {}
_resolved: dict[tuple[str, int], tuple[float, list[str]]] = {}


@dataclass(frozen=True)
class Gateway:
    url: str
    """The gateway's MCP endpoint as configured, or with a resolved address in place of the name."""
    host: str | None = None
    """The Host header to send when `url` holds an address instead of the configured name."""

    def session_url(self, session_id: str) -> str:
        """The session's own endpoint (`.../sessions/<id>/mcp`); `url` itself when its path is not `.../mcp`."""
        parts = urlsplit(self.url)
        match = _MCP_PATH.fullmatch(parts.path)
        if match is None:
            return self.url
        path = f"{match['prefix']}/sessions/{session_id}{match['server'] or ''}/mcp"
        return urlunsplit(parts._replace(path=path))

    def health_url(self) -> str:
        """`.../health` beside the endpoint: any answer proves the gateway takes connections."""
        parts = urlsplit(self.url)
        match = _MCP_PATH.fullmatch(parts.path)
        prefix = match["prefix"] if match else ""
        return urlunsplit(parts._replace(path=f"{prefix}/health", query=""))

    def session_resource(self, session_id: str) -> str | None:
        """`.../sessions/<id>`, which `DELETE` ends; None when `url` has no session form."""
        parts = urlsplit(self.url)
        match = _MCP_PATH.fullmatch(parts.path)
        if match is None:
            return None
        return urlunsplit(parts._replace(path=f"{match['prefix']}/sessions/{session_id}", query=""))


def endpoints(spec: str) -> tuple[str, ...]:
    """The URLs of a comma-separated MCP_SERVER_URL, each checked."""
    urls = tuple(part.strip() for part in spec.split(",") if part.strip())
    if not urls:
        raise ValueError("MCP server URL is empty: set MCP_SERVER_URL to http://HOST:8080/mcp")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"MCP server URL must start with http:// or https://, got {url!r}")
        if not urlsplit(url).hostname:
            raise ValueError(f"MCP server URL {url!r} names no host")
    return urls


async def gateways(spec: str) -> list[Gateway]:
    """Every gateway `spec` names: its URLs, a plain-http host name expanded to each of its addresses."""
    found: list[Gateway] = []
    for url in endpoints(spec):
        found.extend(await _expand(url))
    return found


async def _expand(url: str) -> list[Gateway]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme != "http" or _is_address(host):
        return [Gateway(url)]
    port = parts.port or 80
    addresses = await _addresses(host, port)
    if len(addresses) < 2:
        return [Gateway(url)]
    netloc = parts.netloc.rpartition("@")[2]  # Host header: name[:port] as the user wrote it
    return [
        Gateway(urlunsplit(parts._replace(netloc=f"{_bracketed(address)}:{port}")), host=netloc)
        for address in addresses
    ]


async def _addresses(host: str, port: int) -> list[str]:
    cached = _resolved.get((host, port))
    if cached is not None and time.monotonic() - cached[0] < RESOLVE_TTL_S:
        return cached[1]
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return []  # the client's own connect will say what is wrong with the name
    addresses = sorted({str(info[4][0]) for info in infos})
    _resolved[(host, port)] = (time.monotonic(), addresses)
    return addresses


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def ranked(candidates: list[Gateway], session_id: str) -> list[Gateway]:
    """The gateways in the session's own stable order (rendezvous hashing), live ones first."""

    def weight(gateway: Gateway) -> bytes:
        return hashlib.sha256(f"{session_id}\n{gateway.url}".encode()).digest()

    order = sorted(candidates, key=weight, reverse=True)
    now = time.monotonic()
    return [g for g in order if _down_until.get(g.url, 0.0) <= now] + [
        g for g in order if _down_until.get(g.url, 0.0) > now
    ]


def mark_down(gateway: Gateway) -> None:
    """`gateway` refused a connection: the episodes that start in the next DOWN_S seconds skip it."""
    _down_until[gateway.url] = time.monotonic() + DOWN_S


def mark_up(gateway: Gateway) -> None:
    _down_until.pop(gateway.url, None)
