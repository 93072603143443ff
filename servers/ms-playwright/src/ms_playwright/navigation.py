"""Loading pages: navigate, go back, wait. Every document load takes one of the replica's rendering
slots (browser.RenderSlots), so past capacity a navigation is answered busy at once."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Annotated, Any, TypeVar

from gaia_kit import ToolFailure
from gaia_kit.core.hints import hints
from gaia_kit.core.settings import settings
from gaia_kit.web.proxy import REFUSED_HEADER
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout
from pydantic import Field

from .browser import BrowserSession, Tab, first_line, host
from .settings import PlaywrightSettings
from .tool import browser_tool

T = TypeVar("T")


@browser_tool(
    hints("Navigate to a URL", read_only=False, destructive=False, idempotent=True, open_world=True),
    doing="Navigating to {url}",
)
async def browser_navigate(
    session: BrowserSession, tab: Tab, url: Annotated[str, Field(description="The URL to navigate to")]
) -> str:
    """Navigate to a URL"""
    target = url.strip()
    if "://" not in target and not target.startswith(("about:", "data:")):
        target = f"https://{target}"
    if why := await host.guard.refusal(target):
        raise ToolFailure(why)
    timeout_s = settings(PlaywrightSettings).navigation_timeout_s
    try:
        response = await _load(tab.page.goto(target, wait_until="domcontentloaded", timeout=timeout_s * 1000))
    except PlaywrightTimeout:
        return (
            f"Navigation to {target} did not finish loading within {timeout_s:g} s; "
            "the page so far is below (browser_wait_for can wait longer)."
        )
    except PlaywrightError as exc:
        if "Download is starting" in str(exc):
            return f"{target} is a download, not a page."
        if session.refusals:
            raise ToolFailure(session.refusals.pop()) from None
        raise ToolFailure(f"Navigating to {target} failed: {first_line(exc)}; check the URL.") from None
    refused = response.headers.get(REFUSED_HEADER.lower()) if response else None
    if refused:
        session.refusals.clear()
        raise ToolFailure(refused)
    status = (
        f" (HTTP {response.status} {response.status_text})" if response and response.status >= 400 else ""
    )
    return f"Navigated to {tab.page.url}{status}"


@browser_tool(
    hints("Go back", read_only=False, destructive=False, idempotent=False, open_world=True),
    doing="Going back",
)
async def browser_navigate_back(tab: Tab) -> str:
    """Go back to the previous page"""
    before = tab.page.url
    timeout_s = settings(PlaywrightSettings).navigation_timeout_s
    try:
        await _load(tab.page.go_back(wait_until="domcontentloaded", timeout=timeout_s * 1000))
    except PlaywrightTimeout:
        return f"Went back; the page did not finish loading within {timeout_s:g} s."
    if tab.page.url == before:
        raise ToolFailure("There is no previous page in this tab's history.")
    return f"Went back to {tab.page.url}"


@browser_tool(hints("Wait for", read_only=True, open_world=True), doing="Waiting")
async def browser_wait_for(
    tab: Tab,
    time: Annotated[float | None, Field(description="The time to wait in seconds")] = None,
    text: Annotated[str | None, Field(description="The text to wait for")] = None,
    textGone: Annotated[str | None, Field(description="The text to wait for to disappear")] = None,
) -> str:
    """Wait for text to appear or disappear or a specified time to pass"""
    if time is None and not text and not textGone:
        raise ToolFailure("Pass time (seconds), text to wait for, or textGone to wait for its disappearance.")
    bound = settings(PlaywrightSettings).max_wait_s
    if time is not None:
        await asyncio.sleep(min(max(time, 0), bound))
    for wanted, state in ((textGone, "hidden"), (text, "visible")):
        if not wanted:
            continue
        try:
            await tab.page.get_by_text(wanted).first.wait_for(state=state, timeout=bound * 1000)
        except PlaywrightTimeout:
            which = f'"{wanted}" to {"appear" if state == "visible" else "disappear"}'
            raise ToolFailure(
                f"Waited {bound:g} s for {which}, in vain; capture a snapshot to see the page."
            ) from None
    waited = [f"{min(time, bound):g} s" if time is not None else "", text and f'"{text}" to appear']
    waited.append(textGone and f'"{textGone}" to disappear')
    return "Waited for " + " and ".join(w for w in waited if w)


async def _load(navigation: Coroutine[Any, Any, T]) -> T:
    """A navigation, started once it has one of the replica's rendering slots (host.render)."""
    task: asyncio.Future[T] | None = None
    try:
        async with host.render.slot():
            task = asyncio.ensure_future(navigation)
            await asyncio.wait({task}, timeout=host.render.HOLD_S)
        return await task
    except BaseException:
        if task is None:
            navigation.close()  # refused busy before it started
        else:
            task.cancel()
        raise
