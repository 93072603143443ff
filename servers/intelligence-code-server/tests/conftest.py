from gaia_kit_testing.fake_openai import llm_fixtures
from gaia_kit_testing.server_call import call_fixture
from intelligence_code_server.server import server

no_llm, fake = llm_fixtures("CODE", model="fake-coder", api_key="sk-code-secret")


call = call_fixture(server)
