"""The loopback arXiv (gaia_kit_testing.fake_arxiv) and an MCP session."""

import pytest
from gaia_kit_testing.fake_arxiv import FakeArxiv
from gaia_kit_testing.server_call import call_fixture
from parxiv_server.server import server


@pytest.fixture
def arxiv(kit_env, monkeypatch, fresh_http):
    fake = FakeArxiv()
    fake.start()
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("ARXIV_API_URL", f"{fake.base}/api/query")
    yield fake
    fake.stop()


call = call_fixture(server)
