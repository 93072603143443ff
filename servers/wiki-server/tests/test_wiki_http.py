"""wiki-server's outbound HTTP: retries on 429, a wrong endpoint, record/replay, the SSRF guard."""

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.web import http as kit_http
from gaia_kit_testing import failed, ok

pytestmark = pytest.mark.anyio

PYTHON = "Python (programming language)"  # an article the fake wiki (conftest) serves


async def test_a_rate_limit_is_waited_out(wiki, call):
    wiki.throttle(2)
    assert ok(await call("get_article_summary", title=PYTHON)).startswith(f"# {PYTHON}")
    assert len(wiki.requests) == 3


async def test_a_rate_limit_that_outlasts_the_retries_says_try_later(wiki, call, monkeypatch):
    monkeypatch.setenv("GAIA_HTTP_RETRIES", "1")
    wiki.throttle(5)
    message = failed(await call("get_article_summary", title=PYTHON))
    assert "HTTP 429" in message and "try again later" in message


async def test_a_wrong_endpoint_names_the_setting(wiki, call, monkeypatch):
    monkeypatch.setenv("WIKI_API_URL", f"http://127.0.0.1:{wiki.port}/{{lang}}/nothing/api.php")
    message = failed(await call("search_wikipedia", query="python"))
    assert "answered 404" in message and "WIKI_API_URL" in message


async def test_recorded_answers_replay_identically_with_the_site_gone(wiki, call, monkeypatch):
    calls = [
        ("search_wikipedia", {"query": "python"}),
        ("get_article_content", {"title": PYTHON}),
        ("get_article_links", {"title": PYTHON}),
        ("get_article_history", {"title": PYTHON, "date": "2015/01/31"}),
    ]
    recorded = [ok(await call(name, **args)) for name, args in calls]
    wiki.stop()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    kit_http.forget_shared_http()  # the next call builds a client with replay settings
    assert [ok(await call(name, **args)) for name, args in calls] == recorded
    message = failed(await call("get_article_summary", title="Monty Python"))
    assert "No recorded answer" in message and "GAIA_HTTP_CACHE_MODE=read-write" in message


@pytest.mark.parametrize("address", ["10.0.0.1", "169.254.169.254"])
async def test_private_and_metadata_addresses_are_refused(kit_env, fresh_http, call, monkeypatch, address):
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("WIKI_API_URL", f"http://{address}/{{lang}}/w/api.php")
    message = failed(await call("search_wikipedia", query="python"))
    assert address in message and "GAIA_HTTP_ALLOW" in message
