"""A browser's requests answered by the kit's HTTP client, for the record/replay cache.

Both browsers (ms-playwright through Playwright's routing, browser-server through CDP's Fetch domain)
intercept what their pages request and hand it here: one SSRF guard, one benchmark-mirror list, one
cache with its keys, stores (SQLite, Redis) and export/import. Under GAIA_HTTP_CACHE_MODE=read-write
each answer is recorded; under `replay` it comes from the cache with no network at all, and a request
never recorded is refused with the cache's own sentence, which the page shows.

    if through_cache(settings.http_cache):
        answer = await page_answer("GET", url, headers, None, navigation=True)
        # fulfil the browser's request with answer.status, answer.headers, answer.body

What the cache does not keep, a recorded browser does not have: cookies a server sets (they are per
client, never shared through the cache), WebSockets, and POSTs (replayed only for read-only tools).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from gaia_kit.core.calls import detached
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.http import shared_http

REFUSED_HEADER = "X-Gaia-Refused"
"""Set on an answer the browser was refused (a replay miss, a refused address or mirror): its reason."""

# The kit's client sets these itself (and decodes the body): the browser's values would only mislead it.
NOT_FORWARDED = {"host", "content-length", "connection", "accept-encoding", "keep-alive", "proxy-connection"}


@dataclass(frozen=True)
class PageAnswer:
    status: int
    headers: dict[str, str]
    body: bytes = b""
    refusal: str | None = None
    """Why the request was refused, in one sentence; None when it was answered."""


def through_cache(opted_in: bool) -> bool:
    """Whether a browser's traffic goes through the HTTP cache: when its server opted in under
    read-write, and always under replay (a replay run must never reach the web)."""
    mode = settings(HttpSettings).cache_mode
    return mode == "replay" or (mode == "read-write" and opted_in)


async def page_answer(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    navigation: bool,
    max_bytes: int | None = None,
) -> PageAnswer:
    """The answer to one request a page made, fetched (or replayed) by the kit's client."""
    forwarded = {k: v for k, v in headers.items() if k.lower() not in NOT_FORWARDED}
    try:
        # The page's own request, whichever tool is running: its method decides whether it replays.
        with detached():
            response = await shared_http().request(
                method, url, headers=forwarded, content=body, check=False, max_bytes=max_bytes
            )
    except ToolFailure as refused:  # a replay miss, a refused address or mirror, a failed fetch
        return refusal_answer(str(refused))
    if navigation and _address(response.url) != _address(url):
        # The kit followed the redirects: send the browser to where they led, so its address and
        # relative links are the final page's (that address is recorded under its own key too).
        return PageAnswer(status=302, headers={"Location": response.url})
    return PageAnswer(status=response.status, headers=response.headers, body=response.content)


def refusal_answer(reason: str) -> PageAnswer:
    """A refused request as the page shows it: 403, the reason as its text and in REFUSED_HEADER."""
    return PageAnswer(
        status=403,
        headers={
            REFUSED_HEADER: reason.encode("ascii", "replace").decode(),
            "Content-Type": "text/plain; charset=utf-8",
        },
        body=reason.encode(),
        refusal=reason,
    )


def _address(url: str) -> tuple[str, str, str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query
