from gaia_kit_testing.server_call import call_fixture
from terminal_controller.server import server

call = call_fixture(server)
