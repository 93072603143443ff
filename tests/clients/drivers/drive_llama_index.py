"""llama-index-tools-mcp: `BasicMCPClient(url)` and `McpToolSpec(client).to_tool_list_async()`, the
documented way; each tool call opens its own MCP session."""

from __future__ import annotations

from typing import Any

from llama_index.tools.mcp import BasicMCPClient, McpToolSpec
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args


async def drive(server_url: str, catalog_url: str) -> dict[str, Any]:
    listed = len(await McpToolSpec(client=BasicMCPClient(catalog_url, timeout=60)).to_tool_list_async())
    tools = await McpToolSpec(client=BasicMCPClient(server_url, timeout=60)).to_tool_list_async()
    by_name = {tool.metadata.name: tool for tool in tools}
    names = list(by_name)
    await by_name[tool_named(names, WRITE)].acall(**write_args())
    read_back = (await by_name[tool_named(names, READ)].acall(**read_args())).content
    wrong = await by_name[tool_named(names, READ)].acall(**WRONG_TYPE)
    return record(
        tools=listed,
        read_back=read_back,
        error=wrong.content,
        error_as=f"ToolOutput is_error={wrong.is_error}",
    )
