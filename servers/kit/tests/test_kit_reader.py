"""gaia_kit.reader against the loopback web: local extraction, Jina and Tavily, fallbacks, failures."""

from __future__ import annotations

import pytest
from gaia_kit import ToolFailure
from gaia_kit.fake_web import JINA_KEY, TAVILY_KEY, FakeWeb
from gaia_kit.reader import read_page, reader_backend

pytestmark = pytest.mark.anyio


@pytest.fixture
def web(kit_env, fresh_http, monkeypatch):
    for name in ("READWEB_BACKEND", "JINA_API_KEY", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    with FakeWeb() as fake:
        monkeypatch.setenv("JINA_API_URL", fake.url("/jina/"))
        monkeypatch.setenv("TAVILY_API_URL", fake.url("/tavily/extract"))
        yield fake


async def test_local_reads_the_main_content_as_markdown(web):
    page = await read_page(web.url("/redirect?to=/article.html"))
    assert page.backend == "local" and page.url == web.url("/article.html")
    assert page.title == "Moon landing facts" and page.content_type == "text/html"
    assert "Sea of Tranquility" in page.text and "Copyright" not in page.text
    assert page.images == ()


async def test_local_lists_images_when_asked(web):
    page = await read_page(web.url("/article.html"), images=True)
    assert page.images == (web.url("/images/lander.png"), "https://cdn.example.org/crew.jpg")


async def test_a_pdf_becomes_page_text(web):
    page = await read_page(web.url("/doc.pdf"))
    assert page.content_type == "application/pdf"
    assert "--- Page 2 ---" in page.text and "Revenue grew 12 percent" in page.text


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/missing", "HTTP 404"),
        ("/blob.bin", "binary"),
        ("/empty.html", "no readable text"),
    ],
)
async def test_failures_are_one_sentence(web, path, words):
    with pytest.raises(ToolFailure, match=words):
        await read_page(web.url(path))


async def test_jina_is_used_when_its_key_is_set(web, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", JINA_KEY)
    page = await read_page("https://example.org/article.html", images=True)
    assert page.backend == "jina" and page.title == "Moon landing facts"
    assert page.text.startswith("# Moon landing facts") and page.images == (
        "https://example.org/images/lander.png",
    )
    sent = web.requests[-1]
    assert sent["path"] == "/jina/https://example.org/article.html"
    assert sent["headers"]["accept"] == "application/json"


async def test_tavily_is_used_when_only_its_key_is_set(web, monkeypatch):
    monkeypatch.setenv("TAVILY_API_KEY", TAVILY_KEY)
    page = await read_page("https://example.org/article.html")
    assert page.backend == "tavily" and "Columbia" in page.text and page.images == ()


async def test_auto_falls_back_to_local_when_the_keyed_backend_fails(web, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "wrong-key")
    page = await read_page(web.url("/article.html"))
    assert page.backend == "local" and "Apollo 11" in page.text


async def test_a_chosen_keyed_backend_reports_its_own_failure(web, monkeypatch):
    monkeypatch.setenv("READWEB_BACKEND", "tavily")
    monkeypatch.setenv("TAVILY_API_KEY", TAVILY_KEY)
    with pytest.raises(ToolFailure, match="Tavily could not extract"):
        await read_page("https://example.org/nothing-here")


def test_backend_settings_are_checked(monkeypatch):
    monkeypatch.setenv("READWEB_BACKEND", "jina")
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    with pytest.raises(ToolFailure, match="needs JINA_API_KEY"):
        reader_backend()
    monkeypatch.setenv("READWEB_BACKEND", "bing")
    with pytest.raises(ToolFailure, match="READWEB_BACKEND='bing'"):
        reader_backend()


async def test_non_http_urls_are_refused(web):
    with pytest.raises(ToolFailure, match="Only http and https"):
        await read_page("file:///etc/passwd")
