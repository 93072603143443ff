"""langchain-mcp-adapters: `MultiServerMCPClient({...}).get_tools()`, the documented way (a new MCP
session per call); each tool invoked with a tool call, as an agent's ToolNode does, answers a
ToolMessage, the model's view."""

from __future__ import annotations

from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args


def client_for(url: str) -> MultiServerMCPClient:
    return MultiServerMCPClient({"gaia": {"transport": "streamable_http", "url": url}})


async def invoke(tool: Any, arguments: dict[str, Any]) -> Any:
    return await tool.ainvoke({"type": "tool_call", "name": tool.name, "args": arguments, "id": "call-1"})


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))


async def drive(server_url: str, catalog_url: str) -> dict[str, Any]:
    listed = len(await client_for(catalog_url).get_tools())
    tools = {tool.name: tool for tool in await client_for(server_url).get_tools()}
    names = list(tools)
    await invoke(tools[tool_named(names, WRITE)], write_args())
    read_back = text_of(await invoke(tools[tool_named(names, READ)], read_args()))
    wrong = await invoke(tools[tool_named(names, READ)], WRONG_TYPE)
    return record(
        tools=listed,
        read_back=read_back,
        error=text_of(wrong),
        error_as=f"ToolMessage status={getattr(wrong, 'status', None)}",
    )
