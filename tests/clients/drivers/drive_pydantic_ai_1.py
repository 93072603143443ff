"""pydantic-ai 1.x (mcp 1.x): `MCPServerStreamableHTTP(url)` on an `Agent`."""

from pydantic_ai.mcp import MCPServerStreamableHTTP
from pydantic_ai_agent import drive_with


async def drive(server_url: str, catalog_url: str) -> dict:
    return await drive_with(MCPServerStreamableHTTP, server_url, catalog_url)
