import pytest
from documents_docx_server.server import server
from gaia_kit_testing.server_call import call_fixture


@pytest.fixture
def env(kit_env):
    return kit_env


call = call_fixture(server)
