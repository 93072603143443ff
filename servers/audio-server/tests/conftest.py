from audio_server.server import server
from gaia_kit_testing.server_call import call_fixture

call = call_fixture(server)
