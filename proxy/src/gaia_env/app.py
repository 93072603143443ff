"""The ASGI app: the MCP endpoints, operator endpoints, auth and request ids."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from . import logs, ops, session_urls
from .front import MCPEndpoint
from .gateway import Gateway
from .selection import CLIENT_SCOPE_KEY
from .served import ReplicaHeader, sessions_route

OPEN_PATHS = {"/health"}


@dataclass(frozen=True)
class HttpConfig:
    host: str = "127.0.0.1"
    auth_token: str | None = None
    allowed_hosts: list[str] = field(default_factory=list)
    insecure: bool = False
    max_body_bytes: int = 16 * 1024 * 1024
    max_header_bytes: int = 16 * 1024
    """Names and values of all request headers together; a larger set is answered 431."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def transport_security(config: HttpConfig) -> TransportSecuritySettings:
    """Host/Origin checks: strict on loopback; off once a token or `*` protects the endpoint."""
    if config.auth_token or "*" in config.allowed_hosts or (config.insecure and not is_loopback(config.host)):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1", "localhost", "[::1]"] + [h for h in config.allowed_hosts if h]
    allowed = [h if ":" in h.lstrip("[").split("]")[-1] else f"{h}:*" for h in hosts] + hosts
    origins = [f"http://{h}" for h in allowed] + [f"https://{h}" for h in allowed]
    return TransportSecuritySettings(allowed_hosts=allowed, allowed_origins=origins)


def create_app(gateway: Gateway, config: HttpConfig) -> ASGIApp:
    security = transport_security(config)
    endpoint = MCPEndpoint(gateway, security, config.max_body_bytes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await gateway.start()
        try:
            async with endpoint.run():
                yield
        finally:
            await gateway.close()

    mcp_paths = ["/mcp", "/servers/{server_id}/mcp", session_urls.SESSION_PATH, session_urls.SERVER_PATH]
    routes = [Route(path, endpoint=endpoint, methods=["GET", "POST", "DELETE"]) for path in mcp_paths]
    routes += session_urls.routes(gateway, security)
    routes += [Route(path, endpoint=fn, methods=["GET"]) for path, fn in ops.routes_for(gateway).items()]
    routes.append(Route("/sessions", endpoint=sessions_route(gateway), methods=["GET"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    return HeaderLimit(
        ReplicaHeader(RequestIds(BearerAuth(app, config.auth_token)), str(gateway.config.replica)),
        config.max_header_bytes,
    )


class HeaderLimit:
    """Request headers over the limit get 431 before anything reads them (a 100 KB header set was
    served, and a session kept what came with it)."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            size = sum(len(name) + len(value) for name, value in scope["headers"])
            if size > self.limit:
                message = (
                    f"Request headers are {size} bytes, over the limit of {self.limit} "
                    "(gaia-env serve --max-header-kb, GAIA_MAX_HEADER_KB); send shorter headers."
                )
                body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
                await JSONResponse(body, status_code=431)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BearerAuth:
    """`MCP_AUTH_TOKEN`: every path but /health needs `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app = app
        self.token = token.encode() if token else None
        # Behind the token, clients are told apart by the token they show (one token: one client).
        self.client = f"bearer token {hashlib.sha256(self.token).hexdigest()[:12]}" if self.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        supplied = Headers(scope=scope).get("authorization", "")
        scheme, _, credential = supplied.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(credential.strip().encode(), self.token):
            await self.app({**scope, CLIENT_SCOPE_KEY: self.client}, receive, send)
            return
        response = JSONResponse(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32001,
                    "message": "Unauthorized: send 'Authorization: Bearer <MCP_AUTH_TOKEN>'.",
                },
            },
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)


class RequestIds:
    """Tag each HTTP request with an id (the client's X-Request-Id or a new one) for logs."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = Headers(scope=scope).get("x-request-id") or uuid.uuid4().hex[:16]
        token = logs.request_id.set(rid)
        try:
            await self.app(scope, receive, send)
        finally:
            logs.request_id.reset(token)
