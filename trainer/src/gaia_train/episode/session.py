"""One MCP session per episode: its own session id, so its own workspace on the gateway.

The session travels in the URL (`/sessions/<id>/mcp` on the gateway `gateways` pins the episode to)
and in `X-Session-Id` (which load balancers that predate the URL form hash on). The tool catalog is listed once per endpoint (and minute) and shared; every call is checked
against it before it is sent (a wrong call gets a precise message back, not a round trip),
the session enforces a per-call
deadline, caps the text a call returns, and is closed whatever happens: the SDK ends its
transport, and a `DELETE /sessions/<id>` tells the gateway to drop the workspace. A busy answer
(a JSON-RPC error whose data says `retryAfter` seconds) is retried after that long, backing off,
for as long as the per-call deadline allows.

Environment faults are kept apart from the agent's mistakes. Opening a session is retried (the next
gateway at once, then all of them again after a backoff); what still fails raises
`EnvironmentUnavailable`. A call that fails because of the environment (the transport broke, the
gateway stayed busy past the call's deadline, the session's replica is gone) comes back as an
outcome with `fault` set: the episode ends there as an environment fault, which no trainer turns
into reward. A call the agent got wrong, a tool's own error and a tool that ran past the per-call
deadline are results the model reads, as before.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import ssl
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
from gaia_contract import (
    AUTH_TOKEN_ENV,
    AUTH_TOKEN_FILE_ENV,
    CLIENT_SESSION_HEADER,
    COST_KEY,
    RETRY_AFTER,
    SERVER_URL_ENV,
    SERVERS_ENV,
    SERVERS_HEADER,
    SESSION_GONE,
    TASK_KEY,
    WITHHELD_KEY,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, DiscoverResult, EmbeddedResource, ImageContent, TextContent, Tool

from ..row import MCP_SERVERS, MCP_TOOLS
from .gateways import Gateway, endpoints, gateways, mark_down, mark_up, ranked
from .toolcalls import ToolCall

log = logging.getLogger(__name__)

DEFAULT_MCP_URL = "http://127.0.0.1:8080/mcp"
CONNECTION_CLOSED = -32000
"""The MCP SDK's code for a request whose connection closed before its answer came."""
INTERNAL_ERROR = -32603
"""The SDK's stand-in for an HTTP error answer that is no JSON-RPC error (a load balancer's 502, a crash)."""
_FAULT_CODES = {SESSION_GONE, CONNECTION_CLOSED, INTERNAL_ERROR}
METHOD_NOT_FOUND = -32601
"""The SDK's stand-in for a 404 before any session: the endpoint does not exist."""
_SESSION_TERMINATED = "Session terminated"
"""The SDK's words for a 404 on a known MCP session: the gateway that held it restarted."""
MAX_BACKOFF_S = 30.0


class EnvironmentFault(RuntimeError):
    """The environment failed the episode (not the agent): it ends as Stop.ENVIRONMENT_FAULT."""


class EnvironmentUnavailable(EnvironmentFault):
    """The MCP endpoint could not be reached or refused to open a session, after the retries."""


class ToolSelectionError(ValueError):
    """The row names tools the gateway does not serve: a configuration error, never retried."""


