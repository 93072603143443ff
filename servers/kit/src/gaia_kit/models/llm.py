"""One OpenAI-compatible client for every server that asks a model (code, think, guard, media, audio).

Each server has a prefix X and reads `X_LLM_BASE_URL`, `X_LLM_MODEL_NAME` and `X_LLM_API_KEY`, each
falling back to `MCP_LLM_*` (the names agents' .env files already use). `X_LLM_TIMEOUT` (seconds for
one whole call, retries included) and `X_LLM_MAX_TOKENS` (a cap on the answer) fall back the same way.

The base URL is the operator's configuration, never a tool argument, so it is not put through an
SSRF guard: a local vLLM on 127.0.0.1 is the common case. The API key goes into the Authorization
header and nowhere else: error text and logs are scrubbed of it.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.retry import retry_wait
from gaia_kit.core.settings import settings
from gaia_kit.core.usage import charge, check_budget

logger = logging.getLogger("gaia_kit.models.llm")

DEFAULT_TIMEOUT_S = 180.0
DEFAULT_MAX_TOKENS = 4096
MAX_ATTEMPTS = 4
BACKOFF_BASE_S = 0.5
RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}
FALLBACK = "MCP"

Message = dict[str, Any]


@dataclass(frozen=True)
class LLMConfig:
    prefix: str
    base_url: str | None
    model: str | None
    api_key: str | None = field(repr=False)
    timeout_s: float
    max_tokens: int | None
    """The operator's cap on answer length, when set; callers' own limits are lowered to it."""
    sources: dict[str, str]
    """For each setting, the variable it was read from (for --check and error text)."""

    @property
    def missing(self) -> list[str]:
        names = {"base_url": "BASE_URL", "model": "MODEL_NAME"}
        return [
            f"{self.prefix}_LLM_{suffix} (or {FALLBACK}_LLM_{suffix})"
            for attr, suffix in names.items()
            if not getattr(self, attr)
        ]

    @property
    def endpoint(self) -> str:
        base = (self.base_url or "").rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"


class LLMSettings(BaseSettings):
    """One prefix's X_LLM_* variables; `_settings_for(prefix)` is the class that reads them. A blank
    variable counts as unset, so the shared MCP_LLM_* one answers instead."""

    model_config = SettingsConfigDict(extra="ignore")

    base_url: str | None = None
    """The OpenAI-compatible endpoint, usually ending in /v1."""
    model_name: str | None = None
    api_key: str | None = Field(None, repr=False)
    """Sent in the Authorization header and nowhere else."""
    timeout: float | None = Field(None, gt=0)
    """Seconds for one whole call, retries included."""
    max_tokens: int | None = Field(None, gt=0)
    """A cap on the answer; callers' own limits are lowered to it."""

    @field_validator("*", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return (value.strip() or None) if isinstance(value, str) else value


@functools.cache
def _settings_for(prefix: str) -> type[LLMSettings]:
    config = SettingsConfigDict(env_prefix=f"{prefix}_LLM_", extra="ignore")
    return type(
        f"{prefix.title()}LLMSettings", (LLMSettings,), {"model_config": config, "__module__": __name__}
    )


def llm_config(prefix: str) -> LLMConfig:
    """The settings for servers with prefix `prefix` (CODE, THINK, ...): each its own X_LLM_* variable,
    else the shared MCP_LLM_* one (read only when needed, as a bad shared value must not fail a server
    whose own values are set)."""
    prefix = prefix.upper()
    own = settings(_settings_for(prefix))
    sources: dict[str, str] = {}

    def read(field: str, suffix: str) -> Any:
        value = getattr(own, field)
        if value is not None:
            sources[suffix] = f"{prefix}_LLM_{suffix}"
            return value
        value = getattr(settings(_settings_for(FALLBACK)), field)
        if value is not None:
            sources[suffix] = f"{FALLBACK}_LLM_{suffix}"
        return value

    timeout = read("timeout", "TIMEOUT")
    return LLMConfig(
        prefix=prefix,
        base_url=read("base_url", "BASE_URL"),
        model=read("model_name", "MODEL_NAME"),
        api_key=read("api_key", "API_KEY"),
        timeout_s=DEFAULT_TIMEOUT_S if timeout is None else timeout,
        max_tokens=read("max_tokens", "MAX_TOKENS"),
        sources=sources,
    )


def llm_status(prefix: str) -> dict[str, Any]:
    """What `--check` reports: the endpoint and model in use, or the variables still to set."""
    try:
        config = llm_config(prefix)
    except ToolFailure as exc:
        return {"backend": "none", "missing": [], "notes": [str(exc)]}
    if config.missing:
        return {
            "backend": "none",
            "missing": config.missing,
            "notes": [f"Set {' and '.join(config.missing)} to an OpenAI-compatible endpoint and model."],
        }
    host = httpx.URL(config.endpoint).host
    key = f"key from {config.sources['API_KEY']}" if config.api_key else "no API key"
    return {
        "backend": "openai-compatible",
        "missing": [],
        "notes": [
            f"model {config.model} at {host} (from {config.sources['MODEL_NAME']} and "
            f"{config.sources['BASE_URL']}), {key}, {config.timeout_s:.0f} s per call"
        ],
    }


def configured(prefix: str) -> LLMConfig:
    """The settings, or a ToolFailure naming the variables to set; a tool that prepares costly input
    for the model (frames, transcripts) calls it first, so a missing model fails at once."""
    config = llm_config(prefix)
    if config.missing:
        raise ToolFailure(
            f"No language model is configured for this tool: set {' and '.join(config.missing)} "
            f"(and {prefix.upper()}_LLM_API_KEY or {FALLBACK}_LLM_API_KEY if the endpoint needs a key)."
        )
    return config


def model_line(prefix: str) -> str:
    """One line for a capabilities tool: the model in use, or the variables still to set."""
    config = llm_config(prefix)
    if config.missing:
        return f"No model configured: set {', '.join(config.missing)}."
    return f"Model: {config.model}."


def conversation(system: str, prompt: str) -> list[Message]:
    """The opening of a tool's request: its instructions as the system message, then the prompt."""
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


async def chat(
    messages: list[Message],
    *,
    prefix: str,
    max_tokens: int | None = None,
    temperature: float | None = None,
    timeout: float | None = None,
) -> str:
    """Send a chat completion request; return the answer text, or raise ToolFailure in one sentence.

    `timeout` (seconds, retries included) can only shorten the configured deadline.
    """
    config = configured(prefix)
    deadline = min(config.timeout_s, timeout) if timeout else config.timeout_s
    limit = max_tokens or DEFAULT_MAX_TOKENS
    if config.max_tokens:
        limit = min(limit, config.max_tokens)
    body: dict[str, Any] = {"model": config.model, "messages": messages, "max_tokens": limit}
    if temperature is not None:
        body["temperature"] = temperature
    backend = model_backend(prefix)
    check_budget(backend)
    try:
        with anyio.fail_after(deadline):
            data = _json(config, await post(config, config.endpoint, time.monotonic() + deadline, json=body))
    except TimeoutError:
        raise ToolFailure(
            f"The model {config.model} did not answer within {deadline:.0f} s; try again, ask a shorter "
            f"question, or raise {prefix.upper()}_LLM_TIMEOUT."
        ) from None
    charge(backend, **_token_counts(data))
    return _answer_text(config, data)


def model_backend(prefix: str) -> str:
    """The paid backend a server's model calls are counted under: `model:think`, `model:image`, ..."""
    return f"model:{prefix.lower()}"


def _token_counts(data: Any) -> dict[str, int | None]:
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return {}
    return {"input_tokens": usage.get("prompt_tokens"), "output_tokens": usage.get("completion_tokens")}


async def post(config: LLMConfig, url: str, deadline: float, **request: Any) -> httpx.Response:
    """POST `request` (httpx's json=, data=, files=) to an endpoint of `config`'s server, retrying
    transport errors and busy answers (Retry-After first) until `deadline` (time.monotonic());
    the first answer below HTTP 400, or a ToolFailure in one sentence."""
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    # trust_env=False: a proxy from the environment must not see the key or reroute a local endpoint.
    timeout = httpx.Timeout(max(1.0, deadline - time.monotonic()), connect=15.0)
    async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            last = attempt == MAX_ATTEMPTS
            try:
                response = await client.post(url, headers=headers, **request)
            except httpx.TransportError as exc:
                reason = _scrub(config, f"{type(exc).__name__}: {exc}".rstrip(": "))
                if last:
                    raise ToolFailure(
                        f"Cannot reach the model endpoint {_host(config)} ({reason}); check "
                        f"{config.sources['BASE_URL']} and that the server is running."
                    ) from None
                await _backoff(config, attempt, None, deadline, reason)
                continue
            if response.status_code in RETRY_STATUSES and not last:
                await _backoff(config, attempt, response, deadline, f"HTTP {response.status_code}")
                continue
            if response.status_code >= 400:
                raise ToolFailure(_http_error(config, response))
            return response
    raise AssertionError("unreachable")


def _json(config: LLMConfig, response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise ToolFailure(
            f"The model endpoint {_host(config)} answered with something other than JSON; "
            f"check that {config.sources['BASE_URL']} points at an OpenAI-compatible API (…/v1)."
        ) from None


async def _backoff(
    config: LLMConfig, attempt: int, response: httpx.Response | None, deadline: float, reason: str
) -> None:
    """Sleep before the next attempt: Retry-After when the server gives one, else exponential with jitter."""
    wait = retry_wait(
        attempt, response.headers if response is not None else None, BACKOFF_BASE_S, cap_s=30.0
    ).seconds
    left = deadline - time.monotonic()
    if wait >= left:
        raise ToolFailure(
            f"The model endpoint {_host(config)} is busy ({reason}) and asked to wait {wait:.0f} s, "
            f"longer than the {left:.0f} s left of this call's deadline; try again later."
        )
    logger.warning("LLM %s: %s, retrying in %.1f s (attempt %d)", config.model, reason, wait, attempt)
    await anyio.sleep(wait)


def _http_error(config: LLMConfig, response: httpx.Response) -> str:
    status = response.status_code
    detail = _scrub(config, _error_detail(response))
    where = f"The model endpoint {_host(config)} answered HTTP {status}"
    if status in (401, 403):
        key_var = config.sources.get("API_KEY", f"{config.prefix}_LLM_API_KEY")
        return f"{where} (not authorised: {detail}); check {key_var}."
    if status == 404:
        return (
            f"{where} ({detail}); check {config.sources['BASE_URL']} (it usually ends in /v1) and that "
            f"the model {config.model} ({config.sources['MODEL_NAME']}) exists there."
        )
    if status in RETRY_STATUSES:
        return f"{where} ({detail}) on every attempt; try again later."
    return f"{where} ({detail}); the request was refused, for example a prompt longer than the model accepts."


def _error_detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:200] or "no details"
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error or data.get("detail")
    return str(message or data)[:300]


def _answer_text(config: LLMConfig, data: Any) -> str:
    try:
        choice = data["choices"][0]
        content = choice["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ToolFailure(
            f"The model endpoint {_host(config)} answered without a chat completion (no choices); check "
            f"that {config.sources['BASE_URL']} points at an OpenAI-compatible API."
        ) from None
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    # Reasoning models served by vLLM and others put their chain of thought in <think> tags.
    text = re.sub(r"^\s*<think>.*?</think>", "", content or "", flags=re.DOTALL).strip()
    if not text:
        reason = choice.get("finish_reason") or "unknown"
        raise ToolFailure(
            f"The model {config.model} returned an empty answer (finish reason: {reason}); try again "
            f"or raise {config.prefix}_LLM_MAX_TOKENS."
        )
    if choice.get("finish_reason") == "length":
        text += f"\n\n[The answer was cut off at the token limit; raise {config.prefix}_LLM_MAX_TOKENS for longer ones.]"
    return text


def _host(config: LLMConfig) -> str:
    try:
        url = httpx.URL(config.endpoint)
        return f"{url.host}:{url.port}" if url.port else url.host
    except (httpx.InvalidURL, TypeError):
        return "(invalid URL)"


def _scrub(config: LLMConfig, text: str) -> str:
    """Whatever a server or library echoes back, the key must not reach the agent."""
    return text.replace(config.api_key, "***") if config.api_key else text
