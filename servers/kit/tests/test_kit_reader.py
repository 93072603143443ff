"""gaia_kit.pages.reader against the loopback web: local extraction, Jina and Tavily, fallbacks, failures."""

from __future__ import annotations

import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.settings import forget_settings
from gaia_kit.pages.reader import read_page, reader_backend
from gaia_kit_testing.fake_web import JINA_KEY, TAVILY_KEY

pytestmark = pytest.mark.anyio


async def test_local_reads_the_main_content_as_markdown(fake_web):
    page = await read_page(fake_web.url("/redirect?to=/article.html"))
    assert page.backend == "local" and page.url == fake_web.url("/article.html")
    assert page.title == "Moon landing facts" and page.content_type == "text/html"
    assert "Sea of Tranquility" in page.text and "Copyright" not in page.text
    assert page.images == ()


async def test_local_lists_images_when_asked(fake_web):
    page = await read_page(fake_web.url("/article.html"), images=True)
    assert page.images == (fake_web.url("/images/lander.png"), "https://cdn.example.org/crew.jpg")


async def test_a_pdf_becomes_page_text(fake_web):
    page = await read_page(fake_web.url("/doc.pdf"))
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
async def test_failures_are_one_sentence(fake_web, path, words):
    with pytest.raises(ToolFailure, match=words):
        await read_page(fake_web.url(path))


async def test_jina_is_used_when_its_key_is_set(fake_web, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", JINA_KEY)
    page = await read_page("https://example.org/article.html", images=True)
    assert page.backend == "jina" and page.title == "Moon landing facts"
    assert page.text.startswith("# Moon landing facts") and page.images == (
        "https://example.org/images/lander.png",
    )
    sent = fake_web.requests[-1]
    assert sent["path"] == "/jina/https://example.org/article.html"
    assert sent["headers"]["accept"] == "application/json"


async def test_tavily_is_used_when_only_its_key_is_set(fake_web, monkeypatch):
    monkeypatch.setenv("TAVILY_API_KEY", TAVILY_KEY)
    page = await read_page("https://example.org/article.html")
    assert page.backend == "tavily" and "Columbia" in page.text and page.images == ()


async def test_auto_falls_back_to_local_when_the_keyed_backend_fails(fake_web, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", "wrong-key")
    page = await read_page(fake_web.url("/article.html"))
    assert page.backend == "local" and "Apollo 11" in page.text


async def test_a_chosen_keyed_backend_reports_its_own_failure(fake_web, monkeypatch):
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
    forget_settings()
    with pytest.raises(ToolFailure, match="READWEB_BACKEND='bing'"):
        reader_backend()


async def test_non_http_urls_are_refused(fake_web):
    with pytest.raises(ToolFailure, match="Only http and https"):
        await read_page("file:///etc/passwd")
