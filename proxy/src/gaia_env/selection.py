"""What a request asks for: which servers, and which session."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import Headers, QueryParams
from starlette.types import Scope

SESSION_HEADER = "mcp-session-id"
CLIENT_SESSION_HEADER = "x-session-id"
META_SESSION_KEYS = ("gaia-env/session-id", "session_id", "sessionId")


def requested_servers(scope: Scope) -> list[str] | None:
    """Server selection: /servers/<id>/mcp, then the MCP_SERVERS header, then ?servers=."""
    path_id = scope.get("path_params", {}).get("server_id")
    if path_id:
        return [path_id]
    headers = Headers(scope=scope)
    raw = (
        headers.get("mcp_servers")
        or headers.get("mcp-servers")
        or QueryParams(scope["query_string"]).get("servers")
    )
    if not raw:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()] or None


def session_key(scope: Scope, meta: dict[str, Any] | None) -> str | None:
    """The MCP session id, else X-Session-Id, else a session id in `_meta`; None means ephemeral."""
    headers = Headers(scope=scope)
    key = headers.get(SESSION_HEADER) or headers.get(CLIENT_SESSION_HEADER)
    if key:
        return key
    for name in META_SESSION_KEYS:
        if meta and meta.get(name):
            return str(meta[name])
    return None
