"""Sending through the SSRF guard: attempts read under the byte cap, redirects followed hop by hop.

The guard (gaia_kit.web.ssrf) sits in the transport. Redirects are followed here, not by httpx, so
that every hop is checked, and proxies from the environment are not used, since a proxy would
resolve the name itself.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable
from functools import partial

import anyio
import httpx
from anyio import AsyncFile

from gaia_kit.core.benchmark_guard import refuse_mirror
from gaia_kit.core.calls import current_call
from gaia_kit.core.errors import ToolFailure
from gaia_kit.web.cache import is_secret_header, masked_url
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.errors import TooLarge, where
from gaia_kit.web.hosts import HostSlots
from gaia_kit.web.response import Answer, HttpResponse
from gaia_kit.web.retries import with_retries
from gaia_kit.web.ssrf import AllowList, check_literal, guarded_transport

REDIRECTS = {301, 302, 303, 307, 308}
PROGRESS_STEP_BYTES = 1024 * 1024


def _mask_logged_urls(record: logging.LogRecord) -> bool:
    if isinstance(record.args, tuple):
        record.args = tuple(masked_url(arg) if isinstance(arg, httpx.URL) else arg for arg in record.args)
    return True


def mask_urls_in_httpx_logs() -> None:
    """httpx logs every request's full URL at INFO, API keys in the query included: mask them."""
    logging.getLogger("httpx").addFilter(_mask_logged_urls)  # adding the same filter twice keeps one


class Transport:
    """One httpx client behind the SSRF guard, the per-host slots, retries and the call's deadline."""

    def __init__(self, settings: HttpSettings):
        self.settings = settings
        self.allow = AllowList(settings.allow)
        self.hosts = HostSlots(settings)
        mask_urls_in_httpx_logs()
        bundle = settings.ca_bundle
        verify = (
            ssl.create_default_context(cafile=bundle) if bundle else httpx.create_ssl_context(trust_env=False)
        )
        # trust_env=False: an environment proxy would resolve names itself, past the guard.
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s),
            transport=guarded_transport(self.allow, verify),
            trust_env=False,
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(
        self,
        request: httpx.Request,
        max_bytes: int,
        sink: AsyncFile | None = None,
        timeout_s: float | None = None,
    ) -> HttpResponse:
        """`request` sent and its redirects followed, within the caller's timeout_s or GAIA_HTTP_TOTAL_TIMEOUT_S."""
        return await self._deadline(request, self._follow(request, max_bytes, sink), timeout_s)

    async def _deadline(
        self, request: httpx.Request, work: Awaitable[HttpResponse], timeout_s: float | None
    ) -> HttpResponse:
        seconds = timeout_s or self.settings.total_timeout_s
        try:
            with anyio.fail_after(seconds):
                return await work
        except TimeoutError:
            limit = "the timeout asked for" if timeout_s else "GAIA_HTTP_TOTAL_TIMEOUT_S"
            raise ToolFailure(
                f"{where(request.url)} did not finish answering within {seconds:g} s ({limit}); "
                "try again later, or allow more time."
            ) from None

    async def _follow(self, request: httpx.Request, max_bytes: int, sink: AsyncFile | None) -> HttpResponse:
        method, url, headers, body = request.method, request.url, request.headers.copy(), request.content
        del headers["host"]  # each hop's request sets its own
        for _ in range(self.settings.max_redirects + 1):
            if url != request.url:
                refuse_mirror(str(url))  # a redirect into a benchmark copy is refused too
            attempt = partial(self._send, method, url, headers, body, max_bytes, sink)
            answer = await with_retries(attempt, method, url, self.settings)
            location = answer.headers.get("location")
            if answer.status not in REDIRECTS or not location:
                return HttpResponse(answer.status, answer.visible_headers(), answer.content, masked_url(url))
            target = url.join(location)
            if target.scheme not in ("http", "https"):
                raise ToolFailure(f"{where(url)} redirected to a {target.scheme}: URL, which is not fetched.")
            if (target.scheme, target.host, target.port) != (url.scheme, url.host, url.port):
                # Credentials were meant for the first host only.
                for name in [name for name in headers if is_secret_header(name)]:
                    del headers[name]
            if answer.status == 303 or (answer.status in (301, 302) and method == "POST"):
                method, body = "GET", b""
                for name in ("content-type", "content-length"):
                    headers.pop(name, None)
            url = target
        raise ToolFailure(
            f"{where(request.url)} redirected more than {self.settings.max_redirects} times "
            f"(GAIA_HTTP_MAX_REDIRECTS), probably a redirect loop; check the URL."
        )

    async def _send(
        self, method: str, url: httpx.URL, headers: httpx.Headers, body: bytes, max_bytes: int,
        sink: AsyncFile | None,
    ) -> Answer:  # fmt: skip
        # Built by hand and sent as is: the client's cookie jar never adds to it. The guard runs when
        # the transport opens a connection; the literal check here refuses before any queueing.
        check_literal(url.host, self.allow)
        request = httpx.Request(method, url, headers=headers, content=body)
        async with self.hosts.hold(url.host):
            response = await self._client.send(request, stream=True)
            try:
                # Only a success goes to the file: error, retry and redirect bodies stay in memory.
                into = sink if sink is not None and 200 <= response.status_code < 300 else None
                content = await read_capped(response, max_bytes, url, into)
            finally:
                await response.aclose()
        return Answer(response.status_code, response.headers, content)


async def read_capped(
    response: httpx.Response, max_bytes: int, url: httpx.URL, sink: AsyncFile | None = None
) -> bytes:
    """The decoded body, aborted as soon as it passes the cap (a gzip bomb stops there too).

    With a sink the body is written there instead (from its start: a retried attempt overwrites).
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes and response.status_code not in REDIRECTS:
        raise TooLarge(url, max_bytes)
    chunks, size = [], 0
    if sink is not None:
        await sink.seek(0)
        await sink.truncate()
    # A download reports its progress in bytes (every MiB or 1 %, whichever is larger).
    total = int(declared) if declared.isdigit() else None
    step, reported = max(PROGRESS_STEP_BYTES, (total or 0) // 100), 0
    call = current_call()
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(url, max_bytes)
        if sink is not None:
            await sink.write(chunk)
            if size - reported >= step:
                reported = size
                call.progress(size, total, "bytes downloaded")
        else:
            chunks.append(chunk)
    return b"".join(chunks)
