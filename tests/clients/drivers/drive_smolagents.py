"""smolagents: `ToolCollection.from_mcp({"url": ..., "transport": "streamable-http"})`; a tool that
fails raises, and the agent shows the model "Error executing tool ...: <the exception>"."""

from __future__ import annotations

import asyncio
from typing import Any

from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args
from smolagents import ToolCollection


def collection(url: str) -> Any:
    return ToolCollection.from_mcp({"url": url, "transport": "streamable-http"}, trust_remote_code=True)


def scenario(server_url: str, catalog_url: str) -> dict[str, Any]:
    with collection(catalog_url) as catalog:
        listed = len(catalog.tools)
    with collection(server_url) as served:
        tools = {tool.name: tool for tool in served.tools}
        names = list(tools)
        tools[tool_named(names, WRITE)](**write_args())
        read_back = str(tools[tool_named(names, READ)](**read_args()))
        try:
            answer = tools[tool_named(names, READ)](**WRONG_TYPE)
        except Exception as exc:
            return record(
                tools=listed, read_back=read_back, error=str(exc), error_as=f"raises {type(exc).__name__}"
            )
    return record(tools=listed, read_back=read_back, error=str(answer), error_as="tool output")


async def drive(server_url: str, catalog_url: str) -> dict[str, Any]:
    # from_mcp runs its own event loop in a thread; keep it off this one.
    return await asyncio.to_thread(scenario, server_url, catalog_url)
