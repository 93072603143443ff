"""The MCP front on /mcp: full sessions for MCP clients, plain JSON for one bare POST.

One low-level SDK `Server` answers every way. Each request picks a session manager:
a session id or an `initialize` goes to a stateful manager; anything else (curl,
2026-style clients) goes to a stateless one, with the body replayed.

Streaming or JSON: a client that lists `text/event-stream` in its Accept header gets SSE
responses, which carry a call's progress notifications before its result; every other client
(curl's `*/*`, `application/json`, no Accept at all) gets one JSON body per request, which has no
room for them. So there are two managers of each kind, and a session stays with the one that
opened it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import mcp.types as types
from gaia_contract import CLIENT_SESSION_HEADER, MCP_SESSION_HEADER
from gaia_kit.core.calls import Call
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from .bare import BareRequests
from .errors import GatewayError
from .gateway import Gateway
from .selection import (
    client_of,
    refused_session_id,
    requested_servers,
    session_key,
    url_session,
)
from .sessions import SessionRefused

# The SDK's JSON parser (pydantic-core) stops at this depth; Python's json module at about 1,000,
# by raising RecursionError. One limit for every path keeps the answer the same: -32700.
MAX_JSON_DEPTH = 200


INSTRUCTIONS = (
    "GAIA tool environment: every tool server behind one endpoint. Files live in a workspace per "
    "session, and a call that names no session gets a fresh, empty one: to keep files between calls, "
    "POST /sessions and connect to the URL it returns (or use /sessions/<any-id>/mcp, or send an "
    "X-Session-Id header)."
)
"""Sent in `initialize` and the 2026-07-28 `server/discover`: the one place every client reads first."""


def build_server(gateway: Gateway) -> Server[Any]:
    def selection(ctx: Any) -> tuple[str, ...]:
        request = ctx.request
        return gateway.select(requested_servers(request.scope) if request is not None else None)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        try:
            return gateway.listing(selection(ctx)).result
        except GatewayError as exc:
            raise _sdk_error(exc) from None

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        meta = dict(params.meta or {}) if params.meta else None
        # The client's progress token stays here; the server gets one of the gateway's own.
        relay = Call(params.name, report=ctx.session.report_progress) if _progress_token(meta) else None
        try:
            scope = ctx.request.scope if ctx.request is not None else None
            key = session_key(scope, meta) if scope is not None else None
            result = await gateway.call_tool(
                params.name,
                params.arguments,
                selection(ctx),
                key,
                relay.progress if relay else None,
                client=client_of(scope) if scope is not None else "",
                meta=meta,
            )
        except GatewayError as exc:
            raise _sdk_error(exc) from None
        if relay is not None:
            await relay.drain()  # every progress notification before the result
        return types.CallToolResult.model_validate(result)

    def input_schema(name: str) -> dict[str, Any] | None:
        try:
            return gateway.input_schema(gateway.route(name, tuple(gateway.pools)))
        except GatewayError:
            return None

    return Server(
        "gaia-env",
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


def _sdk_error(exc: GatewayError) -> MCPError:
    """The SDK's form of a gateway error: the same code, message and data the bare path sends."""
    return MCPError(code=exc.code, message=exc.message, data=exc.data)


