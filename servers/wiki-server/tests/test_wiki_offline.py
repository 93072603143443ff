"""wiki-server offline: a Wikipedia ZIM the test writes (libzim's creator), with and without the index."""

import json

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.pages.indexing import build
from gaia_kit_testing import failed, ok, text
from gaia_kit_testing.fake_search import write_zim
from wiki_server.server import check

pytestmark = pytest.mark.anyio

PYTHON = "Python (programming language)"
ARTICLES = {
    PYTHON: (
        "<html><head><title>Python (programming language)</title></head><body>"
        "<p>Python is a high-level programming language. It was created by "
        "<a href='./Guido_van_Rossum'>Guido van Rossum</a>. It was first released in 1991. "
        "It is named after <a href='Monty_Python#Name'>Monty Python</a>. See <a href='https://python.org'>"
        "python.org</a> and <a href='File:Logo.png'>the logo</a>.</p>"
        "<h2>History</h2><p>Python 2.0 was released in 2000, Python 3.0 in 2008.</p>"
        "<div id='catlinks'><a href='Category:Programming_languages'>Programming languages</a>"
        "<a href='./Category:Dutch_inventions'>Dutch inventions</a></div></body></html>"
    ),
    "Guido van Rossum": (
        "<html><head><title>Guido van Rossum</title></head><body><p>Guido van Rossum is a Dutch "
        "programmer. He created <a href='Python_(programming_language)'>Python</a>.</p></body></html>"
    ),
    "Monty Python": "<html><body><p>Monty Python were a British comedy troupe formed in 1969.</p></body></html>",
}


@pytest.fixture
def zim(kit_env, fresh_http, monkeypatch, tmp_path):
    for name in ("WIKI_ZIM_PATH", "WIKI_BACKEND", "GAIA_CORPUS_PATH"):
        monkeypatch.delenv(name, raising=False)
    # Replay with an empty cache: any request to the network fails the call, so passing means offline.
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    return write_zim(tmp_path / "wikipedia_en_test.zim", ARTICLES, redirects={"Python": PYTHON})


@pytest.fixture(params=["zim", "index"])
def offline(request, zim, monkeypatch, tmp_path):
    if request.param == "zim":
        monkeypatch.setenv("WIKI_ZIM_PATH", str(zim))
    else:
        build(zim, tmp_path / "index.sqlite")
        monkeypatch.setenv("GAIA_CORPUS_PATH", str(tmp_path / "index.sqlite"))
    return request.param


async def test_search_finds_articles_offline(offline, call):
    found = ok(await call("search_wikipedia", query="dutch programmer"))
    assert "**Guido van Rossum** (https://en.wikipedia.org/wiki/Guido_van_Rossum)" in found
    assert "Dutch programmer" in found
    for query in ['python" OR NEAR(', "AND", "*", "(("]:  # results or "no article", never a syntax error
        answer = await call("search_wikipedia", query=query)
        assert not answer.is_error or "has no article matching" in text(answer)


async def test_content_and_summary_offline(offline, call):
    content = ok(await call("get_article_content", title="python"))
    assert content.startswith(
        f"# {PYTHON}\n\nURL: https://en.wikipedia.org/wiki/Python_(programming_language)"
    )
    assert "released in 1991" in content and "Python 3.0 in 2008" in content
    intro = ok(
        await call("get_article_content", title=PYTHON, include_full_content=False, output_format="json")
    )
    assert "1991" in json.loads(intro)["content"] and "2008" not in json.loads(intro)["content"]
    summary = ok(await call("get_article_summary", title=PYTHON, sentences=2))
    assert summary.endswith("It was created by Guido van Rossum.")


async def test_links_and_categories_offline(offline, call):
    links = json.loads(ok(await call("get_article_links", title=PYTHON, output_format="json")))
    assert links["links"] == ["Guido van Rossum", "Monty Python"]
    categories = json.loads(ok(await call("get_article_categories", title=PYTHON, output_format="json")))
    assert categories == {"title": PYTHON, "categories": ["Programming languages", "Dutch inventions"]}


async def test_a_missing_title_suggests_offline(offline, call):
    message = failed(await call("get_article_summary", title="Rossum"))
    assert "Guido van Rossum" in message and "Call again" in message
    assert ok(await call("get_article_summary", title="Rossum", auto_suggest=True)).startswith(
        "# Guido van Rossum"
    )


async def test_history_stays_online_and_says_so(offline, call):
    message = failed(await call("get_article_history", title=PYTHON, date="2010/01/01"))
    assert "needs the live MediaWiki API" in message and "No recorded answer" in message


async def test_other_languages_and_the_api_setting_use_the_live_api(offline, call, monkeypatch):
    assert "No recorded answer" in failed(await call("search_wikipedia", query="python", language="de"))
    monkeypatch.setenv("WIKI_BACKEND", "api")
    forget_settings()  # settings are read once per process: read them again
    assert "No recorded answer" in failed(await call("search_wikipedia", query="python"))


async def test_capabilities_and_doctor_report_the_zim(offline, call, zim):
    info = json.loads(ok(await call("get_wikipedia_capabilities")))
    assert info["backend"].startswith(f"offline Wikipedia (en) from {zim}")
    assert check()["backend"].startswith("offline Wikipedia (en)")


async def test_a_missing_zim_is_one_sentence(zim, call, monkeypatch, tmp_path):
    monkeypatch.setenv("WIKI_ZIM_PATH", str(tmp_path / "gone.zim"))
    assert "WIKI_ZIM_PATH" in failed(await call("search_wikipedia", query="python"))
    assert "WIKI_ZIM_PATH" in check()["missing"][0]
    monkeypatch.delenv("WIKI_ZIM_PATH")
    monkeypatch.setenv("WIKI_BACKEND", "zim")
    forget_settings()
    assert "WIKI_BACKEND=zim needs WIKI_ZIM_PATH" in failed(await call("get_article_links", title=PYTHON))


async def test_an_unknown_backend_names_the_choices(zim, call, monkeypatch):
    monkeypatch.setenv("WIKI_BACKEND", "sometimes")
    message = failed(await call("search_wikipedia", query="python"))
    assert "WIKI_BACKEND is set to 'sometimes'; set it to 'auto', 'api' or 'zim'." in message
