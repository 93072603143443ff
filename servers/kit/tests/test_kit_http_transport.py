"""gaia_kit.web.transport against httpx.MockTransport: redirects hop by hop, the byte cap, the deadline."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

import anyio
import httpx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.web import transport as transport_module
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.errors import TooLarge
from gaia_kit.web.transport import Transport, mask_urls_in_httpx_logs, read_capped

pytestmark = pytest.mark.anyio

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def site(monkeypatch) -> Callable[..., Transport]:
    """A Transport whose connections go to `handler` instead of the network."""

    def make(handler: Handler, **overrides) -> Transport:
        monkeypatch.setattr(
            transport_module, "guarded_transport", lambda allow, verify: httpx.MockTransport(handler)
        )
        return Transport(HttpSettings(**{"backoff_base_s": 0.001, **overrides}))

    return make


def get(url: str, **headers: str) -> httpx.Request:
    return httpx.Request("GET", url, headers=headers)


def streamed(body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    """A response whose body arrives in chunks, as from a connection."""

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 10):
            yield body[start : start + 10]

    return httpx.Response(200, headers=headers, content=chunks())


async def test_a_redirect_keeps_credentials_on_the_same_host_and_drops_them_elsewhere(site):
    seen: list[tuple[str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("authorization")))
        moves = {"/a": "/b", "/b": "https://other.example.net/c"}
        if request.url.path in moves:
            return httpx.Response(302, headers={"location": moves[request.url.path]})
        return httpx.Response(200, content=b"there", headers={"set-cookie": "s=1"})

    transport = site(handler)
    response = await transport.fetch(get("https://example.org/a", authorization="Bearer k"), 1024)
    await transport.aclose()
    assert seen == [
        ("https://example.org/a", "Bearer k"),
        ("https://example.org/b", "Bearer k"),
        ("https://other.example.net/c", None),
    ]
    assert (response.status, response.content, response.url) == (200, b"there", "https://other.example.net/c")
    assert "set-cookie" not in response.headers


async def test_a_303_turns_a_post_into_a_get_without_its_body(site):
    seen: list[tuple[str, bytes]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.content))
        if request.url.path == "/form":
            return httpx.Response(303, headers={"location": "/done"})
        return httpx.Response(200)

    request = httpx.Request("POST", "https://example.org/form", content=b"x=1")
    await site(handler).fetch(request, 1024)
    assert seen == [("POST", b"x=1"), ("GET", b"")]


async def test_a_redirect_loop_and_a_redirect_off_http_are_explained(site):
    loop = site(lambda request: httpx.Response(301, headers={"location": "/again"}), max_redirects=2)
    with pytest.raises(ToolFailure, match="more than 2 times.*GAIA_HTTP_MAX_REDIRECTS"):
        await loop.fetch(get("https://example.org/"), 1024)
    away = site(lambda request: httpx.Response(302, headers={"location": "file:///etc/passwd"}))
    with pytest.raises(ToolFailure, match="redirected to a file: URL"):
        await away.fetch(get("https://example.org/"), 1024)


async def test_a_literal_private_address_is_refused_before_anything_is_sent(site):
    sent: list[httpx.Request] = []
    transport = site(lambda request: sent.append(request) or httpx.Response(200))
    with pytest.raises(ToolFailure):
        await transport.fetch(get("http://169.254.169.254/latest/meta-data"), 1024)
    assert sent == []


async def test_the_response_url_hides_secret_query_values(site):
    response = await site(lambda request: httpx.Response(200)).fetch(
        get("https://example.org/s?key=sk-1&q=a"), 64
    )
    assert "sk-1" not in response.url and "q=a" in response.url


async def test_the_deadline_bounds_the_whole_fetch(site):
    async def slow(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(5)
        return httpx.Response(200)

    transport = site(slow, total_timeout_s=0.05)
    with pytest.raises(ToolFailure, match="within 0.05 s \\(GAIA_HTTP_TOTAL_TIMEOUT_S\\)"):
        await transport.fetch(get("https://example.org/"), 64)
    with pytest.raises(ToolFailure, match="within 0.05 s \\(the timeout asked for\\)"):
        await transport.fetch(get("https://example.org/"), 64, timeout_s=0.05)


async def test_a_body_past_the_cap_stops_whether_declared_or_streamed():
    url = httpx.URL("https://example.org/big")
    with pytest.raises(TooLarge):
        await read_capped(streamed(b"", {"content-length": "100"}), 99, url)  # refused before reading
    with pytest.raises(TooLarge):
        await read_capped(streamed(b"x" * 100), 99, url)
    assert await read_capped(streamed(b"x" * 99), 99, url) == b"x" * 99


async def test_a_sink_receives_the_body_from_its_start(tmp_path):
    async with await anyio.open_file(tmp_path / "body", "w+b") as sink:
        await sink.write(b"left over from an earlier attempt")
        content = await read_capped(streamed(b"fresh"), 64, httpx.URL("https://e.org/"), sink)
    assert content == b"" and (tmp_path / "body").read_bytes() == b"fresh"


def test_httpx_logs_show_urls_with_their_secrets_masked(caplog):
    mask_urls_in_httpx_logs()
    mask_urls_in_httpx_logs()  # once is enough, twice does no harm
    caplog.set_level(logging.INFO, logger="httpx")
    logging.getLogger("httpx").info("HTTP Request: %s %s", "GET", httpx.URL("https://e.org/?api_key=sk-9"))
    assert "sk-9" not in caplog.text and "e.org" in caplog.text
    assert (
        len([f for f in logging.getLogger("httpx").filters if f is transport_module._mask_logged_urls]) == 1
    )
