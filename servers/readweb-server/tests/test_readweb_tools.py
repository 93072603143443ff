"""read_url over MCP against the loopback web: pages, PDFs, paging, backends, every failure a sentence."""

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.web import http as kit_http
from gaia_kit_testing import failed, ok
from gaia_kit_testing.fake_web import JINA_KEY, REFUSED_HOSTS, TAVILY_KEY

pytestmark = pytest.mark.anyio


async def test_a_page_is_read_as_markdown(fake_web, call):
    answer = ok(await call("read_url", url=fake_web.url("/redirect?to=/article.html")))
    assert answer.startswith("# Moon landing facts\nURL: " + fake_web.url("/article.html"))
    assert "Content type: text/html" in answer and "Sea of Tranquility" in answer
    assert "Copyright" not in answer and "## Images" not in answer


async def test_images_are_listed_when_asked(fake_web, call):
    answer = ok(await call("read_url", url=fake_web.url("/article.html"), include_images=True))
    assert answer.endswith(
        f"## Images\n- {fake_web.url('/images/lander.png')}\n- https://cdn.example.org/crew.jpg"
    )


async def test_a_pdf_link_gives_its_text(fake_web, call):
    answer = ok(await call("read_url", url=fake_web.url("/doc.pdf")))
    assert "Content type: application/pdf" in answer and "--- Page 2 ---\nRevenue grew 12 percent" in answer


async def test_long_pages_come_in_parts(fake_web, call):
    first = ok(await call("read_url", url=fake_web.url("/long.html"), max_length=30000))
    assert "Call again with start_index=30000" in first and "Paragraph 0:" in first
    second = ok(await call("read_url", url=fake_web.url("/long.html"), start_index=30000, max_length=30000))
    assert "Paragraph 0:" not in second and "characters 30000-60000" in second


async def test_a_rate_limit_is_waited_out(fake_web, call):
    fake_web.throttle(2)
    assert "Apollo 11" in ok(await call("read_url", url=fake_web.url("/article.html")))
    assert [r["path"] for r in fake_web.requests] == ["/article.html"] * 3


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/missing", "answered HTTP 404 (Not Found): there is nothing at that address"),
        ("/blob.bin", "is binary (application/octet-stream), not a page or a PDF"),
        ("/empty.html", "has no readable text"),
    ],
)
async def test_failures_are_one_sentence(fake_web, call, path, words):
    assert words in failed(await call("read_url", url=fake_web.url(path)))


async def test_a_slow_site_times_out(fake_web, call, monkeypatch):
    monkeypatch.setenv("GAIA_HTTP_TOTAL_TIMEOUT_S", "0.5")
    forget_settings()
    kit_http.forget_shared_http()
    assert "did not finish answering within 0.5 s" in failed(
        await call("read_url", url=fake_web.url("/slow"))
    )


async def test_not_a_web_address(fake_web, call):
    assert "Only http and https" in failed(await call("read_url", url="ftp://example.org/file"))


@pytest.mark.parametrize("host", REFUSED_HOSTS)
async def test_private_and_metadata_addresses_are_refused(fake_web, call, host):
    assert "GAIA_HTTP_ALLOW" in failed(await call("read_url", url=f"http://{host}/admin"))


async def test_a_redirect_to_a_private_address_is_refused(fake_web, call):
    message = failed(await call("read_url", url=fake_web.url("/redirect?to=http://10.0.0.1/admin")))
    assert "10.0.0.1" in message and "GAIA_HTTP_ALLOW" in message


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_is_refused_unless_allow_listed(fake_web, call, monkeypatch, host):
    monkeypatch.delenv("GAIA_HTTP_ALLOW")
    forget_settings()
    kit_http.forget_shared_http()
    message = failed(await call("read_url", url=f"http://{host}:{fake_web.port}/article.html"))
    assert "loopback" in message and "GAIA_HTTP_ALLOW" in message


async def test_jina_reads_when_its_key_is_set(fake_web, call, monkeypatch):
    monkeypatch.setenv("JINA_API_KEY", JINA_KEY)
    answer = ok(await call("read_url", url="https://example.org/article.html", include_images=True))
    assert "Content type: text/markdown" in answer and "Michael Collins" in answer
    assert answer.endswith("## Images\n- https://example.org/images/lander.png")
    assert fake_web.requests[-1]["path"] == "/jina/https://example.org/article.html"


async def test_tavily_reads_when_chosen(fake_web, call, monkeypatch):
    monkeypatch.setenv("READWEB_BACKEND", "tavily")
    monkeypatch.setenv("TAVILY_API_KEY", TAVILY_KEY)
    assert "Neil Armstrong" in ok(await call("read_url", url="https://example.org/article.html"))
    assert fake_web.requests[-1]["path"] == "/tavily/extract"
    assert "Tavily could not extract" in failed(await call("read_url", url="https://example.org/gone"))


async def test_recorded_reads_replay_identically_with_the_site_gone(fake_web, call, monkeypatch):
    urls = [fake_web.url("/article.html"), fake_web.url("/doc.pdf"), fake_web.url("/missing")]
    recorded = [(await call("read_url", url=url)) for url in urls]
    monkeypatch.setenv("JINA_API_KEY", JINA_KEY)
    forget_settings()
    recorded.append(await call("read_url", url="https://example.org/article.html"))
    fake_web.stop()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    kit_http.forget_shared_http()
    replayed = [(await call("read_url", url=url)) for url in urls]
    replayed.append(await call("read_url", url="https://example.org/article.html"))
    assert [(r.is_error, r.content) for r in replayed] == [(r.is_error, r.content) for r in recorded]
    assert "No recorded answer" in failed(await call("read_url", url=fake_web.url("/long.html")))
