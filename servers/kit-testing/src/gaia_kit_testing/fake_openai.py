"""A loopback OpenAI-compatible chat endpoint for tests: it checks each request and plays a script.

    with FakeOpenAI(model="m", api_key="k") as fake:
        fake.answer("42")                       # the next request gets this completion
        fake.fail(429, retry_after="0")         # ... or this error
        fake.reply_with(lambda body: "...")     # ... or what this function makes of the request
        fake.hold.clear()                       # requests wait (a slow model) until fake.hold.set()
        monkeypatch.setenv("MCP_LLM_BASE_URL", fake.base_url)
        ...
        assert fake.requests[0]["messages"][-1]["content"] == "..."

It speaks the real wire format (POST /v1/chat/completions, Bearer auth, JSON with `choices`) and
answers like the real API when the model name or key is wrong, so a client that sends the wrong
variable's value fails the test. It runs uvicorn in a thread, on 127.0.0.1 and a free port.

A server that asks a model gets its `no_llm` and `fake` fixtures in one line of tests/conftest.py:

    no_llm, fake = llm_fixtures("THINK", model="fake-thinker", api_key="sk-think-secret")

`chat_completions_app(reply)` is the same API for the trainer's tests and benchmarks: an agent model
whose every reply (assistant message, tool calls) comes from a function of the request, so a test can
play a scripted agent against the real episode loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .loopback import LoopbackServer

LLM_SUFFIXES = ("BASE_URL", "MODEL_NAME", "API_KEY", "TIMEOUT", "MAX_TOKENS")

Responder = Callable[[dict[str, Any]], str]
"""Makes a scripted completion's content from the request body (for agents whose next step
depends on what the previous one saw, such as a browser agent reading a page)."""


class FakeOpenAI:
    def __init__(self, model: str = "fake-model", api_key: str | None = "sk-test-key"):
        self.model = model
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: deque[tuple[int, Any, dict[str, str]]] = deque()
        self._lock = threading.Lock()
        self.hold = threading.Event()
        """Cleared by a test, requests wait until it is set again: a slow model."""
        self.hold.set()
        self.arrived = threading.Event()
        """Set when a request has been received (and recorded)."""
        app = Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"])])
        self._loopback = LoopbackServer(app)
        self.port = self._loopback.port
        self.base_url = self._loopback.url("/v1")

    def answer(self, content: str, finish_reason: str = "stop") -> None:
        """Script the next completion."""
        self._push(200, _completion(content, finish_reason), {})

    def reply_with(self, responder: Responder) -> None:
        """Script the next completion as `responder(request_body)`, computed when the request arrives."""
        self._push(200, responder, {})

    def fail(self, status: int, message: str = "scripted failure", retry_after: str | None = None) -> None:
        """Script the next reply as an API error."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self._push(status, {"error": {"message": message, "type": "fake_error"}}, headers)

    def env(self, prefix: str = "MCP") -> dict[str, str]:
        """The variables that point a server at this fake."""
        values = {f"{prefix}_LLM_BASE_URL": self.base_url, f"{prefix}_LLM_MODEL_NAME": self.model}
        if self.api_key:
            values[f"{prefix}_LLM_API_KEY"] = self.api_key
        return values

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        return len(self._script)

    def _push(self, status: int, body: Any, headers: dict[str, str]) -> None:
        with self._lock:
            self._script.append((status, body, headers))

    async def _complete(self, request: Request) -> JSONResponse:
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.")
        body = await request.json()
        if body.get("model") != self.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and m.get("role") in {"system", "user", "assistant"} and "content" in m
            for m in messages
        ):
            return _error(400, "messages must be a list of {role, content} objects.")
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            if not self._script:
                return _error(500, "The fake has no scripted answer left.")
            status, reply, headers = self._script.popleft()
        self.arrived.set()
        while not self.hold.is_set():
            await anyio.sleep(0.01)
        if callable(reply):
            reply = _completion(reply(body), "stop")
        return JSONResponse(reply, status_code=status, headers=headers)

    def __enter__(self) -> FakeOpenAI:
        self._loopback.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hold.set()
        self._loopback.stop()


def _completion(content: str, finish_reason: str) -> dict[str, Any]:
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": finish_reason,
    }
    return {"id": "chatcmpl-fake", "object": "chat.completion", "choices": [choice]}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)


def llm_fixtures(prefix: str, *, model: str, api_key: str) -> tuple[Any, Any]:
    """`no_llm` and `fake` fixtures for a server whose model settings are `prefix`_LLM_*.

    Assign both in conftest.py under those names (pytest finds fixtures by the name they are bound to).
    """

    @pytest.fixture
    def no_llm(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
        """No model configured, whatever the machine's environment says."""
        for name in (f"{p}_LLM_{s}" for p in ("MCP", prefix) for s in LLM_SUFFIXES):
            monkeypatch.delenv(name, raising=False)
        return monkeypatch

    @pytest.fixture
    def fake(no_llm: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
        """A loopback OpenAI-compatible endpoint, configured through the server's own variables."""
        with FakeOpenAI(model=model, api_key=api_key) as server:
            for name, value in server.env(prefix).items():
                no_llm.setenv(name, value)
            yield server

    return no_llm, fake


Reply = Callable[[dict[str, Any]], "dict[str, Any] | Awaitable[dict[str, Any]]"]


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
