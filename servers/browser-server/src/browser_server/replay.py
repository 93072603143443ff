"""The agent's Chromium in the record/replay HTTP cache, through CDP's Fetch domain.

With BROWSERUSE_HTTP_CACHE=true under GAIA_HTTP_CACHE_MODE=read-write, and always under replay, Fetch
is enabled on the browser target itself: that pauses every request of every tab, frame and popup from
its first one (enabling it per tab would race a new tab's first load). Each paused request is
answered by gaia_kit.web.browser_cache, which records it, replays it or refuses it in one sentence.
Chromium is launched with a proxy nobody listens on, so what Fetch never pauses (WebSockets, anything
before interception starts) cannot reach the network either.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from typing import Any

from gaia_kit.web.browser_cache import PageAnswer, page_answer, refusal_answer

logger = logging.getLogger("browser_server")

# Port 9 (discard) on loopback: nothing listens there, so a request that skipped Fetch fails at once.
NO_NETWORK_ARGS = ("--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>")
MAX_REFUSALS = 10


class CachedPages:
    """Answers one browser's requests from the kit's HTTP client, and keeps the refusals for the report."""

    def __init__(self, browser: Any):
        self._browser = browser  # browser-use's BrowserSession; its CDP client exists once it started
        self._pending: set[asyncio.Task[None]] = set()
        self.refusals: list[str] = []

    async def start(self) -> None:
        client = self._browser.cdp_client
        client.register.Fetch.requestPaused(self._paused)
        await client.send.Fetch.enable(params={"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})

    def _paused(self, event: dict[str, Any], session_id: str | None) -> None:
        # cdp_use awaits handlers in its message loop: answering there would wait on itself.
        task = asyncio.create_task(self._answer(event, session_id))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _answer(self, event: dict[str, Any], session_id: str | None) -> None:
        request = event["request"]
        try:
            answer = await page_answer(
                request["method"],
                request["url"],
                request.get("headers", {}),
                _body(request),
                navigation=event.get("resourceType") == "Document",
            )
        except Exception as exc:  # noqa: BLE001 - a paused request must be answered, or the page hangs
            logger.warning("answering %s from the cache failed: %r", request["url"][:200], exc)
            answer = refusal_answer(f"The browser's request for {request['url'][:200]} failed: {exc}.")
        if answer.refusal and answer.refusal not in self.refusals and len(self.refusals) < MAX_REFUSALS:
            self.refusals.append(answer.refusal)
        with contextlib.suppress(Exception):  # the tab may have closed or moved on meanwhile
            await self._browser.cdp_client.send.Fetch.fulfillRequest(
                params=_fulfilment(event, answer), session_id=session_id
            )


def _body(request: dict[str, Any]) -> bytes | None:
    entries = request.get("postDataEntries")
    if entries:
        return b"".join(base64.b64decode(entry.get("bytes", "")) for entry in entries)
    data = request.get("postData")
    return data.encode() if data is not None else None


def _fulfilment(event: dict[str, Any], answer: PageAnswer) -> dict[str, Any]:
    return {
        "requestId": event["requestId"],
        "responseCode": answer.status,
        "responseHeaders": [{"name": name, "value": value} for name, value in answer.headers.items()],
        "body": base64.b64encode(answer.body).decode(),
    }
