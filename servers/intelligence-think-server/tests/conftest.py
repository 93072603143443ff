import pytest
from gaia_kit_testing import session_call
from gaia_kit_testing.fake_openai import llm_fixtures
from intelligence_think_server.server import server

no_llm, fake = llm_fixtures("THINK", model="fake-thinker", api_key="sk-think-secret")


@pytest.fixture
async def call(kit_env):
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke
