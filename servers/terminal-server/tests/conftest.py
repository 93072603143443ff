import pytest
from gaia_kit_testing import session_call
from terminal_server.server import server


@pytest.fixture
async def call(kit_env):
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke


@pytest.fixture
def env_ws(kit_env):
    return kit_env.workspace