class MCPEndpoint:
    """The ASGI endpoint for /mcp, /servers/<id>/mcp and their /sessions/<id>/... forms (a plain app:
    no Mount, no redirect)."""

    def __init__(self, gateway: Gateway, security: TransportSecuritySettings, max_body: int):
        self.gateway = gateway
        self.max_body = max_body
        server = build_server(gateway)
        common: dict[str, Any] = {"security_settings": security, "max_request_body_size": max_body}
        # No idle timeout of the SDK's own: the gateway's session store owns every session's lifetime
        # and ends the transport with the workspace (end_transport).
        self.stateful = StreamableHTTPSessionManager(
            server, json_response=True, session_idle_timeout=None, **common
        )
        self.streaming = StreamableHTTPSessionManager(
            server, json_response=False, session_idle_timeout=None, **common
        )
        self.stateless = StreamableHTTPSessionManager(server, json_response=True, stateless=True, **common)
        # SSE only once the call sends a notification (the 2026 path), else the same JSON answer.
        self.stateless_streaming = StreamableHTTPSessionManager(
            server, json_response=False, stateless=True, **common
        )
        self.bare = BareRequests(gateway, security)
        gateway.session_end_listeners.append(self.end_transport)

    async def end_transport(self, session_id: str) -> None:
        """End the SDK's transport of an MCP session the gateway ended (idle, or DELETE)."""
        # The SDK offers no public way to end one session from outside; mcp is pinned (2.3.0).
        manager = self._session_manager(session_id)
        transport = manager._server_instances.get(session_id)
        if transport is not None:
            await manager._discard_session(session_id, transport)

    def _registering(self, send: Send) -> Send:
        """Register the session an initialize opens, so the store's one TTL covers it from the start."""

        async def register(message: Message) -> None:
            if message["type"] == "http.response.start":
                if session_id := Headers(raw=message.get("headers", [])).get(MCP_SESSION_HEADER):
                    self.gateway.sessions.touch(session_id)
                    await self.gateway.owners.claim(session_id)  # a new uuid: this replica's
            await send(message)

        return register

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with (
            self.stateful.run(),
            self.streaming.run(),
            self.stateless.run(),
            self.stateless_streaming.run(),
        ):
            yield

    def _session_manager(self, session_id: str) -> StreamableHTTPSessionManager:
        # The SDK (2.3) keeps each manager's open sessions in `_server_instances`; ids are uuid4.
        return self.streaming if session_id in self.streaming._server_instances else self.stateful

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope = _any_type_without_accept(scope)
        headers = Headers(scope=scope)
        method = scope["method"]
        session_id = headers.get(MCP_SESSION_HEADER)
        version = headers.get("mcp-protocol-version")
        streams = _lists_event_stream(headers)
        if problem := refused_session_id(scope):  # refused before anything is opened or kept
            await _jsonrpc_error(400, INVALID_REQUEST, problem)(scope, receive, send)
            return
        if method == "POST":
            body = await _read_body(receive, self.max_body)
            if body is None:
                error = f"Request body over {self.max_body} bytes."
                await _jsonrpc_error(413, INVALID_REQUEST, error)(scope, receive, send)
                return
            if refusal := _invalid_unicode_answer(body):
                await refusal(scope, receive, send)
                return
            receive = _replay(body, receive)
        else:
            body = b""
        if session_id:
            manager = self._session_manager(session_id)
            if session_id in manager._server_instances:  # a live session: its use keeps it
                self.gateway.sessions.touch(session_id)
            elif gone := await self.gateway.owners.owner_elsewhere(session_id):
                # Not ours but another replica's (or an earlier run's): say so instead of the SDK's
                # bare "session not found"; 404 is what the protocol answers for a session that ended.
                body = {"jsonrpc": "2.0", "id": None, "error": gone.as_jsonrpc()}
                await JSONResponse(body, status_code=404)(scope, receive, send)
                return
            await manager.handle_request(scope, receive, send)
            if method == "DELETE":
                await self.gateway.end_session(session_id)
            return
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            manager = self.stateless_streaming if streams else self.stateless
            await manager.handle_request(scope, receive, send)
            return
        if method == "DELETE" and url_session(scope) is not None:
            # Clients send DELETE when they close an MCP session; the URL's workspace outlives that.
            error = (
                "DELETE /sessions/<id> ends this session; DELETE on its /mcp URL ends an MCP session only."
            )
            await _jsonrpc_error(400, INVALID_REQUEST, error)(scope, receive, send)
            return
        if method == "DELETE" and headers.get(CLIENT_SESSION_HEADER):
            ended = await self.gateway.end_session(headers[CLIENT_SESSION_HEADER])
            await JSONResponse({"ended": ended})(scope, receive, send)
            return
        if method != "POST":
            await self.stateful.handle_request(scope, receive, send)
            return
        message = _parse(body)
        if _nests_too_deep(body, message):
            error = f"Parse error: the JSON nests more than {MAX_JSON_DEPTH} levels deep."
            await _jsonrpc_error(400, PARSE_ERROR, error)(scope, receive, send)
            return
        if _is_initialize(message):
            try:
                await self.gateway.sessions.admit_unused()
            except SessionRefused as exc:
                await _jsonrpc_error(503, INVALID_REQUEST, str(exc))(scope, receive, send)
                return
            manager = self.streaming if streams else self.stateful
            await manager.handle_request(scope, receive, self._registering(send))
            return
        if streams and b"progressToken" in body:  # progress needs an SSE answer: the SDK writes it
            await self.stateless_streaming.handle_request(scope, receive, send)
            return
        fast = await self.bare.answer(message, scope, receive) if message is not _UNPARSED else None
        if fast is not None:
            await fast(scope, receive, send)
            return
        await self.stateless.handle_request(scope, receive, send)


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _any_type_without_accept(scope: Scope) -> Scope:
    """RFC 9110: a request without Accept accepts any type; answer it as curl's `*/*` is answered."""
    if any(name == b"accept" for name, _ in scope["headers"]):
        return scope
    return {**scope, "headers": [*scope["headers"], (b"accept", b"*/*")]}


