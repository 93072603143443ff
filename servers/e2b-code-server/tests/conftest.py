import pytest
from e2b_code_server.server import server
from gaia_kit_testing import session_call
from gaia_kit_testing.server_call import call_fixture

call = call_fixture(server)


@pytest.fixture
async def call_s2(kit_env):
    """The same in a second session, s2, with its own workspace."""
    workspace = kit_env.root / "s2"
    workspace.mkdir()
    async with session_call(server, workspace, session_id="s2") as invoke:
        yield invoke
