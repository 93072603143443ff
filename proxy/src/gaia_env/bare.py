"""The fast path for one bare JSON-RPC POST: tools/list, tools/call and ping, answered as plain JSON.

Training clients send these by the hundred per second. The SDK's stateless manager would build a
server session for each; here they go straight to the gateway. Anything else (notifications,
batches, other methods, malformed bodies, modern protocol headers) returns None and the SDK
answers it, so the edge cases keep the SDK's exact behaviour.

A client that goes away before its answer cancels the call: the server is told and stops the work.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope

from .errors import GatewayError
from .gateway import Gateway
from .selection import client_of, requested_servers, session_key

FAST_METHODS = {"tools/list", "tools/call", "ping"}


class BareRequests:
    def __init__(self, gateway: Gateway, security: TransportSecuritySettings):
        self.gateway = gateway
        self.security = TransportSecurityMiddleware(security)

    async def answer(self, parsed: Any, scope: Scope, receive: Receive) -> Response | None:
        """The answer to one parsed JSON body, or None to let the SDK answer it."""
        request = Request(scope)
        if refusal := await self.security.validate_request(request, is_post=True):
            return refusal
        if problem := _not_a_request(parsed):
            return _error(None, {"code": INVALID_REQUEST, "message": problem}, status=400)
        message = _simple_request(parsed)
        if message is None or not check_accept_headers(request)[0]:
            return None
        request_id, method, params = message["id"], message["method"], message.get("params") or {}
        try:
            selection = self.gateway.select(requested_servers(scope))
            if method == "ping":
                return _reply(request_id, b"{}")
            if method == "tools/list":
                return _reply(request_id, self.gateway.listing(selection).json)
            return await self._call(request_id, params, selection, scope, receive)
        except GatewayError as exc:
            return _error(request_id, exc.as_jsonrpc())

    async def _call(
        self,
        request_id: Any,
        params: dict[str, Any],
        selection: tuple[str, ...],
        scope: Scope,
        receive: Receive,
    ) -> Response | None:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict | None):
            return None  # the SDK words the validation error
        meta = params.get("_meta")
        session = session_key(scope, meta if isinstance(meta, dict) else None)
        with anyio.CancelScope() as call:
            watcher = asyncio.create_task(_cancel_on_disconnect(receive, call))
            try:
                result = await self.gateway.call_tool(
                    name,
                    arguments,
                    selection,
                    session,
                    client=client_of(scope),
                    meta=meta if isinstance(meta, dict) else None,
                )
            finally:
                watcher.cancel()
        if call.cancelled_caught:
            return Response(status_code=499)  # nobody is left to read it
        return _reply(request_id, json.dumps(result, separators=(",", ":")).encode())


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """The body is read: the next message is the client leaving (uvicorn sends it on close)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def _not_a_request(message: Any) -> str | None:
    """Why a parsed body is no JSON-RPC message at all (the SDK would answer with a pydantic dump)."""
    if isinstance(message, list):
        return "Batch requests are not supported: send one JSON-RPC request per POST."
    if not isinstance(message, dict):
        return "The body must be a JSON-RPC 2.0 request object."
    if message.get("jsonrpc") != "2.0":
        return 'Not a JSON-RPC 2.0 message: set "jsonrpc": "2.0".'
    if "method" not in message and "result" not in message and "error" not in message:
        return 'The request has no "method".'
    if "method" in message and not isinstance(message["method"], str):
        return 'The request\'s "method" must be a string.'
    return None


def _simple_request(message: dict[str, Any]) -> dict[str, Any] | None:
    if (
        message.get("method") not in FAST_METHODS
        or not isinstance(message.get("id"), str | int)
        or isinstance(message.get("id"), bool)
        or not isinstance(message.get("params", {}), dict | None)
    ):
        return None
    return message


def _reply(request_id: Any, result: bytes) -> Response:
    head = json.dumps({"jsonrpc": "2.0", "id": request_id}, separators=(",", ":")).encode()[:-1]
    return Response(head + b',"result":' + result + b"}", media_type="application/json")


def _error(request_id: Any, error: dict[str, Any], status: int = 200) -> Response:
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return Response(json.dumps(body).encode(), status_code=status, media_type="application/json")
