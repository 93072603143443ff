"""The browser around the page: tabs, the window's size, closing the session's browser, the install check."""

from __future__ import annotations

from typing import Annotated, Literal

from gaia_kit import Session, ToolFailure
from gaia_kit.core.hints import hints
from pydantic import Field

from .browser import BrowserSession, Tab, host
from .state import report, tab_list
from .tool import browser_tool


@browser_tool(hints("Manage tabs", read_only=False, destructive=True, idempotent=False, open_world=True))
async def browser_tabs(
    session: BrowserSession,
    action: Annotated[Literal["list", "new", "close", "select"], Field(description="Operation to perform")],
    index: Annotated[
        float | None,
        Field(description="Tab index, used for close/select. If omitted for close, current tab is closed."),
    ] = None,
) -> str:
    """List, create, close, or select a browser tab."""
    if action == "list":
        if not session.tabs:
            return "No tabs are open; browser_navigate or action=new opens one."
        return "### Open tabs\n" + await tab_list(session)
    if action == "new":
        tab = session.tab_of(await session.context.new_page())
        session.current = session.tabs.index(tab)
        return await report(session, f"Opened tab {session.current}.")
    chosen = session.current if index is None and action == "close" else _tab_index(session, index)
    if action == "select":
        session.current = chosen
        await session.tabs[chosen].page.bring_to_front()
        return await report(session, f"Selected tab {chosen}.")
    if not session.tabs:
        raise ToolFailure("No tabs are open, so none can be closed.")
    closing = session.tabs[chosen]
    await closing.page.close()
    session.forget(closing)  # the close event may not have arrived yet
    return await report(session, f"Closed tab {chosen}.", with_snapshot=bool(session.tabs))


def _tab_index(session: BrowserSession, index: float | None) -> int:
    if index is None or index != int(index) or not 0 <= index < len(session.tabs):
        raise ToolFailure(
            f"Tab index {index} is not one of the {len(session.tabs)} open tabs (0-based); "
            "list them with browser_tabs action=list."
        )
    return int(index)


@browser_tool(
    hints("Resize the window", read_only=False, destructive=False, idempotent=True, open_world=False),
    doing="Resizing",
)
async def browser_resize(
    tab: Tab,
    width: Annotated[float, Field(description="Width of the browser window")],
    height: Annotated[float, Field(description="Height of the browser window")],
) -> str:
    """Resize the browser window"""
    if not (100 <= width <= 7680 and 100 <= height <= 7680):
        raise ToolFailure(
            f"{width:g}x{height:g} is outside 100 to 7680 pixels per side; pick a usual window size."
        )
    await tab.page.set_viewport_size({"width": int(width), "height": int(height)})
    return f"Resized the window to {int(width)}x{int(height)}"


@browser_tool(hints("Close the page", read_only=False, destructive=True, idempotent=True, open_world=False))
async def browser_close(session: Session) -> str:
    """Close the page"""
    tabs = await host.close_session(session.id)
    if not tabs:
        return "No browser page was open."
    return (
        f"Closed the browser ({tabs} tab(s)) with its cookies and storage; the next call opens a fresh one."
    )


@browser_tool(
    hints("Install the browser", read_only=False, destructive=False, idempotent=True, open_world=False)
)
async def browser_install() -> str:
    """Install the browser specified in the config. Call this if you get an error about the browser not being installed."""
    return await host.describe()
