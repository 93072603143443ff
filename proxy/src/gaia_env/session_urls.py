"""Sessions as URLs: `POST /sessions` mints one, `DELETE /sessions/<id>` ends it.

The URL is the one thing every MCP client carries on every request, whatever its protocol version
and however many MCP sessions it opens, so `/sessions/<id>/mcp` is where a workspace lives across
calls. The id is a handle: unguessable when the gateway mints it (the 2026-07-28 spec's advice for
state a client carries); a client may also choose its own within `selection.SESSION_ID`.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from .gateway import Gateway
from .selection import URL_SESSION_PARAM, client_of, session_id_problem
from .sessions import SessionRefused

SESSION_PATH = "/sessions/{session_id}/mcp"
SERVER_PATH = "/sessions/{session_id}/servers/{server_id}/mcp"

# What a proxy may say the client used; anything else falls back to the request's own.
_FORWARDED_HOST = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


def mint_session_id() -> str:
    """192 random bits, URL-safe: 32 characters of [A-Za-z0-9_-]."""
    return secrets.token_urlsafe(24)


def base_url(scope: Scope) -> str:
    """scheme://host[:port] as the client addressed the gateway (X-Forwarded-Proto/Host from a proxy)."""
    headers = Headers(scope=scope)
    scheme = _first(headers.get("x-forwarded-proto")).lower()
    if scheme not in ("http", "https"):
        scheme = scope.get("scheme", "http")
    for host in (_first(headers.get("x-forwarded-host")), headers.get("host", "")):
        if _FORWARDED_HOST.fullmatch(host):
            return f"{scheme}://{host}"
    server_host, port = scope.get("server") or ("127.0.0.1", 80)
    return f"{scheme}://{server_host}:{port}"


def session_urls(base: str, session_id: str) -> dict[str, str]:
    return {
        "url": base + SESSION_PATH.format(session_id=session_id),
        "server_url_template": base + SERVER_PATH.replace("{session_id}", session_id),
    }


def routes(gateway: Gateway, security: TransportSecuritySettings) -> list[Route]:
    guard = TransportSecurityMiddleware(security)

    async def create(request: Request) -> Response:
        if refusal := await guard.validate_request(request):
            return refusal
        try:
            gateway.sessions.check_new(client_of(request.scope))
        except SessionRefused as exc:
            return _error(503, str(exc))
        # Nothing is stored until the first call: any replica behind a load balancer can mint the id,
        # and the one its calls hash to makes the workspace.
        session_id = mint_session_id()
        body: dict[str, Any] = {
            "session_id": session_id,
            **session_urls(base_url(request.scope), session_id),
            "idle_ttl_s": gateway.sessions.idle_ttl,
        }
        return JSONResponse(body, status_code=201, headers={"Location": body["url"]})

    async def delete(request: Request) -> Response:
        if refusal := await guard.validate_request(request):
            return refusal
        session_id = request.path_params[URL_SESSION_PARAM]
        if problem := session_id_problem(session_id, "the URL"):
            return _error(400, problem)
        if await gateway.end_session(session_id):
            return Response(status_code=204)
        return _error(404, _not_found(session_id, gateway.sessions.idle_ttl))

    async def report(request: Request) -> Response:
        session_id = request.path_params[URL_SESSION_PARAM]
        if problem := session_id_problem(session_id, "the URL"):
            return _error(400, problem)
        found = gateway.session_report(session_id)
        if found is None:
            return _error(404, _not_found(session_id, gateway.sessions.idle_ttl))
        return JSONResponse(found)

    return [
        Route("/sessions", create, methods=["POST"]),
        Route("/sessions/{session_id}", delete, methods=["DELETE"]),
        Route("/sessions/{session_id}", report, methods=["GET"]),
    ]


def _not_found(session_id: str, idle_ttl: float) -> str:
    return (
        f"Session not found: {session_id} was never used, was already deleted, or expired after "
        f"{idle_ttl:g} s idle (GAIA_SESSION_TTL)."
    )


def _first(value: str | None) -> str:
    """The first entry of a header a chain of proxies may have appended to."""
    return (value or "").split(",")[0].strip()


def _error(status: int, message: str) -> JSONResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return JSONResponse(body, status_code=status)
