import pytest
from gaia_kit_testing import session_call
from gaia_kit_testing.fake_openai import llm_fixtures
from intelligence_code_server.server import server

no_llm, fake = llm_fixtures("CODE", model="fake-coder", api_key="sk-code-secret")


@pytest.fixture
async def call(kit_env):
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke
