"""A conversion reports each page it starts as progress, to a client that asks."""

import pytest
from documents_pdf_server.server import server
from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from gaia_kit_testing import ok
from gaia_kit_testing.fake_web import make_pdf
from mcp import Client

pytestmark = pytest.mark.anyio


async def test_pages_are_progress(kit_env):
    (kit_env.workspace / "five.pdf").write_bytes(make_pdf([f"Page number {n}" for n in range(1, 6)]))
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    meta = {SESSION_ID_KEY: "s1", WORKSPACE_KEY: str(kit_env.workspace)}
    async with Client(server) as client:
        result = await client.call_tool(
            "convert_document_to_markdown",
            {"file_path": "five.pdf"},
            progress_callback=on_progress,
            meta=meta,
        )
    assert "Page number 5" in ok(result)
    # The server polls the worker's pipe: each poll sends the latest page, the last one comes at the end.
    assert all(total == 5 for _, total, _ in seen)
    assert [d for d, _, _ in seen] == sorted({d for d, _, _ in seen})
    assert seen[-1] == (4.0, 5.0, "converting page 5 of 5")
