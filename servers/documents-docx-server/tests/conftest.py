import pytest
from documents_docx_server.server import server
from gaia_kit_testing import session_call


@pytest.fixture
def env(kit_env):
    return kit_env


@pytest.fixture
async def call(kit_env):
    """call(tool, **arguments) -> CallToolResult, through the MCP protocol, in session s1."""
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke
