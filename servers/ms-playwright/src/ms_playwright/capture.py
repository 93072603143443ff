"""Reading the page: the accessibility snapshot, screenshots, the console and the network log."""

from __future__ import annotations

import base64
import datetime
from typing import Annotated, Any, Literal

from gaia_kit import ToolFailure, atomic_write, get_settings, page, truncate
from gaia_kit.core.args import StartIndex
from gaia_kit.core.hints import hints
from mcp.types import ImageContent, TextContent
from playwright.async_api import Error as PlaywrightError
from pydantic import Field

from .browser import BrowserSession, Tab
from .state import failure, report, snapshot
from .tool import browser_tool


@browser_tool(hints("Page snapshot", read_only=True, open_world=True))
async def browser_snapshot(session: BrowserSession, tab: Tab, start_index: StartIndex = 0) -> str:
    """Capture accessibility snapshot of the current page, this is better than screenshot"""
    text = await snapshot(tab)
    head = await report(session, "Captured the page snapshot.", with_snapshot=False)
    room = max(1000, get_settings().max_output_chars - len(head) - 200)
    return f"{head}\n\n### Page snapshot\n```yaml\n{page(text, start_index, room)}\n```"


@browser_tool(
    hints("Take a screenshot", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def browser_take_screenshot(
    session: BrowserSession,
    tab: Tab,
    type: Annotated[
        Literal["png", "jpeg"], Field(description="Image format for the screenshot. Default is png.")
    ] = "png",
    filename: Annotated[
        str | None,
        Field(
            description="File name to save the screenshot to. Defaults to `page-{timestamp}.{png|jpeg}` if not "
            "specified."
        ),
    ] = None,
    element: Annotated[
        str | None,
        Field(
            description="Human-readable element description used to obtain permission to screenshot the element. "
            "If not provided, the screenshot will be taken of viewport. If element is provided, ref must be "
            "provided too."
        ),
    ] = None,
    ref: Annotated[
        str | None,
        Field(
            description="Exact target element reference from the page snapshot. If not provided, the screenshot "
            "will be taken of viewport. If ref is provided, element must be provided too."
        ),
    ] = None,
    fullPage: Annotated[
        bool | None,
        Field(
            description="When true, takes a screenshot of the full scrollable page, instead of the currently "
            "visible viewport. Cannot be used with element screenshots."
        ),
    ] = None,
) -> list[TextContent | ImageContent]:
    """Take a screenshot of the current page. You can't perform actions based on the screenshot, use browser_snapshot for actions."""
    if element and not ref:
        raise ToolFailure("An element screenshot needs the element's ref from the page snapshot too.")
    if ref and fullPage:
        raise ToolFailure("fullPage cannot be combined with an element screenshot; pass one or the other.")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H-%M-%S-%f")[:-3]
    target = session.paths.resolve(filename or f"page-{stamp}.{type}", write=True)
    options: dict[str, Any] = {"type": type, **({"quality": 80} if type == "jpeg" else {})}
    try:
        if ref:
            shot = await (await tab.locate(ref)).screenshot(**options)
        else:
            shot = await tab.page.screenshot(full_page=bool(fullPage), **options)
    except PlaywrightError as exc:
        raise failure(exc, "Taking the screenshot") from None
    atomic_write(target, shot)  # makes missing folders beneath the workspace
    what = element or ("the full page" if fullPage else "the viewport")
    note = f"Took a screenshot of {what} of {tab.page.url}; saved it to {session.paths.display(target)}."
    if len(shot) > get_settings().max_media_bytes:
        return [TextContent(type="text", text=f"{note} It is too large to show inline; read the file.")]
    data = base64.b64encode(shot).decode("ascii")
    return [
        TextContent(type="text", text=note),
        ImageContent(type="image", data=data, mime_type=f"image/{type}"),
    ]


@browser_tool(hints("Console messages", read_only=True, open_world=False))
async def browser_console_messages(session: BrowserSession) -> str:
    """Returns all console messages"""
    tab = session.tab
    if tab is not None:
        tab.console_reported = len(tab.console)
    return _log(tab.console if tab is not None else [], "No console messages.")


@browser_tool(hints("Network requests", read_only=True, open_world=False))
async def browser_network_requests(session: BrowserSession) -> str:
    """Returns all network requests since loading the page"""
    tab = session.tab
    entries = tab.requests.values() if tab is not None else []
    return _log([f"[{e.method}] {e.url[:500]} => [{e.status}]" for e in entries], "No network requests.")


def _log(lines: list[str], empty: str) -> str:
    """One of the current tab's logs, capped."""
    return truncate("\n".join(lines), get_settings().max_output_chars) if lines else empty
