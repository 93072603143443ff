import pytest
from gaia_kit_testing.server_call import call_fixture
from terminal_server.server import server

call = call_fixture(server)


@pytest.fixture
def env_ws(kit_env):
    return kit_env.workspace
