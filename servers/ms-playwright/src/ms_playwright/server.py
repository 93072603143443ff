"""ms-playwright: a real browser for agents, Playwright driving the system Chromium.

One Chromium per replica and one BrowserContext per session: sessions never share cookies,
storage, tabs or downloads. Pages are read as accessibility snapshots whose `[ref=eN]` marks are
what the actions take. Every request the pages make passes the kit's SSRF rules.

The tools live by area; tool.browser_tool gives each its session, its tab and its answer.
"""

from __future__ import annotations

from typing import Any

from gaia_kit import KitServer, ToolFailure, serve
from gaia_kit.core.tools import add_tools
from gaia_kit.web.chromium import chromium_path, headless

from . import capture, dialogs, forms, interaction, navigation, tabs
from .browser import host

server = KitServer(
    "ms-playwright",
    web_facing=True,
    instructions=(
        "A real Chromium browser, one private browser context per session. browser_navigate opens a "
        "page; every answer carries an accessibility snapshot whose [ref=eN] marks are what browser_click, "
        "browser_type and the other actions take. Refs belong to the latest snapshot of the tab."
    ),
)

# In the order tools/list has always given them.
TOOLS = [
    navigation.browser_navigate,
    navigation.browser_navigate_back,
    capture.browser_snapshot,
    interaction.browser_click,
    forms.browser_type,
    interaction.browser_hover,
    interaction.browser_drag,
    forms.browser_select_option,
    forms.browser_fill_form,
    interaction.browser_press_key,
    interaction.browser_evaluate,
    capture.browser_take_screenshot,
    navigation.browser_wait_for,
    tabs.browser_tabs,
    forms.browser_file_upload,
    dialogs.browser_handle_dialog,
    capture.browser_console_messages,
    capture.browser_network_requests,
    tabs.browser_close,
    tabs.browser_resize,
    tabs.browser_install,
]
add_tools(server, TOOLS)


@server.on_session_end
async def release(session_id: str) -> None:
    await host.end_session(session_id)


def check() -> dict[str, Any]:
    try:
        path = chromium_path()
    except ToolFailure as exc:
        return {"backend": "system Chromium", "missing": [str(exc)]}
    mode = "headless" if headless() else "headful on $DISPLAY"
    return {"backend": f"Chromium at {path} ({mode})", "notes": ["one browser context per session"]}


def main() -> None:
    serve(server, check=check)
