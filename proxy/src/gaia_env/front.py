"""The MCP front on /mcp: full sessions for MCP clients, plain JSON for one bare POST.

One low-level SDK `Server` answers both ways. Each request picks a session manager:
a session id or an `initialize` goes to the stateful manager; anything else (curl,
2026-style clients) goes to the stateless JSON manager, with the body replayed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from .bare import BareRequests
from .errors import GatewayError
from .gateway import Gateway
from .selection import CLIENT_SESSION_HEADER, SESSION_HEADER, requested_servers, session_key


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
        key = session_key(ctx.request.scope, meta) if ctx.request is not None else None
        try:
            result = await gateway.call_tool(params.name, params.arguments, selection(ctx), key)
        except GatewayError as exc:
            raise _sdk_error(exc) from None
        return types.CallToolResult.model_validate(result)

    def input_schema(name: str) -> dict[str, Any] | None:
        try:
            return gateway.input_schema(gateway.route(name, tuple(gateway.pools)))
        except GatewayError:
            return None

    return Server(
        "gaia-env",
        version="0.1.0",
        instructions="GAIA tool environment: every tool server behind one endpoint.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


def _sdk_error(exc: GatewayError) -> MCPError:
    """The SDK's form of a gateway error: the same code, message and data the bare path sends."""
    return MCPError(code=exc.code, message=exc.message, data=exc.data)


class MCPEndpoint:
    """The ASGI endpoint for /mcp and /servers/<id>/mcp (a plain app: no Mount, no redirect)."""

    def __init__(self, gateway: Gateway, security: TransportSecuritySettings, max_body: int):
        self.gateway = gateway
        self.max_body = max_body
        server = build_server(gateway)
        # No idle timeout of the SDK's own: the gateway's session store owns every session's lifetime
        # and ends the transport with the workspace (end_transport).
        self.stateful = StreamableHTTPSessionManager(
            server,
            json_response=True,
            security_settings=security,
            max_request_body_size=max_body,
            session_idle_timeout=None,
        )
        self.stateless = StreamableHTTPSessionManager(
            server,
            json_response=True,
            stateless=True,
            security_settings=security,
            max_request_body_size=max_body,
        )
        self.bare = BareRequests(gateway, security)
        gateway.session_end_listeners.append(self.end_transport)

    async def end_transport(self, session_id: str) -> None:
        """End the SDK's transport of an MCP session the gateway ended (idle, or DELETE)."""
        # The SDK offers no public way to end one session from outside; mcp is pinned (2.3.0).
        transport = self.stateful._server_instances.get(session_id)
        if transport is not None:
            await self.stateful._discard_session(session_id, transport)

    def _registering(self, send: Send) -> Send:
        """Register the session an initialize opens, so the store's one TTL covers it from the start."""

        async def register(message: Message) -> None:
            if message["type"] == "http.response.start":
                if session_id := Headers(raw=message.get("headers", [])).get(SESSION_HEADER):
                    self.gateway.sessions.touch(session_id)
            await send(message)

        return register

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.stateful.run(), self.stateless.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        method = scope["method"]
        session_id = headers.get(SESSION_HEADER)
        version = headers.get("mcp-protocol-version")
        if session_id:
            if session_id in self.stateful._server_instances:  # a live session: its use keeps it
                self.gateway.sessions.touch(session_id)
            await self.stateful.handle_request(scope, receive, send)
            if method == "DELETE":
                await self.gateway.end_session(session_id)
            return
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.stateless.handle_request(scope, receive, send)
            return
        if method == "DELETE" and headers.get(CLIENT_SESSION_HEADER):
            ended = await self.gateway.end_session(headers[CLIENT_SESSION_HEADER])
            await JSONResponse({"ended": ended})(scope, receive, send)
            return
        if method != "POST":
            await self.stateful.handle_request(scope, receive, send)
            return
        body = await _read_body(receive, self.max_body)
        if body is None:
            await _jsonrpc_error(413, INVALID_REQUEST, f"Request body over {self.max_body} bytes.")(
                scope, receive, send
            )
            return
        message = _parse(body)
        if _is_initialize(message):
            await self.stateful.handle_request(scope, _replay(body, receive), self._registering(send))
            return
        fast = await self.bare.answer(message, scope) if message is not _UNPARSED else None
        if fast is not None:
            await fast(scope, receive, send)
            return
        await self.stateless.handle_request(scope, _replay(body, receive), send)


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


def _parse(body: bytes) -> Any:
    """The body's JSON, parsed once for every path that reads it; _UNPARSED when it is not JSON."""
    try:
        return json.loads(body)
    except ValueError:
        return _UNPARSED  # the SDK answers it with -32700


def _is_initialize(message: Any) -> bool:
    messages = message if isinstance(message, list) else [message]
    return any(isinstance(m, dict) and m.get("method") == "initialize" for m in messages)


def _jsonrpc_error(status: int, code: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status_code=status
    )
