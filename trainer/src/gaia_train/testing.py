"""Loopback stand-ins for smoke runs, tests and benchmarks: nothing here leaves 127.0.0.1.

`LoopbackServer` runs an ASGI app with uvicorn on a free port in a background thread.
`chat_completions_app` is an OpenAI-compatible `/v1/chat/completions` whose replies come from a
function of the request, so a test can play a scripted agent against the real episode loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Reply = Callable[[dict[str, Any]], "dict[str, Any] | Awaitable[dict[str, Any]]"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackServer:
    """`with LoopbackServer(app) as server:` serves `app` at `server.url` until the block ends."""

    def __init__(self, app: Any, startup_timeout_s: float = 20.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._timeout = startup_timeout_s

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        deadline = time.monotonic() + self._timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the loopback server on port {self.port} did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def tool_call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    """One structured tool call as an OpenAI-compatible server returns it."""
    return {
        "id": call_id or f"call_{uuid.uuid4().hex[:8]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def chat_completions_app(reply: Reply, delay_s: float = 0.0) -> Starlette:
    """`/v1/chat/completions` answering each request with `reply(request_json)` after `delay_s`.

    `reply` returns the assistant message ({"content": ..., "tool_calls": [...]}); it may add
    "finish_reason" and "status" (an HTTP error status to answer instead) keys.
    """

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        if delay_s:
            await asyncio.sleep(delay_s)
        message = reply(body)
        if inspect.isawaitable(message):
            message = await message
        message = dict(message)
        status = message.pop("status", 200)
        if status != 200:
            return JSONResponse({"error": {"message": message.get("content", "error")}}, status_code=status)
        finish = message.pop("finish_reason", "tool_calls" if message.get("tool_calls") else "stop")
        return JSONResponse(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "model": body.get("model", "scripted"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
                ],
                "usage": {
                    "prompt_tokens": 0,
                    "completion_tokens": len(str(message.get("content") or "")) // 4 + 1,
                    "total_tokens": 0,
                },
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
