"""ms-playwright: a real browser for agents, Playwright driving the system Chromium.

One Chromium per replica and one BrowserContext per session: sessions never share cookies,
storage, tabs or downloads. Pages are read as accessibility snapshots whose `[ref=eN]` marks are
what the actions take. Every request the pages make passes the kit's SSRF rules.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any, Literal, TypeVar

from gaia_kit import KitServer, ToolFailure, atomic_write, get_settings, page, serve, session_of, truncate
from gaia_kit.core.args import StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.web.chromium import chromium_path, headless
from mcp.server.mcpserver import Context
from mcp.types import ImageContent, TextContent
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator
from playwright.async_api import TimeoutError as PlaywrightTimeout
from pydantic import BaseModel, ConfigDict, Field

from .browser import BrowserSession, Tab, first_line, host
from .proxy import REFUSED_HEADER
from .settings import get_playwright_settings
from .state import act, dialog_blocks, failure, report, settle, snapshot, tab_list

server = KitServer(
    "ms-playwright",
    instructions=(
        "A real Chromium browser, one private browser context per session. browser_navigate opens a "
        "page; every answer carries an accessibility snapshot whose [ref=eN] marks are what browser_click, "
        "browser_type and the other actions take. Refs belong to the latest snapshot of the tab."
    ),
)

Element = Annotated[
    str,
    Field(
        description="Human-readable element description used to obtain permission to interact with the element"
    ),
]
Ref = Annotated[str, Field(description="Exact target element reference from the page snapshot")]
Modifier = Literal["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]
T = TypeVar("T")


@server.on_session_end
async def release(session_id: str) -> None:
    await host.end_session(session_id)


async def _in_session(ctx: Context, work: Callable[[BrowserSession], Awaitable[Any]]) -> Any:
    return await host.with_session(session_of(ctx), work)


async def _act(ctx: Context, what: str, action: Callable[[Tab], Awaitable[str]]) -> str:
    """Run `action` on the session's current tab and answer with the page state after it."""

    async def work(session: BrowserSession) -> str:
        tab = await session.page_tab()
        return await act(session, tab, what, lambda: action(tab))

    return await _in_session(ctx, work)


async def _on_element(
    ctx: Context, ref: str, doing: str, done: str, do: Callable[[Locator], Awaitable[Any]]
) -> str:
    """Act on one element of the current tab's latest snapshot; `doing` names it in an error."""

    async def action(tab: Tab) -> str:
        await do(await tab.locate(ref))
        return done

    return await _act(ctx, doing, action)


@server.tool(
    annotations=hints(
        "Navigate to a URL", read_only=False, destructive=False, idempotent=True, open_world=True
    )
)
async def browser_navigate(
    url: Annotated[str, Field(description="The URL to navigate to")], ctx: Context
) -> str:
    """Navigate to a URL"""
    target = url.strip()
    if "://" not in target and not target.startswith(("about:", "data:")):
        target = f"https://{target}"

    async def work(session: BrowserSession) -> str:
        why = await host.guard.refusal(target)
        if why:
            raise ToolFailure(why)
        tab = await session.page_tab()
        return await act(session, tab, f"Navigating to {target}", lambda: _goto(session, tab, target))

    return await _in_session(ctx, work)


async def _goto(session: BrowserSession, tab: Tab, url: str) -> str:
    timeout_s = get_playwright_settings().navigation_timeout_s
    try:
        response = await _load(tab.page.goto(url, wait_until="domcontentloaded", timeout=timeout_s * 1000))
    except PlaywrightTimeout:
        return (
            f"Navigation to {url} did not finish loading within {timeout_s:g} s; "
            "the page so far is below (browser_wait_for can wait longer)."
        )
    except PlaywrightError as exc:
        if "Download is starting" in str(exc):
            return f"{url} is a download, not a page."
        if session.refusals:
            raise ToolFailure(session.refusals.pop()) from None
        raise ToolFailure(f"Navigating to {url} failed: {first_line(exc)}; check the URL.") from None
    refused = response.headers.get(REFUSED_HEADER.lower()) if response else None
    if refused:
        session.refusals.clear()
        raise ToolFailure(refused)
    status = (
        f" (HTTP {response.status} {response.status_text})" if response and response.status >= 400 else ""
    )
    return f"Navigated to {tab.page.url}{status}"


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


