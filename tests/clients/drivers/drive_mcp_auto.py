"""mcp 2.x `Client(url, mode="auto")`."""

from drive_mcp import drive_in_mode


async def drive(server_url: str, catalog_url: str) -> dict:
    return await drive_in_mode("auto", server_url, catalog_url)
