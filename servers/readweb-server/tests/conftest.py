"""An MCP session; the loopback web is gaia_kit_testing.fixtures' fake_web fixture."""

from gaia_kit_testing.server_call import call_fixture
from readweb_server.server import server

call = call_fixture(server)
