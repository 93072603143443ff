"""The one outbound HTTP client every server uses for URLs it did not configure itself.

    async with HttpClient() as http:            # or: http = shared_http()
        response = await http.get(url, params={"q": "x"})
        response.status, response.headers, response.content, response.text(), response.json()
        response.url, response.from_cache

What it adds to httpx, each in a module of its own: settings (config), connect/read/total timeouts
and the SSRF guard with redirects followed hop by hop (transport), retries with backoff honouring
Retry-After (retries), per-host concurrency limits and pauses (hosts), a cap on the bytes read, a
descriptive User-Agent, the record/replay cache for the requests the calling tool's annotations
allow (recording), and downloads into a file (download). Every failure is a ToolFailure in one
sentence (errors: HttpFailure, with `.status`, for an HTTP error answer).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from gaia_kit.core.benchmark_guard import refuse_mirror
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.core.usage import charge, check_budget
from gaia_kit.web.cache import Cache
from gaia_kit.web.config import HttpSettings, user_agent
from gaia_kit.web.download import download_to_file
from gaia_kit.web.errors import checked
from gaia_kit.web.recording import Recorder, cache_key, cache_mode
from gaia_kit.web.response import HttpResponse
from gaia_kit.web.transport import Transport


class HttpClient:
    """Timeouts, retries, per-host limits, size cap, SSRF guard and cache around one httpx client."""

    def __init__(self, config: HttpSettings | None = None):
        self.settings = config or settings(HttpSettings)
        self.user_agent = user_agent(self.settings.contact)
        self._transport = Transport(self.settings)
        self._recorder = Recorder(self.settings)

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._transport.aclose()

    @property
    def cache(self) -> Cache:
        return self._recorder.cache

    @property
    def cache_location(self) -> str:
        """Where the cache lives, as messages show it (a Redis URL without its password)."""
        return self._recorder.location

    async def get(self, url: str, **kwargs: Any) -> HttpResponse:
        return await self.request("GET", url, **kwargs)

    async def post(self, url: str, **kwargs: Any) -> HttpResponse:
        return await self.request("POST", url, **kwargs)

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        cache: bool | None = None,
        check: bool = True,
        max_bytes: int | None = None,
        paid: str | None = None,
    ) -> HttpResponse:
        """Send one request. `cache`: None caches GETs only; `check`: raise HttpFailure on 4xx/5xx;
        `paid`: the paid backend it goes to (gaia_kit.core.usage): refused when the session's budget for
        it is spent and counted when sent; an answer replayed from the cache is free."""
        request = self._build(method.upper(), url, params, headers, json, data, content)
        mode = cache_mode(self.settings, request.method, cache)
        key = cache_key(request, json) if mode != "off" else ""
        response = await self._recorder.lookup(request, mode, key)
        if response is None:
            if paid is not None:
                check_budget(paid)
                charge(paid)  # sent is spent, whatever the answer
            response = await self._transport.fetch(request, max_bytes or self.settings.max_bytes)
            if mode == "read-write":
                await self._recorder.record(request, key, response, response.content)
        return checked(response, self.settings.attempts) if check else response

    async def download(
        self,
        url: str,
        path: Path,
        *,
        headers: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
        timeout_s: float | None = None,
    ) -> HttpResponse:
        """GET `url` into the file `path` chunk by chunk, so a large body never sits in memory whole.

        The returned response's `content` is empty for a 2xx answer (the body is in the file). Bodies up
        to GAIA_HTTP_CACHE_MAX_FILE_BYTES are recorded and replayed like any GET; larger ones are not.
        A failure may leave part of a body in `path`: write to a temporary file and rename on success.
        """
        request = self._build("GET", url, None, headers, None, None, None)
        limit = max_bytes or self.settings.max_bytes
        return await download_to_file(self._transport, self._recorder, request, path, limit, timeout_s)

    def _build(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        json: Any,
        data: Mapping[str, Any] | None,
        content: bytes | None,
    ) -> httpx.Request:
        try:
            target = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise ToolFailure(
                f"The URL {url[:200]!r} is not valid ({exc}); pass a full http(s) URL."
            ) from None
        if target.scheme not in ("http", "https") or not target.host:
            raise ToolFailure(
                f"Only http and https URLs with a host can be fetched, not {url[:200]!r}; pass a full URL."
            )
        refuse_mirror(str(target))  # before the cache too: a recorded copy is no more a source
        base = {"User-Agent": self.user_agent, "Accept": "*/*", "Accept-Encoding": "gzip, deflate"}
        merged = httpx.Headers(base)
        merged.update(headers or {})
        return httpx.Request(
            method, target, params=params, headers=merged, json=json, data=data, content=content
        )


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HttpClient] = weakref.WeakKeyDictionary()


def forget_shared_http() -> None:
    """Drop the per-loop clients, so the next shared_http() builds a new one (tests switch modes).

    Settings are kept: after changing GAIA_HTTP_*, call forget_settings() too, or the new client is
    built with the values read before."""
    _shared.clear()


def shared_http() -> HttpClient:
    """This process's client for the running event loop (connections and per-host limits are shared)."""
    loop = asyncio.get_running_loop()
    client = _shared.get(loop)
    if client is None:
        client = _shared[loop] = HttpClient()
    return client