@dataclass(frozen=True)
class McpSettings:
    url: str = DEFAULT_MCP_URL
    servers: str | None = None
    """Comma-separated server ids sent as the `MCP_SERVERS` header; None for all."""
    tools: tuple[str, ...] | None = None
    """Tool names the episode may see and call (a subset of the servers' tools); None for all."""
    call_timeout_s: float = 120.0
    max_output_chars: int = 8192
    auth_token: str | None = None
    mode: str = "auto"
    """mcp.Client connect mode: "auto" (negotiate once per endpoint, see `_connect_mode`), "legacy",
    or a protocol version to adopt without asking."""
    open_attempts: int = 4
    """Rounds over the gateways to open a session before the episode ends as an environment fault."""
    open_backoff_s: float = 1.0
    """Wait after the first failed round; doubled after each (with jitter)."""
    task_question: str | None = None
    """The question the episode works on, sent with every call in `_meta` (TASK_KEY), never to the
    model: the gateway's web tools withhold pages that quote it (`with_task`)."""

    def __post_init__(self) -> None:
        endpoints(self.url)  # a comma list of gateways, each an http(s) URL
        if self.open_attempts < 1:
            raise ValueError(f"open_attempts must be at least 1, got {self.open_attempts}")
        if self.open_backoff_s < 0:
            raise ValueError(f"open_backoff_s must not be negative, got {self.open_backoff_s}")
        if self.call_timeout_s <= 0:
            raise ValueError(f"call_timeout_s must be positive, got {self.call_timeout_s}")
        if self.max_output_chars < 100:
            raise ValueError(f"max_output_chars must be at least 100, got {self.max_output_chars}")

    @classmethod
    def from_env(cls, **overrides: Any) -> McpSettings:
        """MCP_SERVER_URL, MCP_SERVERS and MCP_AUTH_TOKEN (or MCP_AUTH_TOKEN_FILE), then explicit overrides."""
        values: dict[str, Any] = {
            "url": os.environ.get(SERVER_URL_ENV) or DEFAULT_MCP_URL,
            "servers": os.environ.get(SERVERS_ENV) or None,
            "auth_token": os.environ.get(AUTH_TOKEN_ENV) or _token_from_file(),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def _token_from_file() -> str | None:
    path = os.environ.get(AUTH_TOKEN_FILE_ENV)
    if not path:
        return None
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(
            f"{AUTH_TOKEN_FILE_ENV}={path} cannot be read ({exc.strerror}): it must name a file readable on "
            "every node that runs episodes"
        ) from None
    if not token:
        raise ValueError(f"{AUTH_TOKEN_FILE_ENV}={path} is empty")
    return token


def _names(value: Any, key: str) -> list[str]:
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = list(value.tolist() if hasattr(value, "tolist") else value)
    else:
        raise ValueError(
            f"extra_info[{key!r}] must be a comma-separated string or a list of names, got {value!r}"
        )
    if not all(isinstance(item, str) for item in items):
        raise ValueError(f"extra_info[{key!r}] must hold names (strings), got {value!r}")
    return [item.strip() for item in items if item.strip()]


def for_row(settings: McpSettings, extra_info: Any) -> McpSettings:
    """The settings of one dataset row: its own `mcp_servers` and `mcp_tools` in `extra_info`, if any.

    A row that names servers gets exactly those (sent as `MCP-Servers`), so its prompt lists only
    their schemas; `mcp_tools` narrows further to named tools. Rows without them use `settings`.
    """
    if not isinstance(extra_info, dict):
        return settings
    servers = _names(extra_info.get(MCP_SERVERS), MCP_SERVERS)
    tools = _names(extra_info.get(MCP_TOOLS), MCP_TOOLS)
    return replace(
        settings,
        servers=",".join(servers) if servers else settings.servers,
        tools=tuple(tools) if tools else settings.tools,
    )


def with_task(settings: McpSettings, extra_info: Any) -> McpSettings:
    """The settings with the row's question as the task its session serves (extra_info["question"])."""
    question = extra_info.get("question") if isinstance(extra_info, dict) else None
    if not isinstance(question, str) or not question.strip():
        return settings
    return replace(settings, task_question=question)


@dataclass
class ToolOutcome:
    text: str
    is_error: bool
    seconds: float
    fault: str | None = None
    """Why the environment failed this call (the episode cannot go on); None for any result the model reads."""
    cost_usd: float = 0.0
    """What the call cost on paid backends, as the gateway priced it (its result's COST_KEY)."""
    paid_calls: dict[str, int] = field(default_factory=dict)
    """Requests this call sent to each paid backend."""
    withheld: int = 0
    """Results the benchmark-copy guard withheld in this call."""


@cache
def _ssl_context() -> ssl.SSLContext:
    # One context for every episode: building one reads the CA bundle (about 17 ms), which
    # at 64 episodes a second would be a core's worth of work.
    return httpx2.create_ssl_context()


# What "auto" found for each endpoint: one discover probe per process and endpoint, not one per
# episode (at 64 concurrent episodes the probes are a good part of the client's work).
_NEGOTIATED: dict[tuple[str, str | None], tuple[str, DiscoverResult | None]] = {}


# The tool catalog of each endpoint and server selection, shared by the episodes of a process for
# a minute: it is the same for every session, and listing it is one request per episode less.
CATALOG_TTL_S = 60.0
_CATALOG: dict[tuple[str, str | None], tuple[float, dict[str, Tool]]] = {}


def _connect_mode(settings: McpSettings) -> tuple[str, DiscoverResult | None]:
    if settings.mode != "auto":
        return settings.mode, None
    return _NEGOTIATED.get((settings.url, settings.servers), ("auto", None))


def _remember_mode(settings: McpSettings, client: Client) -> None:
    if settings.mode != "auto" or (settings.url, settings.servers) in _NEGOTIATED:
        return
    discovered = client.session.discover_result
    _NEGOTIATED[(settings.url, settings.servers)] = (
        (client.protocol_version, discovered) if discovered is not None else ("legacy", None)
    )


# The tags the episode loop and the reward read the transcript by. A tool's text (a web page, a file)
# that holds them could otherwise forge a turn boundary or an answer in the decoded trajectory.
_STRUCTURE_TAG_RE = re.compile(r"<(/?)(tool_call|tool_response|answer|think)>")


def neutralize_tags(text: str) -> str:
    """`<answer>` in a tool's output becomes `&lt;answer&gt;`: still readable, never structure."""
    return _STRUCTURE_TAG_RE.sub(r"&lt;\1\2&gt;", text)


def cap_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[output truncated: showing {limit} of {len(text)} characters; "
        "ask the tool for a later part (offset, page or start_index arguments) to read on]"
    )


def openai_tool_schema(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.input_schema,
        },
    }


