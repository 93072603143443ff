"""pydantic-ai 2: `MCPToolset(url)` on an `Agent` (tool errors become a retry prompt by default)."""

from pydantic_ai.mcp import MCPToolset
from pydantic_ai_agent import drive_with


async def drive(server_url: str, catalog_url: str) -> dict:
    return await drive_with(MCPToolset, server_url, catalog_url)
