"""The loopback Wayback Machine (gaia_kit_testing.fake_wayback) and an MCP session."""

import pytest
from gaia_kit_testing.fake_wayback import FakeWayback
from gaia_kit_testing.server_call import call_fixture
from wayback_server.server import server


@pytest.fixture
def wayback(kit_env, fresh_http, monkeypatch):
    fake = FakeWayback()
    fake.start()
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("GAIA_HTTP_BACKOFF_BASE_S", "0.01")
    monkeypatch.setenv("WAYBACK_AVAILABILITY_URL", fake.url("/wayback/available"))
    monkeypatch.setenv("WAYBACK_CDX_URL", fake.url("/cdx/search/cdx"))
    monkeypatch.setenv("WAYBACK_SNAPSHOT_URL", fake.url("/web"))
    yield fake
    fake.stop()


call = call_fixture(server)
