"""The `mcp` SDK's own `Client` (mcp 2.x), in the mode it is given."""

from __future__ import annotations

from typing import Any

from mcp import Client
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args


def text_of(result: Any) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "text", None))


async def drive_in_mode(mode: str, server_url: str, catalog_url: str) -> dict[str, Any]:
    async with Client(catalog_url, mode=mode) as client:
        listed = len((await client.list_tools()).tools)
    async with Client(server_url, mode=mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        await client.call_tool(tool_named(names, WRITE), write_args())
        read_back = text_of(await client.call_tool(tool_named(names, READ), read_args()))
        wrong = await client.call_tool(tool_named(names, READ), WRONG_TYPE)
    return record(
        tools=listed, read_back=read_back, error=text_of(wrong), error_as=f"result isError={wrong.is_error}"
    )
