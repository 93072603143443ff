"""The browser in the record/replay HTTP cache: its requests answered by gaia_kit.web.http.

With PLAYWRIGHT_HTTP_CACHE=true, and always under GAIA_HTTP_CACHE_MODE=replay, every request a
session's pages make is intercepted (Playwright's context routing) and sent by the kit's HTTP client
instead of Chromium: one SSRF guard, one mirror list, one cache with its keys, stores (SQLite, Redis)
and export/import. Under `read-write` each answer is recorded; under `replay` it comes from the cache
with no network at all, and a request never recorded is refused with the cache's own sentence.

What the cache does not keep, a recorded browser does not have: cookies a server sets (they are per
client, never shared through the cache), WebSockets, and POSTs (replayed only for read-only tools).
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from gaia_kit.core.errors import ToolFailure
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.http import shared_http
from gaia_kit.web.proxy import REFUSED_HEADER
from playwright.async_api import BrowserContext, Route

from .settings import get_playwright_settings

logger = logging.getLogger("ms_playwright")

# The kit's client sets these itself (and decodes the body): the browser's values would only mislead it.
NOT_FORWARDED = {"host", "content-length", "connection", "accept-encoding", "keep-alive", "proxy-connection"}


def through_cache() -> bool:
    """Whether the browser's traffic goes through the HTTP cache (a replay run must never reach the web)."""
    mode = HttpSettings().cache_mode
    return mode == "replay" or (mode == "read-write" and get_playwright_settings().http_cache)


async def route_through_cache(context: BrowserContext) -> None:
    if through_cache():
        await context.route("**/*", _answer)


async def _answer(route: Route) -> None:
    request = route.request
    headers = {k: v for k, v in (await request.all_headers()).items() if k.lower() not in NOT_FORWARDED}
    try:
        response = await shared_http().request(
            request.method,
            request.url,
            headers=headers,
            content=request.post_data_buffer,
            check=False,
            max_bytes=get_playwright_settings().max_download_bytes,
        )
    except ToolFailure as refused:  # a replay miss, a refused address or mirror, a failed fetch
        reason = str(refused)
        await route.fulfill(
            status=403,
            headers={
                REFUSED_HEADER: reason.encode("ascii", "replace").decode(),
                "Content-Type": "text/plain",
            },
            body=reason,
        )
        return
    if _address(response.url) != _address(request.url) and request.is_navigation_request():
        # The kit followed the redirects: send the browser to where they led, so its address and
        # relative links are the final page's (that address is recorded under its own key too).
        await route.fulfill(status=302, headers={"Location": response.url})
        return
    await route.fulfill(status=response.status, headers=response.headers, body=response.content)


def _address(url: str) -> tuple[str, str, str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query