@server.tool(
    annotations=hints("Go back", read_only=False, destructive=False, idempotent=False, open_world=True)
)
async def browser_navigate_back(ctx: Context) -> str:
    """Go back to the previous page"""

    async def back(tab: Tab) -> str:
        before = tab.page.url
        timeout_s = get_playwright_settings().navigation_timeout_s
        try:
            await _load(tab.page.go_back(wait_until="domcontentloaded", timeout=timeout_s * 1000))
        except PlaywrightTimeout:
            return f"Went back; the page did not finish loading within {timeout_s:g} s."
        if tab.page.url == before:
            raise ToolFailure("There is no previous page in this tab's history.")
        return f"Went back to {tab.page.url}"

    return await _act(ctx, "Going back", back)


@server.tool(annotations=hints("Page snapshot", read_only=True, open_world=True))
async def browser_snapshot(ctx: Context, start_index: StartIndex = 0) -> str:
    """Capture accessibility snapshot of the current page, this is better than screenshot"""

    async def work(session: BrowserSession) -> str:
        tab = await session.page_tab()
        if tab.dialog is not None:
            raise dialog_blocks(tab)
        text = await snapshot(tab)
        head = await report(session, "Captured the page snapshot.", with_snapshot=False)
        room = max(1000, get_settings().max_output_chars - len(head) - 200)
        return f"{head}\n\n### Page snapshot\n```yaml\n{page(text, start_index, room)}\n```"

    return await _in_session(ctx, work)


@server.tool(annotations=hints("Click", read_only=False, destructive=True, idempotent=False, open_world=True))
async def browser_click(
    element: Element,
    ref: Ref,
    ctx: Context,
    doubleClick: Annotated[
        bool | None, Field(description="Whether to perform a double click instead of a single click")
    ] = None,
    button: Annotated[
        Literal["left", "right", "middle"] | None, Field(description="Button to click, defaults to left")
    ] = None,
    modifiers: Annotated[list[Modifier] | None, Field(description="Modifier keys to press")] = None,
) -> str:
    """Perform click on a web page"""
    options: dict[str, Any] = {"button": button or "left", "modifiers": modifiers or []}

    async def click(target: Locator) -> None:
        await (target.dblclick(**options) if doubleClick else target.click(**options))

    verb = "Double-click" if doubleClick else "Click"
    return await _on_element(ctx, ref, f"{verb}ing {element}", f"{verb}ed {element}", click)


