"""An MCP session; the loopback web is gaia_kit_testing.fixtures' fake_web fixture."""

import pytest
from download_server.server import server
from gaia_kit_testing import session_call


@pytest.fixture
async def call(kit_env):
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke
