"""The browser in the record/replay HTTP cache: its requests answered by gaia_kit.web.browser_cache.

With PLAYWRIGHT_HTTP_CACHE=true, and always under GAIA_HTTP_CACHE_MODE=replay, every request a
session's pages make is intercepted (Playwright's context routing) and answered by the kit's HTTP
client instead of Chromium; gaia_kit.web.browser_cache says what that records, replays and refuses.
"""

from __future__ import annotations

from gaia_kit.core.settings import settings
from gaia_kit.web.browser_cache import page_answer, through_cache
from playwright.async_api import BrowserContext, Route

from .settings import PlaywrightSettings


async def route_through_cache(context: BrowserContext) -> None:
    if through_cache(settings(PlaywrightSettings).http_cache):
        await context.route("**/*", _answer)


async def _answer(route: Route) -> None:
    request = route.request
    answer = await page_answer(
        request.method,
        request.url,
        await request.all_headers(),
        request.post_data_buffer,
        navigation=request.is_navigation_request(),
        max_bytes=settings(PlaywrightSettings).max_download_bytes,
    )
    await route.fulfill(status=answer.status, headers=answer.headers, body=answer.body)
