"""gaia_kit.pages.search: backend choice, Google Custom Search paging and errors, SearXNG, the offline index."""

from __future__ import annotations

import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.settings import forget_settings
from gaia_kit.pages.indexing import build
from gaia_kit.pages.search import describe_backend, render, search_backend, web_search
from gaia_kit_testing.fake_search import FakePage, FakeSearch

pytestmark = pytest.mark.anyio

PAGES = [
    FakePage(f"Tower fact {n}", f"https://example.org/tower/{n}", f"The tower fact number {n}.")
    for n in range(25)
]
VARIABLES = ("SEARCH_BACKEND", "GOOGLE_API_KEY", "GOOGLE_CSE_ID", "SEARXNG_URL", "GAIA_CORPUS_PATH")


@pytest.fixture
def fake(kit_env, fresh_http, monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    with FakeSearch(PAGES) as fake:
        monkeypatch.setenv("GOOGLE_CSE_URL", fake.google_url)
        yield fake


@pytest.fixture
def google(fake, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", fake.key)
    monkeypatch.setenv("GOOGLE_CSE_ID", "engine-1")
    return fake


async def test_nothing_configured_names_every_variable(fake):
    with pytest.raises(ToolFailure) as failure:
        await web_search("tower", 5)
    for name in ("GOOGLE_API_KEY", "GOOGLE_CSE_ID", "SEARXNG_URL", "GAIA_CORPUS_PATH"):
        assert name in str(failure.value)
    assert describe_backend().startswith("none:")


async def test_auto_prefers_google_then_searxng_then_the_corpus(fake, monkeypatch):
    monkeypatch.setenv("GAIA_CORPUS_PATH", "/nowhere.sqlite")
    assert search_backend() == "corpus"
    monkeypatch.setenv("SEARXNG_URL", fake.searxng_url)
    forget_settings()
    assert search_backend() == "searxng"
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    forget_settings()
    assert search_backend() == "searxng"  # a key without an engine id is not Google
    monkeypatch.setenv("GOOGLE_CSE_ID", "cx")
    forget_settings()
    assert search_backend() == "google" and describe_backend().startswith("google")
    monkeypatch.setenv("SEARCH_BACKEND", "searxng")
    forget_settings()
    assert search_backend() == "searxng"


@pytest.mark.parametrize(
    ("backend", "needs"),
    [("google", "GOOGLE_API_KEY and GOOGLE_CSE_ID"), ("searxng", "SEARXNG_URL"), ("corpus", "GAIA_CORPUS_PATH"),
     ("bing", "not one of")],
)  # fmt: skip
async def test_a_forced_backend_without_its_settings_says_which(fake, monkeypatch, backend, needs):
    monkeypatch.setenv("SEARCH_BACKEND", backend)
    with pytest.raises(ToolFailure, match=needs):
        await web_search("tower", 5)


async def test_google_sends_the_options_and_pages_past_ten(google):
    found = await web_search("tower", 23, safe=False, language="fr", country="ca")
    assert found.backend == "google" and [r.url for r in found.results] == [p.url for p in PAGES[:23]]
    first, second, third = google.requests
    assert (first["num"], first["start"], second["start"], third["num"], third["start"]) == (
        "10",
        "1",
        "11",
        "3",
        "21",
    )
    assert (first["safe"], first["lr"], first["hl"], first["gl"], first["cx"]) == (
        "off",
        "lang_fr",
        "fr",
        "ca",
        "engine-1",
    )


async def test_google_with_no_items_is_an_empty_result(google):
    found = await web_search("zebra", 5)
    assert found.results == [] and "No results for 'zebra'" in render(found)


async def test_a_bad_google_key_names_the_variables(google, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "wrong")
    with pytest.raises(ToolFailure, match="API key not valid.*GOOGLE_API_KEY and GOOGLE_CSE_ID"):
        await web_search("tower", 5)


async def test_a_rate_limit_is_waited_out(google):
    google.throttle(2)
    assert len((await web_search("tower", 3)).results) == 3
    assert len(google.requests) == 3


async def test_a_rate_limit_that_outlasts_the_retries_says_try_later(google, monkeypatch):
    monkeypatch.setenv("GAIA_HTTP_RETRIES", "1")
    google.throttle(5)
    with pytest.raises(ToolFailure, match="rate-limiting.*try again later"):
        await web_search("tower", 3)


async def test_searxng_pages_and_sends_json_format(fake, monkeypatch):
    monkeypatch.setenv("SEARXNG_URL", fake.searxng_url + "/")
    found = await web_search("tower", 15, safe=True, language="de")
    assert found.backend == "searxng" and len(found.results) == 15
    assert [(q["format"], q["pageno"], q["safesearch"], q["language"]) for q in fake.requests] == [
        ("json", "1", "1", "de"), ("json", "2", "1", "de")
    ]  # fmt: skip


async def test_the_offline_index_answers_with_no_network(fake, monkeypatch, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Lighthouse\n\nThe tower of Pharos stood in Alexandria.")
    build(tmp_path / "docs", tmp_path / "index.sqlite")
    monkeypatch.setenv("GAIA_CORPUS_PATH", str(tmp_path / "index.sqlite"))
    found = await web_search("pharos tower", 5)
    assert found.backend == "corpus" and [r.title for r in found.results] == ["Lighthouse"]
    assert fake.requests == []


async def test_render_formats(google):
    found = await web_search("tower", 2)
    assert '"backend": "google"' in render(found, "json")
    assert render(found, "markdown").startswith("# Search results for: tower\n\n1. **[Tower fact 0]")
    assert "\n   https://example.org/tower/1\n" in render(found, "text")


async def test_an_empty_query_is_refused(google):
    with pytest.raises(ToolFailure, match="empty"):
        await web_search("  ", 5)
