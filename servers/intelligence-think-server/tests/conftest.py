from gaia_kit_testing.fake_openai import llm_fixtures
from gaia_kit_testing.server_call import call_fixture
from intelligence_think_server.server import server

no_llm, fake = llm_fixtures("THINK", model="fake-thinker", api_key="sk-think-secret")


call = call_fixture(server)
