"""openai-agents: `MCPServerStreamableHttp` on an `Agent`, tools as the agent gives them to the model
(strict schemas), each invoked as a model's tool call is; the string returned is what the model reads."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, RunContextWrapper
from agents.mcp import MCPServerStreamableHttp
from agents.tool_context import ToolContext
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args

# The SDK's default is 5 s, shorter than many calls take; docs/clients.md says to set this.
TIMEOUT_S = 660
# A call longer than that default: it must come back with its output.
SLOW_CALL = ("terminal-controller__execute_command", {"command": "sleep 7; echo slept", "timeout": 30})


async def agent_tools(url: str) -> tuple[MCPServerStreamableHttp, dict[str, Any]]:
    server = MCPServerStreamableHttp(
        params={"url": url, "timeout": TIMEOUT_S}, client_session_timeout_seconds=TIMEOUT_S
    )
    await server.connect()
    agent = Agent(name="gaia", mcp_servers=[server], mcp_config={"convert_schemas_to_strict": True})
    tools = await agent.get_all_tools(RunContextWrapper(context=None))
    return server, {tool.name: tool for tool in tools}


async def invoke(tool: Any, arguments: dict[str, Any]) -> str:
    raw = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=raw)
    return str(await tool.on_invoke_tool(context, raw))


async def drive(server_url: str, catalog_url: str) -> dict[str, Any]:
    server, catalog = await agent_tools(catalog_url)
    try:
        not_strict = [name for name, tool in catalog.items() if not tool.strict_json_schema]
        slow_name, slow_args = SLOW_CALL
        slow = await invoke(catalog[slow_name], slow_args)
    finally:
        await server.cleanup()
    server, tools = await agent_tools(server_url)
    try:
        names = list(tools)
        await invoke(tools[tool_named(names, WRITE)], write_args())
        read_back = await invoke(tools[tool_named(names, READ)], read_args())
        error = await invoke(tools[tool_named(names, READ)], WRONG_TYPE)
    finally:
        await server.cleanup()
    return {
        **record(tools=len(catalog), read_back=read_back, error=error, error_as="tool output string"),
        "not_strict": not_strict,
        "slow_call": slow,
    }
