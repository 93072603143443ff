"""fastmcp 4 `Client(url)`: `call_tool` raises `ToolError` on an isError result (its default)."""

from __future__ import annotations

from typing import Any

from drive_mcp import text_of
from fastmcp import Client
from fastmcp.exceptions import ToolError
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args


async def drive(server_url: str, catalog_url: str) -> dict[str, Any]:
    async with Client(catalog_url) as client:
        listed = len(await client.list_tools())
    async with Client(server_url) as client:
        names = [tool.name for tool in await client.list_tools()]
        await client.call_tool(tool_named(names, WRITE), write_args())
        read_back = text_of(await client.call_tool(tool_named(names, READ), read_args()))
        try:
            await client.call_tool(tool_named(names, READ), WRONG_TYPE)
        except ToolError as exc:
            return record(tools=listed, read_back=read_back, error=str(exc), error_as="raises ToolError")
    return record(tools=listed, read_back=read_back, error="", error_as="no error")
