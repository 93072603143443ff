"""gaia_kit.web.proxy: the browser's forward proxy connects to checked addresses only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from gaia_kit.web.guard import UrlGuard
from gaia_kit.web.proxy import REFUSED_HEADER, GuardProxy

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def no_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GAIA_HTTP_ALLOW", raising=False)


class Upstream:
    """A loopback listener that answers every connection once and keeps what it received."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.port = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.received.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        await writer.drain()
        writer.close()


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    served = Upstream()
    server = await asyncio.start_server(served._serve, "127.0.0.1", 0)
    served.port = server.sockets[0].getsockname()[1]
    yield served
    server.close()


async def exchange(proxy: GuardProxy, request: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(request.encode())
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    return answer


async def test_a_refused_host_gets_the_guards_sentence_and_is_never_contacted(upstream: Upstream):
    async with GuardProxy(UrlGuard()) as proxy:
        target = f"127.0.0.1:{upstream.port}"
        for request in (
            f"GET http://{target}/secret HTTP/1.1\r\nHost: {target}\r\n\r\n",
            f"CONNECT {target} HTTP/1.1\r\n\r\n",
        ):
            answer = await exchange(proxy, request)
            assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer
            assert f"{REFUSED_HEADER}: Refused to fetch from 127.0.0.1".encode() in answer
            assert b"GAIA_HTTP_ALLOW" in answer.split(b"\r\n\r\n", 1)[1]
    assert upstream.received == []


async def test_an_allowed_request_is_forwarded_without_proxy_headers(upstream: Upstream):
    async with GuardProxy(UrlGuard(allow="127.0.0.1")) as proxy:
        target = f"127.0.0.1:{upstream.port}"
        answer = await exchange(
            proxy,
            f"GET http://{target}/page?q=1 HTTP/1.1\r\nHost: {target}\r\nProxy-Connection: keep-alive\r\n\r\n",
        )
    assert answer.endswith(b"\r\n\r\nhello"), answer
    (head,) = upstream.received
    assert head.startswith(b"GET /page?q=1 HTTP/1.1\r\n") and b"Connection: close" in head
    assert b"Proxy-Connection" not in head


async def test_an_allowed_tunnel_carries_bytes_both_ways(upstream: Upstream):
    async with GuardProxy(UrlGuard(allow="127.0.0.1")) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n\r\n".encode())
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection Established\r\n\r\n"
        writer.write(b"GET / HTTP/1.1\r\nHost: tunnelled\r\n\r\n")
        assert (await asyncio.wait_for(reader.read(), timeout=10)).endswith(b"hello")
        writer.close()
    assert upstream.received == [b"GET / HTTP/1.1\r\nHost: tunnelled\r\n\r\n"]


async def test_only_absolute_http_urls_are_forwarded():
    async with GuardProxy(UrlGuard(allow="127.0.0.1")) as proxy:
        answer = await exchange(proxy, "GET ftp://127.0.0.1/file HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403") and b"only absolute http URLs" in answer


async def test_chromium_is_pointed_at_the_proxy_with_loopback_not_exempt():
    async with GuardProxy(UrlGuard()) as proxy:
        assert proxy.chromium_args() == [
            f"--proxy-server=http://127.0.0.1:{proxy.port}",
            "--proxy-bypass-list=<-loopback>",
        ]
        port = proxy.port
    with pytest.raises(OSError):  # closed with its context
        await asyncio.open_connection("127.0.0.1", port)
