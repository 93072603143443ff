"""google-search: search and read_webpage against the loopback web, replay, and the offline index."""

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.pages.indexing import build
from gaia_kit.web import http as kit_http
from gaia_kit_testing import failed, ok
from gaia_kit_testing.fake_search import write_zim
from google_search.server import check

pytestmark = pytest.mark.anyio


async def test_search_then_read_the_result(web, call):
    text = ok(await call("search", query="apollo moon", num=3))
    assert "Moon landing facts" in text and web.search.requests[0]["q"] == "apollo moon"
    page = ok(await call("read_webpage", url=web.url("/article.html")))
    assert page.startswith("# Moon landing facts\n\nURL: ") and "Sea of Tranquility" in page
    assert "Copyright" not in page


async def test_long_pages_come_in_pages(web, call):
    first = ok(await call("read_webpage", url=web.url("/long.html"), max_length=1000))
    assert "Call again with start_index=1000" in first
    assert (
        ok(await call("read_webpage", url=web.url("/long.html"), start_index=1000, max_length=1000)) != first
    )


async def test_read_failures_are_one_sentence(web, call):
    assert "nothing at that address" in failed(await call("read_webpage", url=web.url("/missing.html")))
    assert "no readable text" in failed(await call("read_webpage", url=web.url("/empty.html")))
    assert "Only http and https" in failed(await call("read_webpage", url="ftp://example.org/x"))


async def test_missing_search_settings_name_the_variables(web, call, monkeypatch):
    monkeypatch.delenv("SEARXNG_URL")
    message = failed(await call("search", query="moon"))
    assert all(
        name in message for name in ("GOOGLE_API_KEY", "GOOGLE_CSE_ID", "SEARXNG_URL", "GAIA_CORPUS_PATH")
    )


async def test_doctor_reports_both_backends(web):
    assert check() == {
        "backend": f"search: searxng (JSON API at {web.search.searxng_url}); pages: local",
        "missing": [],
    }


async def test_recorded_search_and_page_replay_with_the_sites_gone(web, call, monkeypatch):
    calls = [("search", {"query": "apollo"}), ("read_webpage", {"url": web.url("/article.html")})]
    recorded = [ok(await call(name, **args)) for name, args in calls]
    web.search.stop()
    web.stop()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    kit_http.forget_shared_http()
    assert [ok(await call(name, **args)) for name, args in calls] == recorded


async def test_the_offline_index_searches_and_reads_with_no_network(
    kit_env, fresh_http, call, monkeypatch, tmp_path
):
    # replay with an empty cache: any network request would fail the call
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    zim = write_zim(tmp_path / "wiki.zim", {
        "Apollo 11": "<html><head><title>Apollo 11</title></head><body><p>Apollo 11 was the first crewed "
                     "Moon landing, on 20 July 1969.</p></body></html>",
    })  # fmt: skip
    build(zim, tmp_path / "index.sqlite")
    monkeypatch.setenv("SEARCH_BACKEND", "corpus")
    monkeypatch.setenv("GAIA_CORPUS_PATH", str(tmp_path / "index.sqlite"))
    assert "https://en.wikipedia.org/wiki/Apollo_11" in ok(await call("search", query="crewed moon landing"))
    page = ok(await call("read_webpage", url="https://en.wikipedia.org/wiki/Apollo_11"))
    assert (
        page.startswith("# Apollo 11\n\nURL: https://en.wikipedia.org/wiki/Apollo_11")
        and "20 July 1969" in page
    )
    assert "No recorded answer" in failed(await call("read_webpage", url="https://example.org/not-indexed"))
