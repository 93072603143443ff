"""An MCP session; the loopback web is gaia_kit_testing.fixtures' fake_web fixture."""

import pytest
from gaia_kit_testing import session_call
from readweb_server.server import server


@pytest.fixture
async def call(kit_env):
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke
