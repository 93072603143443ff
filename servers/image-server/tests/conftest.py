from gaia_kit_testing.fake_openai import llm_fixtures
from gaia_kit_testing.server_call import call_fixture
from image_server.server import server

no_llm, fake = llm_fixtures("IMAGE", model="fake-vision", api_key="sk-image-secret")


call = call_fixture(server)
