"""What a request asks for: which servers, and which session.

A call's session (its workspace) is decided here and nowhere else: the URL's session
(`/sessions/<id>/mcp`), else the MCP session id, else the `X-Session-Id` header, else a session id
in the call's `_meta`; no key at all means a fresh workspace for that one call.
"""

from __future__ import annotations

import re
from typing import Any

from gaia_contract import (
    CLIENT_SESSION_HEADER,
    MCP_SESSION_HEADER,
    META_SESSION_KEYS,
    SERVERS_HEADER,
    SERVERS_HEADER_AS_SENT,
    SERVERS_QUERY,
)
from starlette.datastructures import Headers, QueryParams
from starlette.types import Scope

from .errors import InvalidRequest

URL_SESSION_PARAM = "session_id"

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""A session id a client chooses: it goes into URLs, logs and the store's keys, so it is bounded."""
CLIENT_SCOPE_KEY = "gaia_env.client"
"""Set in the ASGI scope by the bearer check (app.BearerAuth) when a token was required and shown."""


class InvalidSessionId(InvalidRequest):
    pass


def requested_servers(scope: Scope) -> list[str] | None:
    """Server selection: /servers/<id>/mcp, then the MCP_SERVERS header, then ?servers=."""
    path_id = scope.get("path_params", {}).get("server_id")
    if path_id:
        return [path_id]
    headers = Headers(scope=scope)
    raw = (
        headers.get(SERVERS_HEADER_AS_SENT)
        or headers.get(SERVERS_HEADER)
        or QueryParams(scope["query_string"]).get(SERVERS_QUERY)
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
    """Why a session id in the request's URL, Mcp-Session-Id or X-Session-Id header is refused, or None."""
    if (key := url_session(scope)) is not None and (problem := session_id_problem(key, "the URL")):
        return problem
    headers = Headers(scope=scope)
    # The SDK's own ids (uuid4 hex) fit the bound; anything longer is refused before the SDK sees it.
    for header, where in (
        (MCP_SESSION_HEADER, "the Mcp-Session-Id header"),
        (CLIENT_SESSION_HEADER, "the X-Session-Id header"),
    ):
        if (key := headers.get(header)) is not None and (problem := session_id_problem(key, where)):
            return problem
    return None


def client_of(scope: Scope) -> str:
    """Who is asking, for the per-client session limit: the bearer token when the gateway requires
    one (every holder of the one MCP_AUTH_TOKEN is one client), else the client's address."""
    if identity := scope.get(CLIENT_SCOPE_KEY):
        return str(identity)
    client = scope.get("client")
    return f"address {client[0]}" if client else "address unknown"


def session_key(scope: Scope, meta: dict[str, Any] | None) -> str | None:
    """The call's session: the URL's, else the MCP session id, else X-Session-Id, else `_meta`'s.

    None means an ephemeral workspace. A client-chosen id outside SESSION_ID raises InvalidSessionId.
    """
    if (key := url_session(scope)) is not None:
        return _checked(key, "the URL")
    headers = Headers(scope=scope)
    if key := headers.get(MCP_SESSION_HEADER):
        return _checked(key, "the Mcp-Session-Id header")  # the SDK's own id: it 404s an id it did not give
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