def _lists_event_stream(headers: Headers) -> bool:
    """Whether the client names text/event-stream itself (a wildcard is not a wish for SSE)."""
    return any(
        part.split(";")[0].strip().lower() == "text/event-stream"
        for part in headers.get("accept", "").split(",")
    )


def _progress_token(meta: dict[str, Any] | None) -> Any:
    if not meta:
        return None
    return meta.get("progressToken", meta.get("progress_token"))


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


_UNPARSED = object()
"""Not JSON: the SDK answers it with -32700."""
_TOO_DEEP = object()
"""JSON nested past what Python's parser takes."""


def _parse(body: bytes) -> Any:
    """The body's JSON, parsed once for every path that reads it."""
    try:
        return json.loads(body)
    except RecursionError:
        return _TOO_DEEP
    except ValueError:
        return _UNPARSED


def _nests_too_deep(body: bytes, value: Any) -> bool:
    if value is _TOO_DEEP:
        return True
    if value is _UNPARSED or body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


# A JSON escape of a UTF-16 surrogate: the only way text that is not valid Unicode reaches us.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _invalid_unicode_answer(body: bytes) -> JSONResponse | None:
    """The answer to a body whose strings hold a lone surrogate ("\\ud800"), or None.

    Such text cannot be encoded to reach a server (the SDK's parser refuses it with a puzzling
    parse error; Python's accepts it, and the call then held a server slot until its deadline).
    In a call's arguments it is the model's to correct, so it gets an isError result; anywhere
    else the request is invalid (-32602)."""
    if not _SURROGATE_ESCAPE.search(body):
        return None
    message = _parse(body)
    where = None if message is _UNPARSED or message is _TOO_DEEP else _lone_surrogate(message)
    if where is None:
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    if (
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and where[:2] == ["params", "arguments"]
    ):
        tool = _printable(str(message["params"].get("name")))
        text = f"Invalid arguments for {tool}: {_surrogate_problem(where[2:] or ['arguments'])}"
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})
    error = {"code": INVALID_PARAMS, "message": f"Invalid params: {_surrogate_problem(where)}"}
    status = 200 if request_id is not None else 400
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=status)


def _surrogate_problem(where: list[str]) -> str:
    return (
        f"'{_printable('.'.join(where))}' holds a lone surrogate (a \\ud800-\\udfff escape without its "
        "pair), which is not valid Unicode; send the text as valid UTF-8."
    )


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode()[:200]


def _lone_surrogate(value: Any) -> list[str] | None:
    """The path to the first string (or object key) that is not valid Unicode, or None."""
    stack: list[tuple[list[str], Any]] = [([], value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not _encodes(key):
                    return [*path, key]
                stack.append(([*path, key], child))
        elif isinstance(item, list):
            stack.extend(([*path, str(index)], child) for index, child in enumerate(item))
        elif isinstance(item, str) and not _encodes(item):
            return path
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_initialize(message: Any) -> bool:
    messages = message if isinstance(message, list) else [message]
    return any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages)


def _jsonrpc_error(status: int, code: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status_code=status
    )
