"""One decorator for every browser tool: the hop to the browser's thread, the session's context, the
modal-state check and, for an action, the settled page state as its answer.

A tool body asks for what it needs by annotation and does only its own work:

    @browser_tool(hints("Hover", ...), doing="Hovering over {element}")
    async def browser_hover(tab: Tab, element: Element, ref: Ref) -> str:
        await (await tab.locate(ref)).hover()
        return f"Hovered over {element}"

- `session: BrowserSession`: the calling session's browser context, one call at a time.
- `tab: Tab`: its current tab (a blank one is opened when it has none). A tab that an open dialog
  blocks is refused, unless the tool `answers` that dialog; a tool that answers a dialog or a file
  chooser is refused when none is open.
- `session: Session` (the kit's) alone: the body runs on the browser's thread outside any context.
- `doing`: the body is an action, and `doing` names it in its errors (formatted with the
  arguments: "Typing into {element}"). It returns what it did; the page settles; the answer is the
  page state after it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from gaia_kit import Session, ToolFailure, session_of
from gaia_kit.core.benchmark_guard import refuse_mirror
from gaia_kit.core.tools import Tool
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from .browser import BrowserSession, Tab, host
from .state import act, dialog_blocks

Modal = Literal["dialog", "file chooser"]
Body = Callable[..., Awaitable[Any]]

NONE_OPEN = {
    "dialog": "No dialog is open; there is nothing to answer.",
    "file chooser": "No file chooser is open; click the page's file input (browser_click) first, then upload.",
}

Element = Annotated[
    str,
    Field(
        description="Human-readable element description used to obtain permission to interact with the element"
    ),
]
Ref = Annotated[str, Field(description="Exact target element reference from the page snapshot")]


def browser_tool(
    annotations: ToolAnnotations, *, doing: str | None = None, answers: Modal | None = None
) -> Callable[[Body], Tool]:
    def decorate(body: Body) -> Tool:
        signature = inspect.signature(body, eval_str=True)
        injected = {
            name: param.annotation
            for name, param in signature.parameters.items()
            if param.annotation in (BrowserSession, Tab, Session)
        }
        wants_tab = Tab in injected.values()
        in_context = wants_tab or BrowserSession in injected.values()
        if doing is not None and not wants_tab:
            raise TypeError(f"{body.__name__}: an action (doing=) acts on a `tab: Tab` parameter")

        @functools.wraps(body)
        async def tool(ctx: Context, **arguments: Any) -> Any:
            if isinstance(arguments.get("url"), str):  # in the call's own context, where it is counted
                refuse_mirror(arguments["url"])
            if not in_context:
                given = {name: session_of(ctx) for name in injected}
                return await host.call(lambda: body(**given, **arguments))

            async def work(session: BrowserSession) -> Any:
                tab = await session.page_tab() if wants_tab else None
                given = {name: tab if kind is Tab else session for name, kind in injected.items()}
                if tab is None:
                    return await body(**given, **arguments)
                _check_modal(tab, answers)
                if doing is None:
                    return await body(**given, **arguments)
                return await act(
                    session, tab, doing.format_map(arguments), lambda: body(**given, **arguments)
                )

            return await host.with_session(session_of(ctx), work)

        # What the MCP SDK reads: the body's own arguments, and `ctx` for the context it injects.
        params = [p for name, p in signature.parameters.items() if name not in injected]
        params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))
        tool.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        tool.__annotations__ = {p.name: p.annotation for p in params} | {
            "return": signature.return_annotation
        }
        return Tool(tool, annotations)

    return decorate


def _check_modal(tab: Tab, answers: Modal | None) -> None:
    if answers == "dialog":
        if tab.dialog is None:
            raise ToolFailure(NONE_OPEN["dialog"])
        return
    if tab.dialog is not None:
        raise dialog_blocks(tab)
    if answers == "file chooser" and tab.chooser is None:
        raise ToolFailure(NONE_OPEN["file chooser"])
