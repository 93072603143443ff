"""Running an action and answering with the page state after it: what the agent sees next."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from .browser import REF, BrowserSession, Tab, first_line
from .settings import PlaywrightSettings

SNAPSHOT_TIMEOUT_S = 30.0
"""A snapshot is computed by the page's renderer: on a saturated machine that can take many seconds."""
SETTLE_GRACE_S = 0.1


def failure(exc: PlaywrightError, what: str) -> ToolFailure:
    """A Playwright error as a sentence that says what to do next."""
    if isinstance(exc, PlaywrightTimeout):
        return ToolFailure(
            f"{what} timed out ({first_line(exc)}); the element may be hidden, covered or disabled: "
            "capture a new snapshot and try another element."
        )
    if "ERR_BLOCKED_BY_CLIENT" in str(exc):
        return ToolFailure(f"{what} failed: the browser refused the address (SSRF rules).")
    return ToolFailure(f"{what} failed: {first_line(exc)}.")


def dialog_blocks(tab: Tab) -> ToolFailure:
    assert tab.dialog is not None
    return ToolFailure(
        f'The page has an open {tab.dialog.type} dialog ("{tab.dialog.message[:200]}") that blocks it; '
        "answer it with browser_handle_dialog first."
    )


async def act(session: BrowserSession, tab: Tab, what: str, action: Callable[[], Awaitable[str]]) -> str:
    """Run `action` on `tab`, wait for the page to settle, and report; a dialog it opens ends the wait."""
    if tab.dialog is not None:
        raise dialog_blocks(tab)
    tab.modal.clear()
    task = asyncio.ensure_future(action())
    modal = asyncio.ensure_future(tab.modal.wait())
    try:
        await asyncio.wait({task, modal}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        modal.cancel()
    if not task.done() and tab.dialog is not None:
        # The dialog stops the page's scripts, so the action finishes only once it is answered.
        tab.pending = task
        return await report(session, "The action opened a dialog; it completes once the dialog is answered.")
    try:
        done = await task
    except PlaywrightError as exc:
        raise failure(exc, what) from None
    await settle(session, tab)
    return await report(session, done)


async def settle(session: BrowserSession, tab: Tab) -> None:
    """Wait, bounded by PLAYWRIGHT_SETTLE_S, for loads, requests, new tabs and downloads the action started."""
    deadline = time.monotonic() + settings(PlaywrightSettings).settle_s

    def busy() -> bool:
        loading = any(t.inflight for t in session.tabs) or session.saving
        return bool(loading) and time.monotonic() < deadline and tab.dialog is None

    # Events the action caused (a popup, a download, a navigation) arrive just after it returns.
    await asyncio.sleep(SETTLE_GRACE_S)
    for _ in range(2):  # a click may start a navigation whose new document then loads more
        while busy():
            await asyncio.sleep(0.05)
        left = deadline - time.monotonic()
        if left <= 0 or tab.dialog is not None:
            return
        with contextlib.suppress(PlaywrightError):
            await tab.page.wait_for_load_state("load", timeout=left * 1000)


async def snapshot(tab: Tab) -> str:
    """The accessibility tree as YAML, each element an agent can act on marked [ref=eN]."""
    if tab.crashed:
        raise ToolFailure("This tab crashed; open the page again with browser_navigate, or close the tab.")
    try:
        text = await tab.page.aria_snapshot(mode="ai", timeout=SNAPSHOT_TIMEOUT_S * 1000)
    except PlaywrightTimeout:
        raise ToolFailure(
            f"The page did not produce its accessibility snapshot within {SNAPSHOT_TIMEOUT_S:g} s (the browser "
            "is overloaded, or the page is very large); call browser_snapshot again in a few seconds."
        ) from None
    except PlaywrightError as exc:
        raise failure(exc, "Capturing the snapshot") from None
    tab.refs = set(REF.findall(text))
    return text


async def report(session: BrowserSession, done: str, *, with_snapshot: bool = True) -> str:
    parts = [f"### Result\n{done}"]
    notes = session.notes + list(dict.fromkeys(session.refusals))
    session.notes.clear()
    session.refusals.clear()
    if notes:
        parts.append("### Notes\n" + "\n".join(f"- {note}" for note in notes))
    tab = session.tab
    if tab is None:
        parts.append(
            "### Page state\nNo tab is open; browser_navigate or browser_tabs with action=new opens one."
        )
        return "\n\n".join(parts)
    parts.append(await _page_lines(tab))
    if len(session.tabs) > 1:
        parts.append("### Open tabs\n" + await tab_list(session))
    console = tab.new_console()
    if console:
        parts.append("### New console messages\n" + "\n".join(f"- {line}" for line in console[-50:]))
    if session.downloads:
        parts.append("### Downloads\n" + "\n".join(f"- {line}" for line in session.downloads))
        session.downloads.clear()
    modal = modal_state(tab)
    if modal:
        parts.append("### Modal state\n" + modal)
    if with_snapshot and tab.dialog is None:
        try:
            text = await snapshot(tab)
        except ToolFailure as exc:
            # The action itself happened: say so, and why the snapshot is missing, instead of failing it.
            parts.append(f"### Page snapshot\n(not captured: {exc})")
            return "\n\n".join(parts)
        limit = settings(PlaywrightSettings).snapshot_chars
        if len(text) > limit:
            text = (
                f"{text[:limit]}\n[Snapshot truncated at {limit} of {len(text)} characters: "
                f"call browser_snapshot with start_index={limit} to read on.]"
            )
        parts.append(f"### Page snapshot\n```yaml\n{text}\n```")
    return "\n\n".join(parts)


async def _page_lines(tab: Tab) -> str:
    lines = [f"- Page URL: {tab.page.url}"]
    if tab.dialog is None and not tab.crashed:
        try:
            lines.append(f"- Page Title: {await asyncio.wait_for(tab.page.title(), timeout=5)}")
        except TimeoutError:
            lines.append("- Page Title: (the page did not say within 5 s; it may still be busy)")
        except PlaywrightError:
            pass
    return "### Page state\n" + "\n".join(lines)


async def tab_list(session: BrowserSession) -> str:
    lines = []
    for n, tab in enumerate(session.tabs):
        title = ""
        if tab.dialog is None and not tab.crashed:
            with contextlib.suppress(PlaywrightError, TimeoutError):
                title = await asyncio.wait_for(tab.page.title(), timeout=5)
        mark = " (current)" if n == session.current else ""
        lines.append(f"- {n}:{mark} [{title}] ({tab.page.url})")
    return "\n".join(lines)


def modal_state(tab: Tab) -> str:
    lines = []
    if tab.dialog is not None:
        lines.append(
            f'- ["{tab.dialog.type}" dialog with message "{tab.dialog.message[:500]}"]: '
            "answer it with browser_handle_dialog"
        )
    if tab.chooser is not None:
        lines.append("- [File chooser]: pick files with browser_file_upload")
    return "\n".join(lines)
