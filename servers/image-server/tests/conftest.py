import pytest
from gaia_kit_testing import session_call
from gaia_kit_testing.fake_openai import llm_fixtures
from image_server.server import server

no_llm, fake = llm_fixtures("IMAGE", model="fake-vision", api_key="sk-image-secret")


@pytest.fixture
async def call(kit_env):
    """call(tool, **arguments) -> CallToolResult, through the MCP protocol, in session s1."""
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke
