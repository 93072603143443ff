"""Floods the front bounds: MCP sessions that never call a tool, and oversized request headers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import httpx
import pytest
from gaia_env.app import HttpConfig, create_app
from gaia_env.gateway import Gateway, GatewayConfig
from gaia_env.registry import ServerSpec
from gaia_env.sessions import SessionLimits

pytestmark = pytest.mark.anyio


def config(tmp_path: Path, **limits: float) -> GatewayConfig:
    return GatewayConfig(
        tmp_path / "workspaces", tmp_path, session_limits=SessionLimits(min_free_disk_mb=0, **limits)
    )


async def test_headers_over_the_limit_get_431_at_once(tmp_path: Path) -> None:
    gateway = Gateway({"probe": ServerSpec("probe", ("true",))}, config(tmp_path))
    transport = httpx.ASGITransport(app=create_app(gateway, HttpConfig()))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
        assert (await client.get("/health", headers={"X-Padding": "a" * 8_000})).status_code == 200
        for path in ("/health", "/mcp"):
            reply = await client.post(path, json={}, headers={"X-Padding": "a" * 100_000})
            assert reply.status_code == 431, (path, reply.status_code)
            message = reply.json()["error"]["message"]
            assert message.startswith("Request headers are ") and "over the limit of 16384" in message
            assert "GAIA_MAX_HEADER_KB" in message
    assert not gateway.sessions._sessions


async def test_mcp_sessions_without_a_tool_call_are_capped(
    live_gateway, mcp_initialize, tmp_path: Path
) -> None:
    live = await live_gateway(config(tmp_path, max_unused_sessions=3, unused_ttl_s=3600))
    sessions = [await mcp_initialize(live.client) for _ in range(3)]
    refused = await live.client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        headers={"Accept": "application/json"},
    )
    assert refused.status_code == 503
    message = refused.json()["error"]["message"]
    assert "maximum of 3 MCP sessions that have not called a tool yet (GAIA_MAX_UNUSED_SESSIONS)" in message
    assert live.gateway.sessions.unused() == 3
    # A session that calls a tool is a session like any other: it frees its place among the unused.
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}},
    }
    used = await live.client.post(
        "/mcp", json=call, headers={"Mcp-Session-Id": sessions[0], "Accept": "application/json"}
    )
    assert used.status_code == 200 and not used.json()["result"]["isError"]
    await mcp_initialize(live.client)
    assert live.gateway.sessions.unused() == 3 and len(live.gateway.sessions) == 1


async def test_mcp_sessions_without_a_tool_call_expire_quickly(
    live_gateway, mcp_initialize, tmp_path: Path
) -> None:
    live = await live_gateway(config(tmp_path, max_unused_sessions=100, unused_ttl_s=0.5))
    sessions = [await mcp_initialize(live.client) for _ in range(3)]
    with anyio.fail_after(30):  # the reaper runs every 0.5 s here
        while live.gateway.sessions.unused():
            await asyncio.sleep(0.05)
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
    gone = await live.client.post(
        "/mcp", json=listing, headers={"Mcp-Session-Id": sessions[0], "Accept": "application/json"}
    )
    assert gone.status_code == 404  # the SDK's transport ended with it: nothing left in memory
