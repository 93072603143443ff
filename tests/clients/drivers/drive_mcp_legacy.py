"""mcp 2.x `Client(url, mode="legacy")`."""

from drive_mcp import drive_in_mode


async def drive(server_url: str, catalog_url: str) -> dict:
    return await drive_in_mode("legacy", server_url, catalog_url)
