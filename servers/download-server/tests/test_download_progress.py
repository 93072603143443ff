"""A download reports its bytes as progress to a client that asks, and its report is data too."""

import pytest
from download_server.server import server
from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from gaia_kit_testing import ok
from mcp import Client

pytestmark = pytest.mark.anyio


async def test_progress_in_bytes_then_a_structured_report(fake_web, kit_env):
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    size = 5 * 1024 * 1024
    meta = {SESSION_ID_KEY: "s1", WORKSPACE_KEY: str(kit_env.workspace)}
    async with Client(server) as client:
        result = await client.call_tool(
            "download_file",
            {"url": fake_web.url(f"/bytes/{size}"), "output_file_path": "big.bin"},
            progress_callback=on_progress,
            meta=meta,
        )
    assert "Download complete" in ok(result)
    assert result.structured_content["bytes"] == size and result.structured_content["saved_to"].endswith(
        "big.bin"
    )
    assert len(seen) >= 4 and all(total == size for _, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen) and seen[-1][0] <= size
