"""Loopback Google Custom Search and SearXNG (gaia_kit_testing.fake_search) and an MCP session."""

import pytest
from gaia_kit_testing.fake_search import FakePage, FakeSearch
from gaia_kit_testing.server_call import call_fixture
from googlesearch_server.server import server

PAGES = [
    FakePage(
        "Eiffel Tower - Wikipedia",
        "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "A wrought-iron tower in Paris.",
    ),
    FakePage(
        "Eiffel Tower official site",
        "https://www.toureiffel.paris/en",
        "Tickets and opening hours of the tower.",
    ),
    FakePage("Tower Bridge", "https://www.towerbridge.org.uk/", "A bridge over the Thames in London."),
]


@pytest.fixture
def fake(kit_env, fresh_http, monkeypatch):
    for name in ("SEARCH_BACKEND", "GOOGLE_API_KEY", "GOOGLE_CSE_ID", "SEARXNG_URL", "GAIA_CORPUS_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    fake = FakeSearch(PAGES).start()
    monkeypatch.setenv("GOOGLE_CSE_URL", fake.google_url)
    monkeypatch.setenv("GOOGLE_API_KEY", fake.key)
    monkeypatch.setenv("GOOGLE_CSE_ID", "engine-1")
    yield fake
    fake.stop()


call = call_fixture(server)
