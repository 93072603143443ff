"""googlesearch-server's tools against loopback Google and SearXNG, record/replay, the offline index."""

import json

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.pages.indexing import build
from gaia_kit.web import http as kit_http
from gaia_kit_testing import failed, ok
from googlesearch_server.server import check

pytestmark = pytest.mark.anyio


async def test_search_google_answers_json_by_default(fake, call):
    answer = json.loads(ok(await call("search_google", query="eiffel tower")))
    assert answer["backend"] == "google" and answer["count"] == 3
    assert answer["results"][0] == {
        "title": "Eiffel Tower - Wikipedia",
        "url": "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "snippet": "A wrought-iron tower in Paris.",
    }
    assert (fake.requests[0]["num"], fake.requests[0]["safe"]) == ("5", "active")


async def test_search_google_options_reach_the_api(fake, call):
    text = ok(await call("search_google", query="tower", num_results=2, safe_search=False, language="fr",
                         country="ca", output_format="markdown"))  # fmt: skip
    assert text.startswith("# Search results for: tower") and "3." not in text
    request = fake.requests[0]
    assert (request["num"], request["safe"], request["lr"], request["gl"]) == ("2", "off", "lang_fr", "ca")


async def test_num_results_is_held_to_one_to_ten(fake, call):
    ok(await call("search_google", query="tower", num_results=50))
    ok(await call("search_google", query="tower", num_results=0))
    assert [r["num"] for r in fake.requests] == ["10", "1"]


async def test_searxng_answers_when_google_is_not_configured(fake, call, monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.setenv("SEARXNG_URL", fake.searxng_url)
    text = ok(await call("search_google", query="thames bridge", output_format="text"))
    assert "Tower Bridge" in text and fake.requests[0]["format"] == "json"
    assert "searxng" in json.loads(ok(await call("get_search_capabilities")))["backend"]


async def test_the_offline_index_answers_with_no_network(fake, call, monkeypatch, tmp_path):
    fake.stop()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tower.md").write_text("# Pisa\n\nThe leaning tower of Pisa tilts four degrees.")
    build(tmp_path / "docs", tmp_path / "index.sqlite")
    monkeypatch.setenv("SEARCH_BACKEND", "corpus")
    monkeypatch.setenv("GAIA_CORPUS_PATH", str(tmp_path / "index.sqlite"))
    answer = json.loads(ok(await call("search_google", query="leaning tower")))
    assert answer["backend"] == "corpus" and answer["results"][0]["title"] == "Pisa"
    assert json.loads(ok(await call("search_google", query='NEAR("tower" OR')))["backend"] == "corpus"


async def test_missing_keys_name_the_variables(fake, call, monkeypatch):
    for name in ("GOOGLE_API_KEY", "GOOGLE_CSE_ID"):
        monkeypatch.delenv(name)
    message = failed(await call("search_google", query="tower"))
    assert all(
        name in message for name in ("GOOGLE_API_KEY", "GOOGLE_CSE_ID", "SEARXNG_URL", "GAIA_CORPUS_PATH")
    )
    assert check()["backend"] == "none" and "GOOGLE_CSE_ID" in check()["missing"][0]


async def test_capabilities_and_doctor_report_the_backend(fake, call):
    info = json.loads(ok(await call("get_search_capabilities")))
    assert info["backend"].startswith("google") and "search_google" in info["tools"]
    assert check() == {"backend": info["backend"], "missing": []}


async def test_a_rate_limit_is_waited_out(fake, call):
    fake.throttle(2)
    assert json.loads(ok(await call("search_google", query="tower")))["count"] == 3
    assert len(fake.requests) == 3


async def test_recorded_answers_replay_identically_with_the_site_gone(fake, call, monkeypatch):
    queries = ["eiffel tower", "thames", "nothing matches this"]
    recorded = [ok(await call("search_google", query=q)) for q in queries]
    fake.stop()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    kit_http.forget_shared_http()
    assert [ok(await call("search_google", query=q)) for q in queries] == recorded
    assert "No recorded answer" in failed(await call("search_google", query="new words"))
