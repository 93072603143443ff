"""What a request asks for: which servers, and which session.

A call's session (its workspace) is decided here and nowhere else: the URL's session
(`/sessions/<id>/mcp`), else the MCP session id, else the `X-Session-Id` header, else a session id
in the call's `_meta`; no key at all means a fresh workspace for that one call.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.datastructures import Headers, QueryParams
from starlette.types import Scope

from .errors import InvalidRequest

SESSION_HEADER = "mcp-session-id"
CLIENT_SESSION_HEADER = "x-session-id"
META_SESSION_KEYS = ("gaia-env/session-id", "session_id", "sessionId")
URL_SESSION_PARAM = "session_id"

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""A session id a client chooses: it goes into URLs, logs and the store's keys, so it is bounded."""


class InvalidSessionId(InvalidRequest):
    pass


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


def url_session(scope: Scope) -> str | None:
    """The session named by the URL (`/sessions/<id>/mcp`, `/sessions/<id>/servers/<server>/mcp`)."""
    return scope.get("path_params", {}).get(URL_SESSION_PARAM)


def session_id_problem(key: str, where: str) -> str | None:
    """Why a client-chosen session id cannot be used, or None when it can."""
    if SESSION_ID.fullmatch(key):
        return None
    shown = key if len(key) <= 40 else key[:40] + "…"
    return (
        f"Invalid session id {shown!r} in {where}: use 1 to 128 letters, digits, '-' or '_' "
        "(POST /sessions mints one)."
    )


def refused_session_id(scope: Scope) -> str | None:
    """Why the session id in the request's URL or X-Session-Id header is refused, or None."""
    if (key := url_session(scope)) is not None:
        return session_id_problem(key, "the URL")
    if (key := Headers(scope=scope).get(CLIENT_SESSION_HEADER)) is not None:
        return session_id_problem(key, "the X-Session-Id header")
    return None


def session_key(scope: Scope, meta: dict[str, Any] | None) -> str | None:
    """The call's session: the URL's, else the MCP session id, else X-Session-Id, else `_meta`'s.

    None means an ephemeral workspace. A client-chosen id outside SESSION_ID raises InvalidSessionId.
    """
    if (key := url_session(scope)) is not None:
        return _checked(key, "the URL")
    headers = Headers(scope=scope)
    if key := headers.get(SESSION_HEADER):
        return key  # the SDK's own id: it answers 404 to an id it did not give out
    if key := headers.get(CLIENT_SESSION_HEADER):
        return _checked(key, "the X-Session-Id header")
    for name in META_SESSION_KEYS:
        if meta and meta.get(name):
            return _checked(str(meta[name]), f"_meta[{name!r}]")
    return None


def _checked(key: str, where: str) -> str:
    if problem := session_id_problem(key, where):
        raise InvalidSessionId(problem)
    return key
