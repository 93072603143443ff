"""A `Policy` over any OpenAI-compatible chat endpoint (vLLM, SGLang, a hosted API).

Tools go in the request's `tools`, so the server's chat template renders them as it would in
training. A reply's tool calls are taken from `tool_calls` when the server parses them and
from `<tool_call>` blocks in the text when it does not. Transient failures (connection
errors, timeouts, 408/409/425/429/5xx) are retried with exponential backoff and jitter,
honouring Retry-After; anything else ends the episode with a ModelError.
"""

from __future__ import annotations

import asyncio
import random
import ssl
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx

from ..episode.loop import Generation, ModelError
from ..episode.toolcalls import ToolCall, parse_arguments

TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class EndpointSettings:
    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int = 4096
    """Completion tokens per turn."""
    max_response_tokens: int | None = None
    """Completion tokens per episode; None for no limit beyond the turns."""
    request_timeout_s: float = 600.0
    retries: int = 4
    backoff_s: float = 1.0

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"--base-url must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ValueError("--model is required: the model name the endpoint serves")
        if self.max_tokens < 1:
            raise ValueError(f"--max-tokens must be at least 1, got {self.max_tokens}")
        if self.max_response_tokens is not None and self.max_response_tokens < 1:
            raise ValueError(f"--max-response-tokens must be at least 1, got {self.max_response_tokens}")
        if self.retries < 0:
            raise ValueError(f"--retries must not be negative, got {self.retries}")

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


@cache
def ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def episode_client(timeout_s: float) -> httpx.AsyncClient:
    """A small client per episode: one shared pool for hundreds of concurrent episodes spends
    its time matching requests to connections (httpcore's pool scan grows with both)."""
    return httpx.AsyncClient(timeout=timeout_s, verify=ssl_context(), limits=httpx.Limits(max_connections=4))


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Hosted APIs reject a `name` on tool messages (vLLM and SGLang do not need it), and
    # reasoning is kept in the trajectory only, never sent back.
    def keep(message: dict[str, Any], key: str) -> bool:
        return key != "reasoning_content" and not (message.get("role") == "tool" and key == "name")

    return [{k: v for k, v in m.items() if keep(m, k)} for m in messages]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(float(value), 60.0) if value is not None else None
    except ValueError:
        return None


@dataclass
class Spent:
    """Completion tokens an episode has used: one per episode, shared by a team's roles."""

    completion_tokens: int = 0


class OpenAIPolicy:
    def __init__(self, client: httpx.AsyncClient, settings: EndpointSettings, spent: Spent | None = None):
        self.client = client
        self.settings = settings
        # max_response_tokens bounds the whole episode: a team's roles draw on one count.
        self.spent = spent or Spent()
        self.tools: list[dict[str, Any]] = []
        self.turn = 0

    async def start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        self.tools = tools

    def _max_tokens(self) -> int:
        if self.settings.max_response_tokens is None:
            return self.settings.max_tokens
        return max(
            1, min(self.settings.max_tokens, self.settings.max_response_tokens - self.spent.completion_tokens)
        )

    async def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}
        last = ""
        for attempt in range(self.settings.retries + 1):
            wait = self.settings.backoff_s * (2**attempt) * (0.5 + random.random())
            try:
                response = await self.client.post(
                    self.settings.chat_url,
                    json=payload,
                    headers=headers,
                    timeout=self.settings.request_timeout_s,
                )
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError:
                        raise ModelError(
                            f"{self.settings.chat_url} answered 200 with a body that is not JSON"
                        ) from None
                body = response.text[:300]
                if response.status_code not in TRANSIENT_STATUS:
                    raise ModelError(f"{self.settings.chat_url} answered {response.status_code}: {body}")
                last = f"HTTP {response.status_code}: {body}"
                wait = _retry_after(response) or wait
            if attempt < self.settings.retries:
                await asyncio.sleep(wait)
        raise ModelError(f"{self.settings.chat_url} failed {self.settings.retries + 1} times; last: {last}")

    async def generate(self, messages: list[dict[str, Any]]) -> Generation:
        self.turn += 1
        payload: dict[str, Any] = {
            "model": self.settings.model,
            "messages": _wire_messages(messages),
            "max_tokens": self._max_tokens(),
        }
        if self.tools:
            payload["tools"] = self.tools
        if self.settings.temperature is not None:
            payload["temperature"] = self.settings.temperature
        data = await self._post(payload)
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"the endpoint's answer has no choices[0].message: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        self.spent.completion_tokens += int(usage.get("completion_tokens") or 0)
        structured = message.get("tool_calls") or None
        calls = None
        if structured:
            calls = []
            for index, entry in enumerate(structured):
                function = entry.get("function") or {}
                call_id = entry.get("id") or f"call_{self.turn}_{index}"
                name = function.get("name") or ""
                if not name:
                    calls.append(
                        ToolCall(
                            call_id,
                            "invalid_tool_call",
                            raw_arguments=str(function.get("arguments")),
                            error="The tool call has no function name.",
                        )
                    )
                else:
                    calls.append(parse_arguments(call_id, name, function.get("arguments") or "{}"))
        return Generation(
            text=message.get("content") or "",
            tool_calls=calls,
            truncated=choice.get("finish_reason") == "length",
            reasoning=message.get("reasoning_content") or message.get("reasoning"),
        )

    async def observe(self, tool_messages: list[dict[str, Any]]) -> bool:
        return self.budget_left()

    def budget_left(self) -> bool:
        limit = self.settings.max_response_tokens
        return limit is None or self.spent.completion_tokens < limit
