"""mcp-use: `MCPClient.from_dict({"mcpServers": ...})` and the LangChain tools `MCPAgent` gives its model
(`LangChainAdapter.create_tools`); their string answer is what the model reads."""

from __future__ import annotations

from typing import Any

from mcp_use import MCPClient
from mcp_use.agents.adapters import LangChainAdapter
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args


async def tools_of(url: str) -> tuple[MCPClient, dict[str, Any]]:
    client = MCPClient.from_dict({"mcpServers": {"gaia": {"url": url}}})
    tools = await LangChainAdapter().create_tools(client)
    return client, {tool.name: tool for tool in tools}


async def drive(server_url: str, catalog_url: str) -> dict[str, Any]:
    client, catalog = await tools_of(catalog_url)
    await client.close_all_sessions()
    client, tools = await tools_of(server_url)
    try:
        names = list(tools)
        await tools[tool_named(names, WRITE)].ainvoke(write_args())
        read_back = str(await tools[tool_named(names, READ)].ainvoke(read_args()))
        error = str(await tools[tool_named(names, READ)].ainvoke(WRONG_TYPE))
    finally:
        await client.close_all_sessions()
    return record(tools=len(catalog), read_back=read_back, error=error, error_as="tool output string")
