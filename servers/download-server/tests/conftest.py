"""An MCP session; the loopback web is gaia_kit_testing.fixtures' fake_web fixture."""

from download_server.server import server
from gaia_kit_testing.server_call import call_fixture

call = call_fixture(server)
