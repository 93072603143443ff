from gaia_kit_testing.fake_openai import llm_fixtures
from gaia_kit_testing.server_call import call_fixture
from intelligence_guard_server.server import server

no_llm, fake = llm_fixtures("GUARD", model="fake-guarder", api_key="sk-guard-secret")


call = call_fixture(server)