@server.tool(
    annotations=hints("Type text", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def browser_type(
    element: Element,
    ref: Ref,
    text: Annotated[str, Field(description="Text to type into the element")],
    ctx: Context,
    submit: Annotated[
        bool | None, Field(description="Whether to submit entered text (press Enter after)")
    ] = None,
    slowly: Annotated[
        bool | None,
        Field(
            description="Whether to type one character at a time. Useful for triggering key handlers in the "
            "page. By default entire text is filled in at once."
        ),
    ] = None,
) -> str:
    """Type text into editable element"""

    async def type_in(target: Locator) -> None:
        if slowly:
            await target.press_sequentially(text, delay=20)
        else:
            await target.fill(text)
        if submit:
            await target.press("Enter")

    return await _on_element(
        ctx, ref, f"Typing into {element}", f"Typed {len(text)} characters into {element}", type_in
    )


@server.tool(annotations=hints("Hover", read_only=False, destructive=False, idempotent=True, open_world=True))
async def browser_hover(element: Element, ref: Ref, ctx: Context) -> str:
    """Hover over element on page"""
    return await _on_element(
        ctx, ref, f"Hovering over {element}", f"Hovered over {element}", lambda target: target.hover()
    )


@server.tool(
    annotations=hints("Drag and drop", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def browser_drag(
    startElement: Annotated[
        str,
        Field(
            description="Human-readable source element description used to obtain the permission to interact "
            "with the element"
        ),
    ],
    startRef: Annotated[str, Field(description="Exact source element reference from the page snapshot")],
    endElement: Annotated[
        str,
        Field(
            description="Human-readable target element description used to obtain the permission to interact "
            "with the element"
        ),
    ],
    endRef: Annotated[str, Field(description="Exact target element reference from the page snapshot")],
    ctx: Context,
) -> str:
    """Perform drag and drop between two elements"""

    async def drag(tab: Tab) -> str:
        source, target = await tab.locate(startRef), await tab.locate(endRef)
        await source.drag_to(target)
        return f"Dragged {startElement} to {endElement}"

    return await _act(ctx, "Dragging", drag)


@server.tool(
    annotations=hints("Select option", read_only=False, destructive=False, idempotent=True, open_world=True)
)
async def browser_select_option(
    element: Element,
    ref: Ref,
    values: Annotated[
        list[str],
        Field(
            description="Array of values to select in the dropdown. This can be a single value or multiple values."
        ),
    ],
    ctx: Context,
) -> str:
    """Select an option in a dropdown"""
    shown = ", ".join(json.dumps(v) for v in values)
    return await _on_element(
        ctx,
        ref,
        f"Selecting in {element}",
        f"Selected {shown} in {element}",
        lambda t: t.select_option(values),
    )


class FormField(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(description="Human-readable field name")]
    type: Annotated[
        Literal["textbox", "checkbox", "radio", "combobox", "slider"], Field(description="Type of the field")
    ]
    ref: Annotated[str, Field(description="Exact target field reference from the page snapshot")]
    value: Annotated[
        str,
        Field(
            description="Value to fill in the field. If the field is a checkbox, the value should be `true` or "
            "`false`. If the field is a combobox, the value should be the text of the option."
        ),
    ]


@server.tool(
    annotations=hints("Fill form", read_only=False, destructive=False, idempotent=True, open_world=True)
)
async def browser_fill_form(
    fields: Annotated[list[FormField], Field(description="Fields to fill in")], ctx: Context
) -> str:
    """Fill multiple form fields"""

    async def fill(tab: Tab) -> str:
        for entry in fields:
            await _fill_field(await tab.locate(entry.ref), entry)
        return "Filled " + ", ".join(f"{f.name} = {json.dumps(f.value)}" for f in fields)

    return await _act(ctx, "Filling the form", fill)


async def _fill_field(target: Locator, entry: FormField) -> None:
    if entry.type in ("checkbox", "radio"):
        wanted = entry.value.strip().lower() in ("true", "1", "yes", "on", "checked")
        await target.set_checked(wanted)
    elif entry.type == "combobox":
        try:
            await target.select_option(label=entry.value, timeout=2000)
        except PlaywrightError:
            await target.select_option(entry.value)
    elif entry.type == "slider":
        # Range inputs take no typing: set the value as a user's drag would, with its events.
        await target.evaluate(
            "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true}));"
            " el.dispatchEvent(new Event('change', {bubbles: true})); }",
            entry.value,
        )
    else:
        await target.fill(entry.value)


@server.tool(
    annotations=hints("Press a key", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def browser_press_key(
    key: Annotated[
        str,
        Field(description="Name of the key to press or a character to generate, such as `ArrowLeft` or `a`"),
    ],
    ctx: Context,
) -> str:
    """Press a key on the keyboard"""

    async def press(tab: Tab) -> str:
        await tab.page.keyboard.press(key)
        return f"Pressed {key}"

    return await _act(ctx, f"Pressing {key}", press)


@server.tool(
    annotations=hints(
        "Evaluate JavaScript", read_only=False, destructive=True, idempotent=False, open_world=True
    )
)
async def browser_evaluate(
    function: Annotated[
        str,
        Field(description="() => { /* code */ } or (element) => { /* code */ } when element is provided"),
    ],
    ctx: Context,
    element: Annotated[
        str | None,
        Field(
            description="Human-readable element description used to obtain permission to interact with the element"
        ),
    ] = None,
    ref: Annotated[
        str | None, Field(description="Exact target element reference from the page snapshot")
    ] = None,
) -> str:
    """Evaluate JavaScript expression on page or element"""

    async def evaluate(tab: Tab) -> str:
        if ref:
            value = await (await tab.locate(ref)).evaluate(function)
        else:
            value = await tab.page.evaluate(function)
        shown = json.dumps(value, ensure_ascii=False, indent=1, default=str)
        return "Evaluated the function. Result:\n" + truncate(shown, 20_000)

    return await _act(ctx, "Evaluating the function", evaluate)


@server.tool(
    annotations=hints(
        "Take a screenshot", read_only=False, destructive=True, idempotent=False, open_world=True
    )
)
async def browser_take_screenshot(
    ctx: Context,
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
    name = filename or f"page-{stamp}.{type}"
    options: dict[str, Any] = {"type": type, **({"quality": 80} if type == "jpeg" else {})}

    async def work(session: BrowserSession) -> list[TextContent | ImageContent]:
        tab = await session.page_tab()
        if tab.dialog is not None:
            raise dialog_blocks(tab)
        target = session.paths.resolve(name, write=True)
        try:
            if ref:
                shot = await (await tab.locate(ref)).screenshot(**options)
            else:
                shot = await tab.page.screenshot(full_page=bool(fullPage), **options)
        except PlaywrightError as exc:
            raise failure(exc, "Taking the screenshot") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, shot)
        what = element or ("the full page" if fullPage else "the viewport")
        note = f"Took a screenshot of {what} of {tab.page.url}; saved it to {target}."
        if len(shot) > get_settings().max_media_bytes:
            return [TextContent(type="text", text=f"{note} It is too large to show inline; read the file.")]
        data = base64.b64encode(shot).decode("ascii")
        return [
            TextContent(type="text", text=note),
            ImageContent(type="image", data=data, mime_type=f"image/{type}"),
        ]

    return await _in_session(ctx, work)


@server.tool(annotations=hints("Wait for", read_only=True, open_world=True))
async def browser_wait_for(
    ctx: Context,
    time: Annotated[float | None, Field(description="The time to wait in seconds")] = None,
    text: Annotated[str | None, Field(description="The text to wait for")] = None,
    textGone: Annotated[str | None, Field(description="The text to wait for to disappear")] = None,
) -> str:
    """Wait for text to appear or disappear or a specified time to pass"""
    if time is None and not text and not textGone:
        raise ToolFailure("Pass time (seconds), text to wait for, or textGone to wait for its disappearance.")
    bound = get_playwright_settings().max_wait_s

    async def wait(tab: Tab) -> str:
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

    return await _act(ctx, "Waiting", wait)


@server.tool(
    annotations=hints("Manage tabs", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def browser_tabs(
    action: Annotated[Literal["list", "new", "close", "select"], Field(description="Operation to perform")],
    ctx: Context,
    index: Annotated[
        float | None,
        Field(description="Tab index, used for close/select. If omitted for close, current tab is closed."),
    ] = None,
) -> str:
    """List, create, close, or select a browser tab."""

    async def work(session: BrowserSession) -> str:
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

    return await _in_session(ctx, work)


def _tab_index(session: BrowserSession, index: float | None) -> int:
    if index is None or index != int(index) or not 0 <= index < len(session.tabs):
        raise ToolFailure(
            f"Tab index {index} is not one of the {len(session.tabs)} open tabs (0-based); "
            "list them with browser_tabs action=list."
        )
    return int(index)


@server.tool(
    annotations=hints("Upload files", read_only=False, destructive=False, idempotent=True, open_world=True)
)
async def browser_file_upload(
    ctx: Context,
    paths: Annotated[
        list[str] | None,
        Field(
            description="The absolute paths to the files to upload. Can be single file or multiple files. If "
            "omitted, file chooser is cancelled."
        ),
    ] = None,
) -> str:
    """Upload one or multiple files"""

    async def work(session: BrowserSession) -> str:
        tab = await session.page_tab()
        chooser = tab.chooser
        if chooser is None:
            raise ToolFailure(
                "No file chooser is open; click the page's file input (browser_click) first, then upload."
            )
        if paths is None:
            tab.chooser = None
            return await report(session, "Cancelled the file chooser.")
        files = [session.paths.existing_file(p) for p in paths]

        async def upload() -> str:
            await chooser.set_files(files)
            tab.chooser = None
            return "Uploaded " + ", ".join(str(f) for f in files)

        return await act(session, tab, "Uploading", upload)

    return await _in_session(ctx, work)


@server.tool(
    annotations=hints("Handle a dialog", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def browser_handle_dialog(
    accept: Annotated[bool, Field(description="Whether to accept the dialog.")],
    ctx: Context,
    promptText: Annotated[
        str | None, Field(description="The text of the prompt in case of a prompt dialog.")
    ] = None,
) -> str:
    """Handle a dialog"""

    async def work(session: BrowserSession) -> str:
        tab = await session.page_tab()
        dialog = tab.dialog
        if dialog is None:
            raise ToolFailure("No dialog is open; there is nothing to answer.")
        tab.dialog = None
        tab.modal.clear()
        try:
            if not accept:
                await dialog.dismiss()
            elif promptText is not None:
                await dialog.accept(promptText)
            else:
                await dialog.accept()
        except PlaywrightError as exc:
            raise failure(exc, "Answering the dialog") from None
        done = f'{"Accepted" if accept else "Dismissed"} the {dialog.type} dialog "{dialog.message[:200]}"'
        return await _resume(session, tab, done)

    return await _in_session(ctx, work)


async def _resume(session: BrowserSession, tab: Tab, done: str) -> str:
    """Let the action the dialog interrupted finish, unless it opens another dialog."""
    pending, tab.pending = tab.pending, None
    if pending is not None:
        modal = asyncio.ensure_future(tab.modal.wait())
        await asyncio.wait(
            {pending, modal},
            timeout=get_playwright_settings().action_timeout_s,
            return_when=asyncio.FIRST_COMPLETED,
        )
        modal.cancel()
        if not pending.done():
            tab.pending = pending
        elif pending.exception() is not None:
            done += f"; the action it interrupted then failed: {first_line(pending.exception())}"
    if tab.dialog is None:
        await settle(session, tab)
    return await report(session, done)


@server.tool(annotations=hints("Console messages", read_only=True, open_world=False))
async def browser_console_messages(ctx: Context) -> str:
    """Returns all console messages"""

    def lines(tab: Tab) -> list[str]:
        tab.console_reported = len(tab.console)
        return tab.console

    return await _listing(ctx, "No console messages.", lines)


@server.tool(annotations=hints("Network requests", read_only=True, open_world=False))
async def browser_network_requests(ctx: Context) -> str:
    """Returns all network requests since loading the page"""
    return await _listing(
        ctx,
        "No network requests.",
        lambda tab: [f"[{e.method}] {e.url[:500]} => [{e.status}]" for e in tab.requests.values()],
    )


async def _listing(ctx: Context, empty: str, lines: Callable[[Tab], list[str]]) -> str:
    """One of the current tab's logs, capped."""

    async def work(session: BrowserSession) -> str:
        shown = lines(session.tab) if session.tab is not None else []
        return truncate("\n".join(shown), get_settings().max_output_chars) if shown else empty

    return await _in_session(ctx, work)


@server.tool(
    annotations=hints("Close the page", read_only=False, destructive=True, idempotent=True, open_world=False)
)
async def browser_close(ctx: Context) -> str:
    """Close the page"""
    session = session_of(ctx)
    tabs = await host.call(lambda: host.close_session(session.id))
    if not tabs:
        return "No browser page was open."
    return (
        f"Closed the browser ({tabs} tab(s)) with its cookies and storage; the next call opens a fresh one."
    )


@server.tool(
    annotations=hints(
        "Resize the window", read_only=False, destructive=False, idempotent=True, open_world=False
    )
)
async def browser_resize(
    width: Annotated[float, Field(description="Width of the browser window")],
    height: Annotated[float, Field(description="Height of the browser window")],
    ctx: Context,
) -> str:
    """Resize the browser window"""
    if not (100 <= width <= 7680 and 100 <= height <= 7680):
        raise ToolFailure(
            f"{width:g}x{height:g} is outside 100 to 7680 pixels per side; pick a usual window size."
        )
    size = {"width": int(width), "height": int(height)}

    async def resize(tab: Tab) -> str:
        await tab.page.set_viewport_size(size)
        return f"Resized the window to {size['width']}x{size['height']}"

    return await _act(ctx, "Resizing", resize)


@server.tool(
    annotations=hints(
        "Install the browser", read_only=False, destructive=False, idempotent=True, open_world=False
    )
)
async def browser_install(ctx: Context) -> str:
    """Install the browser specified in the config. Call this if you get an error about the browser not being installed."""
    return await host.call(host.describe)


def check() -> dict[str, Any]:
    try:
        path = chromium_path()
    except ToolFailure as exc:
        return {"backend": "system Chromium", "missing": [str(exc)]}
    mode = "headless" if headless() else "headful on $DISPLAY"
    return {"backend": f"Chromium at {path} ({mode})", "notes": ["one browser context per session"]}


def main() -> None:
    serve(server, check=check)
