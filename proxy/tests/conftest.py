"""Pool, process and app tests run the probe server (gaia_kit_testing.probe) as a real subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from gaia_env.app import HttpConfig, create_app
from gaia_env.gateway import Gateway, GatewayConfig
from gaia_env.pool import ServerPool
from gaia_env.registry import ServerSpec
from gaia_env.replica import PoolState
from gaia_kit_testing.probe import PROBE
from starlette.types import ASGIApp

PROBE_SPEC = ServerSpec(id="probe", command=("{python}", str(PROBE)), replicas=1, timeout=20)


@pytest.fixture(autouse=True)
def plain_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process gateways here run their servers unconfined: their datasets are pytest's 0700
    folders, which the servers' uid could not read. Confinement is tested through real gateways
    (tests/test_server_confinement.py, and every end-to-end test, which run confined)."""
    monkeypatch.setenv("GAIA_SERVER_CONFINE", "0")


@pytest.fixture
def probe_env(kit_env: SimpleNamespace) -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@pytest.fixture
async def start_pool(probe_env: dict[str, str]) -> AsyncIterator[Callable[..., ServerPool]]:
    """start_pool(**spec_fields) -> a started ServerPool of the probe, ready; closed after the test."""
    pools: list[ServerPool] = []

    async def start(**fields: object) -> ServerPool:
        pool = ServerPool(replace(PROBE_SPEC, **fields), probe_env)
        pools.append(pool)
        pool.start()
        await pool.wait_started(60)
        assert pool.state is PoolState.READY, pool.describe()
        return pool

    yield start
    for pool in pools:
        await pool.close()


@contextlib.asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """Run an ASGI app's lifespan (startup before the block, shutdown after), as uvicorn does."""
    inbox: asyncio.Queue[dict] = asyncio.Queue()
    outbox: asyncio.Queue[dict] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    task = asyncio.create_task(app(scope, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await outbox.get()
        await task


@pytest.fixture
async def live_gateway(
    kit_env: SimpleNamespace, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[SimpleNamespace]]]:
    """live_gateway(config=None, http=None, **spec_fields) -> the app over a gateway with the real probe
    server, started, and an httpx client for it (`.gateway`, `.client`, `.app`); stopped after the test."""
    stack = contextlib.AsyncExitStack()

    async def start(
        config: GatewayConfig | None = None, http: HttpConfig | None = None, **fields: object
    ) -> SimpleNamespace:
        config = config or GatewayConfig(tmp_path / "workspaces", kit_env.dataset)
        gateway = Gateway({"probe": replace(PROBE_SPEC, **fields)}, config)
        app = create_app(gateway, http or HttpConfig())
        await stack.enter_async_context(lifespan(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8080")
        )
        return SimpleNamespace(gateway=gateway, client=client, app=app)

    async with stack:
        yield start


async def _initialize(client: httpx.AsyncClient) -> str:
    """Open an MCP session (initialize, then notifications/initialized); its Mcp-Session-Id."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    reply = await client.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=headers
    )
    assert reply.status_code == 200, reply.text
    session = reply.headers["mcp-session-id"]
    notified = await client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**headers, "Mcp-Session-Id": session},
    )
    assert notified.status_code == 202, notified.text
    return session


@pytest.fixture
def mcp_initialize() -> Callable[[httpx.AsyncClient], Awaitable[str]]:
    """mcp_initialize(client) -> the Mcp-Session-Id of a new MCP session, initialized."""
    return _initialize
