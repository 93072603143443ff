"""What an agent will see at MCP_SERVER_URL, checked from the training node: `gaia-train check-env`.

`describe()` lists the servers the gateway runs (from its /ready page) and the tools one episode
sees for the selection, and tries one call that needs no arguments; `mcp_config()` is the MCP
client configuration a custom agent loop takes (the `mcpServers` form MCP clients read).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
from gaia_contract import SERVERS_HEADER_AS_SENT

from .episode.session import EnvironmentUnavailable, McpSettings, McpToolSession
from .episode.toolcalls import ToolCall

# Tried first when present: cheap, read-only, and they say something about the environment.
PREFERRED_SAMPLE_TOOLS = ("list_allowed_directories", "get_current_time", "list_directory")


@dataclass
class ServerState:
    name: str
    state: str
    tools: int


@dataclass
class EnvironmentReport:
    url: str
    selection: str | None
    servers: list[ServerState] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    sample_tool: str | None = None
    sample_ok: bool = False
    sample_text: str = ""
    sample_ms: float = 0.0
    ready_error: str | None = None

    def lines(self) -> list[str]:
        ready = sum(s.state == "ready" for s in self.servers)
        out = [
            f"gaia-env at {self.url} (servers: {self.selection or 'all'}): {ready} of {len(self.servers)} "
            f"servers ready, {len(self.tools)} tools for this selection"
        ]
        if self.ready_error:
            out.append(f"  (the server list is unknown: {self.ready_error})")
        out += [f"  {s.name:<28} {s.state:<10} {s.tools} tools" for s in self.servers]
        if self.sample_tool is None:
            out.append("sample call: no tool of this selection runs without arguments; the listing worked")
        else:
            verdict = "ok" if self.sample_ok else "FAILED"
            out.append(
                f"sample call: {self.sample_tool} {verdict} in {self.sample_ms:.0f} ms: {self.sample_text}"
            )
        return out


def mcp_config(settings: McpSettings | None = None, name: str = "gaia-env") -> dict[str, Any]:
    """The MCP client configuration of the environment, with the selection and the token as headers."""
    settings = settings or McpSettings.from_env()
    headers = {}
    if settings.servers:
        headers[SERVERS_HEADER_AS_SENT] = settings.servers
    if settings.auth_token:
        headers["Authorization"] = f"Bearer {settings.auth_token}"
    return {"mcpServers": {name: {"type": "streamable-http", "url": settings.url, "headers": headers}}}


def _ready_url(mcp_url: str) -> str:
    parts = urlsplit(mcp_url)
    return f"{parts.scheme}://{parts.netloc}/ready"


async def _servers(settings: McpSettings, report: EnvironmentReport) -> None:
    headers = {"Authorization": f"Bearer {settings.auth_token}"} if settings.auth_token else {}
    try:
        async with httpx2.AsyncClient(timeout=10.0, headers=headers) as http:
            response = await http.get(_ready_url(settings.url))
        states = response.json()["servers"]
    except Exception as exc:  # an older gateway, a proxy in front: the listing still tells a lot
        report.ready_error = f"{_ready_url(settings.url)}: {type(exc).__name__}: {exc}"
        return
    wanted = set(settings.servers.split(",")) if settings.servers else None
    report.servers = [
        ServerState(name, str(state.get("state")), int(state.get("tools") or 0))
        for name, state in sorted(states.items())
        if wanted is None or name in wanted
    ]


def _sample_tool(session: McpToolSession) -> str | None:
    for name in PREFERRED_SAMPLE_TOOLS:
        if name in session.tools:
            return name
    for name, tool in sorted(session.tools.items()):
        if not (tool.input_schema or {}).get("required"):
            return name
    return None


async def describe(settings: McpSettings | None = None, *, sample_call: bool = True) -> EnvironmentReport:
    """The servers and tools one episode sees, and whether a call goes through; raises when unreachable."""
    settings = settings or McpSettings.from_env()
    report = EnvironmentReport(settings.url, settings.servers)
    await _servers(settings, report)
    async with McpToolSession(settings, session_id=f"gaia-train-check-{uuid.uuid4().hex[:12]}") as session:
        report.tools = sorted(session.tools)
        report.sample_tool = _sample_tool(session) if sample_call else None
        if report.sample_tool is not None:
            started = time.perf_counter()
            outcome = await session.call(ToolCall("check", report.sample_tool, {}, "{}"))
            report.sample_ms = (time.perf_counter() - started) * 1000
            report.sample_ok = not outcome.is_error
            text = " ".join(outcome.text.split())
            report.sample_text = text if len(text) <= 120 else text[:120] + "..."
    return report


__all__ = ["EnvironmentReport", "EnvironmentUnavailable", "describe", "mcp_config"]