def _render_content(result: CallToolResult) -> str:
    parts = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[binary resource {resource.uri}]")
        else:
            parts.append(f"[{block.type} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


@lru_cache(maxsize=1024)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    # Shared by every episode: the catalog is the same for all of them.
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _retry_after(exc: MCPError) -> float | None:
    """Seconds a busy answer asks the caller to wait, or None for any other error."""
    data = exc.error.data
    told = data.get(RETRY_AFTER) if isinstance(data, dict) else None
    return float(told) if isinstance(told, int | float) and not isinstance(told, bool) and told >= 0 else None


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    leaves: list[BaseException] = []
    for inner in group.exceptions:
        leaves.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
    return leaves


def _describe_parameters(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if not props:
        return "it takes no parameters"
    items = []
    for name, spec in props.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        items.append(f"{name} ({kind}{', required' if name in required else ''})")
    return "its parameters are " + ", ".join(items)


class McpToolSession:
    """Async context manager around one MCP client session; see the module docstring."""

    def __init__(
        self,
        settings: McpSettings,
        session_id: str | None = None,
        *,
        end_session: bool = True,
        gateway: Gateway | None = None,
    ):
        """`end_session=False` leaves the workspace to whoever else uses `session_id` (a team's other roles);
        `gateway` pins the session to the gateway that holds that workspace (no other one is tried)."""
        self.settings = settings
        self.session_id = session_id or f"gaia-train-{uuid.uuid4().hex}"
        self.end_session = end_session
        self.gateway = gateway
        self.tools: dict[str, Tool] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._client: Client | None = None
        self._stack = AsyncExitStack()

    def _headers(self, gateway: Gateway) -> dict[str, str]:
        headers = {CLIENT_SESSION_HEADER: self.session_id}
        if gateway.host:
            headers["Host"] = gateway.host
        if self.settings.servers:
            headers[SERVERS_HEADER] = self.settings.servers
        if self.settings.auth_token:
            headers["Authorization"] = f"Bearer {self.settings.auth_token}"
        return headers

    async def __aenter__(self) -> McpToolSession:
        """Open the session on the episode's gateway: the next one in its order when one fails, every one
        again after a backoff, `open_attempts` rounds in all; then EnvironmentUnavailable."""
        pinned = self.gateway
        failures: list[str] = []
        for attempt in range(self.settings.open_attempts):
            if attempt:
                await anyio.sleep(self.settings.open_backoff_s * 2 ** (attempt - 1) * random.uniform(1, 1.5))
            candidates = [pinned] if pinned else ranked(await gateways(self.settings.url), self.session_id)
            for gateway in candidates:
                try:
                    await self._open_on(gateway)
                except EnvironmentUnavailable as exc:
                    failures.append(str(exc))
                    if _refused(exc.__cause__):
                        mark_down(gateway)
                    continue
                mark_up(gateway)
                self.gateway = gateway
                return self
        tried = "its gateway" if pinned else f"every gateway of {self.settings.url}"
        raise EnvironmentUnavailable(
            f"{failures[-1]} ({len(failures)} attempts over {self.settings.open_attempts} rounds on {tried})"
        )

    async def _open_on(self, gateway: Gateway) -> None:
        """The session URL; an endpoint that does not know it (404: not a gaia-env gateway, or one from before
        the URL form) is then used as it is, keyed by X-Session-Id alone, for the rest of the process."""
        if gateway.url not in _WITHOUT_SESSION_URLS:
            url = gateway.session_url(self.session_id)
            try:
                await self._open(gateway, url)
                return
            except EnvironmentUnavailable as exc:
                if url == gateway.url or not _not_found(exc.__cause__):
                    raise
            log.warning(
                "%s has no session URLs (%s answered 404): using it with X-Session-Id", gateway.url, url
            )
            _WITHOUT_SESSION_URLS.add(gateway.url)
        await self._open(gateway, gateway.url)

    async def _open(self, gateway: Gateway, url: str) -> None:
        self._stack = AsyncExitStack()
        await self._stack.__aenter__()
        try:
            # The MCP SDK's own client defaults (30 s, 300 s to read a stream), with a shared TLS context.
            http = await self._stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=self._headers(gateway),
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    verify=_ssl_context(),
                )
            )
            if self.end_session:
                # Pushed before the client, so it runs after the client has closed.
                self._stack.push_async_callback(self._delete_session, http, gateway, url)
            transport = streamable_http_client(url, http_client=http)
            mode, prior = _connect_mode(self.settings)
            self._client = await self._stack.enter_async_context(
                Client(transport, mode=mode, prior_discover=prior)
            )
            _remember_mode(self.settings, self._client)
            if not await self._list_tools():
                # Nothing reached the gateway yet (negotiation and catalog were known): knock once, so a
                # gateway that refuses connections is skipped now, not found dead at the first call.
                await http.get(gateway.health_url(), timeout=5.0)
        except BaseException as exc:
            self._client = None
            try:
                await self._close(exc)
            except BaseException as closing:
                if closing is not exc:
                    raise
            if isinstance(exc, EnvironmentUnavailable | ToolSelectionError) or not isinstance(exc, Exception):
                raise
            causes = _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
            reason = "; ".join(f"{type(c).__name__}: {c}" for c in causes)
            raise EnvironmentUnavailable(
                f"could not open an MCP session at {gateway.url} "
                f"(servers: {self.settings.servers or 'all'}): {reason}. "
                "Is the gateway running (gaia-env serve) and MCP_SERVER_URL right?"
            ) from (causes[0] if len(causes) == 1 else exc)

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._client = None
        if exc is not None:
            await self._close(exc)
            return
        try:
            await self._close(None)
        except Exception as closing:  # a transport that broke (a fault the episode already ended on)
            causes = _leaves(closing) if isinstance(closing, BaseExceptionGroup) else [closing]
            log.warning(
                "closing session %s: %s",
                self.session_id,
                "; ".join(f"{type(c).__name__}: {c}" for c in causes),
            )

    async def _close(self, exc: BaseException | None) -> None:
        try:
            await self._stack.__aexit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)
        except BaseExceptionGroup as group:
            # The SDK's task groups wrap an error raised in the episode; hand back the error itself.
            leaves = _leaves(group)
            if exc is not None and leaves == [exc]:
                raise exc from None
            # A connection that broke under a call fails the SDK's transport task group, which cancels
            # the episode: that is the environment's doing.
            if all(isinstance(leaf, _TRANSPORT_ERRORS) for leaf in leaves):
                if self.gateway is not None and any(_refused(leaf) for leaf in leaves):
                    mark_down(self.gateway)
                reason = "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in leaves[:3])
                raise EnvironmentFault(f"the transport to the gateway broke: {reason}") from group
            raise

    async def _list_tools(self) -> bool:
        """The catalog (shared for a minute); whether it was listed from the gateway just now."""
        key = (self.settings.url, self.settings.servers)
        cached = _CATALOG.get(key)
        if cached is not None and time.monotonic() - cached[0] < CATALOG_TTL_S:
            self.tools = self._selected(cached[1])
            return False
        assert self._client is not None
        tools: dict[str, Tool] = {}
        cursor = None
        for _ in range(100):
            page = await self._client.list_tools(cursor=cursor)
            tools.update((tool.name, tool) for tool in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        if not tools:
            raise EnvironmentUnavailable(
                f"the MCP endpoint {self.settings.url} lists no tools for servers {self.settings.servers or 'all'}"
            )
        _CATALOG[key] = (time.monotonic(), tools)
        self.tools = self._selected(tools)
        return True

    def _selected(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        wanted = self.settings.tools
        if wanted is None:
            return tools
        missing = sorted(set(wanted) - set(tools))
        if missing:
            raise ToolSelectionError(
                f"the row asks for tools {', '.join(missing)}, which {self.settings.url} does not serve for "
                f"servers {self.settings.servers or 'all'}; it serves: {', '.join(sorted(tools))}"
            )
        return {name: tools[name] for name in wanted}

    async def _delete_session(self, http: Any, gateway: Gateway, url: str) -> None:
        """Tell the gateway the episode is over, so it drops the workspace now, not at its idle TTL."""
        # DELETE /sessions/<id>; the X-Session-Id header's DELETE on an endpoint used without the URL form.
        target = (gateway.session_resource(self.session_id) if url != gateway.url else None) or gateway.url
        # Shielded: a cancelled episode (deadline, Ctrl-C) must still release its workspace.
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            try:
                response = await http.delete(target, timeout=5.0)
                if response.status_code >= 500:
                    log.warning("DELETE %s answered %s", target, response.status_code)
            except Exception as exc:  # never turn cleanup into a failed episode
                log.warning("DELETE %s failed: %s", target, exc)

    def openai_tools(self) -> list[dict[str, Any]]:
        return [openai_tool_schema(tool) for tool in self.tools.values()]

    def check(self, call: ToolCall) -> str | None:
        """Why `call` cannot be sent, or None when it matches a listed tool's schema."""
        if call.error:
            return call.error
        tool = self.tools.get(call.name)
        if tool is None:
            names = ", ".join(sorted(self.tools))
            return f"Unknown tool {call.name!r}. The available tools are: {names}."
        validator = self._validators.get(call.name)
        if validator is None:
            validator = self._validators[call.name] = _validator(
                json.dumps(tool.input_schema, sort_keys=True)
            )
        problems = sorted(validator.iter_errors(call.arguments), key=lambda e: list(e.path))
        if problems:
            details = "; ".join(
                (f"{'/'.join(str(p) for p in e.path)}: " if e.path else "") + e.message for e in problems[:5]
            )
            return (
                f"Invalid arguments for {call.name}: {details}. "
                f"{_describe_parameters(tool.input_schema).capitalize()}."
            )
        return None

    async def _call_until_served(self, call: ToolCall, deadline: float) -> CallToolResult:
        """Send the call; after a busy answer wait as told (longer each time, with jitter) and send it
        again, unless the wait would pass the deadline: then the gateway stayed busy too long (_BusyTooLong)."""
        assert self._client is not None
        attempt = 0
        question = self.settings.task_question
        meta = {TASK_KEY: {"question": question}} if question else None
        while True:
            try:
                return await self._client.call_tool(call.name, call.arguments, meta=meta)
            except MCPError as exc:
                told = _retry_after(exc)
                if told is None:
                    raise
                wait = min(MAX_BACKOFF_S, told * 1.5**attempt) * random.uniform(1, 1.25)
                if anyio.current_time() + wait >= deadline:
                    raise _BusyTooLong(str(exc)) from exc
            attempt += 1
            await anyio.sleep(wait)

    async def call(self, call: ToolCall) -> ToolOutcome:
        """Run one call: a result the model reads, or an outcome whose `fault` ends the episode."""
        started = time.perf_counter()
        problem = self.check(call)
        if problem is not None:
            return ToolOutcome(f"Error: {problem}", True, time.perf_counter() - started)
        if self._client is None:
            raise RuntimeError("McpToolSession.call used outside its async with block")
        timeout = self.settings.call_timeout_s
        fault = None
        accounts: dict[str, Any] = {}
        try:
            with anyio.fail_after(timeout):
                result = await self._call_until_served(call, anyio.current_time() + timeout)
        except TimeoutError:
            # The tool ran past the deadline: often the call's own doing (a huge download), so the model is told.
            text, is_error = (
                f"Error: {call.name} did not finish within {timeout:g} s and was cancelled.",
                True,
            )
        except _BusyTooLong as exc:
            fault = f"the gateway stayed busy past the call's {timeout:g} s deadline ({exc})"
        except MCPError as exc:
            if exc.error.code in _FAULT_CODES or exc.error.message == _SESSION_TERMINATED:
                fault = f"the gateway failed during {call.name}: {exc} (code {exc.error.code})"
            else:
                text, is_error = f"Error: {call.name} was refused: {exc}", True
        except Exception as exc:
            if _refused(exc) and self.gateway is not None:
                mark_down(self.gateway)
            fault = f"the transport to the gateway failed during {call.name}: {type(exc).__name__}: {exc}"
        else:
            text, is_error = _render_content(result), bool(result.is_error)
            accounts = _accounts(result.meta)
            if not text.strip():
                text = f"({call.name} returned no output)"
        if fault is not None:
            log.warning("environment fault in session %s: %s", self.session_id, fault)
            return ToolOutcome(f"Error: {fault}", True, time.perf_counter() - started, fault=fault)
        return ToolOutcome(
            cap_text(neutralize_tags(text), self.settings.max_output_chars),
            is_error,
            time.perf_counter() - started,
            **accounts,
        )


def _accounts(meta: Any) -> dict[str, Any]:
    """What the gateway reported about a call in its result's `_meta`: cost, paid calls, withheld results."""
    if not isinstance(meta, dict):
        return {}
    found: dict[str, Any] = {}
    cost = meta.get(COST_KEY)
    if isinstance(cost, dict):
        found["cost_usd"] = float(cost.get("usd") or 0.0)
        backends = cost.get("backends") if isinstance(cost.get("backends"), dict) else {}
        found["paid_calls"] = {
            str(name): int(use.get("calls", 0)) for name, use in backends.items() if isinstance(use, dict)
        }
    withheld = meta.get(WITHHELD_KEY)
    if isinstance(withheld, list):
        found["withheld"] = len(withheld)
    return found


_TRANSPORT_ERRORS = (httpx2.TransportError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)

_WITHOUT_SESSION_URLS: set[str] = set()
"""Endpoints that answered 404 to their session URL: used as they are by the episodes that follow."""


def _not_found(exc: BaseException | None) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_not_found(leaf) for leaf in _leaves(exc))
    return isinstance(exc, MCPError) and exc.error.code == METHOD_NOT_FOUND


class _BusyTooLong(Exception):
    """The gateway answered busy until waiting again would pass the call's deadline."""


def _refused(exc: BaseException | None) -> bool:
    """Whether `exc` (or an error inside it) is a connection the gateway refused or never accepted."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:  # along the cause chain, which may loop
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup):
            return any(_refused(leaf) for leaf in _leaves(exc))
        if isinstance(exc, httpx2.ConnectError | ConnectionRefusedError):
            return True
        exc = exc.__cause__
    return False
