"""A browser's only way out: a forward proxy on 127.0.0.1 that connects to checked addresses only.

Route interception sees a page's first request, but Chromium follows redirects, opens WebSockets,
prefetches and dials WebRTC's TCP TURN on its own. Every connection the browser makes goes through
this proxy (launched with `chromium_args()`: --proxy-server and `<-loopback>`, so loopback is not
exempt), which resolves the name, checks every address with the guard (guard.py), and connects to
an address it just checked: redirects and DNS rebinding cannot reach a refused address.

    async with GuardProxy(UrlGuard()) as proxy:
        browser = await launch(args=[*chromium_args(), *proxy.chromium_args()])
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Self
from urllib.parse import urlsplit

from gaia_kit.core.errors import ToolFailure
from gaia_kit.web.browser_cache import REFUSED_HEADER
from gaia_kit.web.guard import UrlGuard

MAX_HEAD_BYTES = 64 * 1024
HOP_HEADERS = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}


class GuardProxy:
    def __init__(self, guard: UrlGuard):
        self.guard = guard
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> str:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD_BYTES)
            self.port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}"

    def chromium_args(self) -> list[str]:
        """Chromium's flags for this (started) proxy: `<-loopback>` removes the implicit bypass for loopback."""
        return [f"--proxy-server=http://127.0.0.1:{self.port}", "--proxy-bypass-list=<-loopback>"]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=60)
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, target, version = request_line.split(" ", 2)
            if method.upper() == "CONNECT":
                host, _, port = target.rpartition(":")
                upstream = await self._connect(host.strip("[]"), int(port))
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    raise ToolFailure(f"The proxy forwards only absolute http URLs, not {target[:200]}.")
                upstream = await self._connect(parts.hostname, parts.port or 80)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                # One request per upstream connection: the next one may be for another host.
                kept = [
                    h for h in header_lines if h and h.split(":", 1)[0].strip().lower() not in HOP_HEADERS
                ]
                upstream[1].write(
                    "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode(
                        "latin-1"
                    )
                )
            await _pipe(reader, writer, *upstream)
        except ToolFailure as refused:
            reason = str(refused).encode("ascii", "replace")
            writer.write(
                b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + f"{REFUSED_HEADER}: ".encode()
                + reason
                + f"\r\nContent-Length: {len(reason)}\r\nConnection: close\r\n\r\n".encode()
                + reason
            )
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _connect(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        addresses = await self.guard.addresses(host, port)
        last: OSError | None = None
        for address in addresses:
            try:
                return await asyncio.wait_for(asyncio.open_connection(str(address), port), timeout=30)
            except (OSError, TimeoutError) as exc:
                last = exc if isinstance(exc, OSError) else OSError(str(exc))
        raise last or OSError(f"no address for {host}")


async def _pipe(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while chunk := await source.read(65536):
                sink.write(chunk)
                await sink.drain()
        with contextlib.suppress(OSError):
            if sink.can_write_eof():
                sink.write_eof()

    # The answer ends the exchange: once the upstream side closes, stop reading the client.
    sending = asyncio.ensure_future(copy(client_reader, upstream_writer))
    try:
        await copy(upstream_reader, client_writer)
    finally:
        sending.cancel()
        with contextlib.suppress(Exception):
            upstream_writer.close()
