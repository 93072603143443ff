"""Acting on the page: click, hover, drag, keys, JavaScript. Elements are the refs of the tab's
latest snapshot (Tab.locate)."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from gaia_kit import truncate
from gaia_kit.core.hints import hints
from pydantic import Field

from .browser import Tab
from .tool import Element, Ref, browser_tool

Modifier = Literal["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]


@browser_tool(
    hints("Click", read_only=False, destructive=True, idempotent=False, open_world=True),
    doing="Clicking {element}",
)
async def browser_click(
    tab: Tab,
    element: Element,
    ref: Ref,
    doubleClick: Annotated[
        bool | None, Field(description="Whether to perform a double click instead of a single click")
    ] = None,
    button: Annotated[
        Literal["left", "right", "middle"] | None, Field(description="Button to click, defaults to left")
    ] = None,
    modifiers: Annotated[list[Modifier] | None, Field(description="Modifier keys to press")] = None,
) -> str:
    """Perform click on a web page"""
    target = await tab.locate(ref)
    options = {"button": button or "left", "modifiers": modifiers or []}
    if doubleClick:
        await target.dblclick(**options)
        return f"Double-clicked {element}"
    await target.click(**options)
    return f"Clicked {element}"


@browser_tool(
    hints("Hover", read_only=False, destructive=False, idempotent=True, open_world=True),
    doing="Hovering over {element}",
)
async def browser_hover(tab: Tab, element: Element, ref: Ref) -> str:
    """Hover over element on page"""
    await (await tab.locate(ref)).hover()
    return f"Hovered over {element}"


@browser_tool(
    hints("Drag and drop", read_only=False, destructive=True, idempotent=False, open_world=True),
    doing="Dragging",
)
async def browser_drag(
    tab: Tab,
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
) -> str:
    """Perform drag and drop between two elements"""
    source, target = await tab.locate(startRef), await tab.locate(endRef)
    await source.drag_to(target)
    return f"Dragged {startElement} to {endElement}"


@browser_tool(
    hints("Press a key", read_only=False, destructive=True, idempotent=False, open_world=True),
    doing="Pressing {key}",
)
async def browser_press_key(
    tab: Tab,
    key: Annotated[
        str,
        Field(description="Name of the key to press or a character to generate, such as `ArrowLeft` or `a`"),
    ],
) -> str:
    """Press a key on the keyboard"""
    await tab.page.keyboard.press(key)
    return f"Pressed {key}"


@browser_tool(
    hints("Evaluate JavaScript", read_only=False, destructive=True, idempotent=False, open_world=True),
    doing="Evaluating the function",
)
async def browser_evaluate(
    tab: Tab,
    function: Annotated[
        str,
        Field(description="() => { /* code */ } or (element) => { /* code */ } when element is provided"),
    ],
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
    if ref:
        value = await (await tab.locate(ref)).evaluate(function)
    else:
        value = await tab.page.evaluate(function)
    shown = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    return "Evaluated the function. Result:\n" + truncate(shown, 20_000)
