"""The loopback MediaWiki (gaia_kit_testing.fake_wiki) and an MCP session."""

import pytest
from gaia_kit_testing.fake_wiki import FakeWiki
from gaia_kit_testing.server_call import call_fixture
from wiki_server.server import server


@pytest.fixture
def wiki(kit_env, monkeypatch, fresh_http):
    fake = FakeWiki()
    fake.start()
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("WIKI_API_URL", fake.api_url)
    yield fake
    fake.stop()


call = call_fixture(server)
