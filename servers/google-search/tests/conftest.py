"""Loopback search APIs (gaia_kit_testing.fake_search), a loopback web (gaia_kit_testing.fake_web), an MCP session."""

import pytest
from gaia_kit_testing.fake_search import FakePage, FakeSearch
from gaia_kit_testing.fake_web import FakeWeb
from gaia_kit_testing.server_call import call_fixture
from google_search.server import server

VARIABLES = ("SEARCH_BACKEND", "GOOGLE_API_KEY", "GOOGLE_CSE_ID", "SEARXNG_URL", "GAIA_CORPUS_PATH",
             "READWEB_BACKEND", "JINA_API_KEY", "TAVILY_API_KEY")  # fmt: skip


@pytest.fixture
def web(kit_env, fresh_http, monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    with FakeWeb() as fake_web:
        pages = [
            FakePage("Moon landing facts", fake_web.url("/article.html"), "Apollo 11 landed on the Moon.")
        ]
        with FakeSearch(pages) as fake_search:
            monkeypatch.setenv("SEARXNG_URL", fake_search.searxng_url)
            fake_web.search = fake_search
            yield fake_web


call = call_fixture(server)
