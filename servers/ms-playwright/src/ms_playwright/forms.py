"""Filling forms: typing, dropdowns, whole forms at once, and files for an open file chooser."""

from __future__ import annotations

import json
import mimetypes
from pathlib import PurePosixPath
from typing import Annotated, Literal

from gaia_kit import PathGuard, ToolFailure, get_settings, run_blocking
from gaia_kit.core.hints import hints
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import FilePayload, Locator
from pydantic import BaseModel, ConfigDict, Field

from .browser import BrowserSession, Tab
from .tool import Element, Ref, browser_tool


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


@browser_tool(
    hints("Type text", read_only=False, destructive=True, idempotent=False, open_world=True),
    doing="Typing into {element}",
)
async def browser_type(
    tab: Tab,
    element: Element,
    ref: Ref,
    text: Annotated[str, Field(description="Text to type into the element")],
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
    target = await tab.locate(ref)
    if slowly:
        await target.press_sequentially(text, delay=20)
    else:
        await target.fill(text)
    if submit:
        await target.press("Enter")
    return f"Typed {len(text)} characters into {element}"


@browser_tool(
    hints("Select option", read_only=False, destructive=False, idempotent=True, open_world=True),
    doing="Selecting in {element}",
)
async def browser_select_option(
    tab: Tab,
    element: Element,
    ref: Ref,
    values: Annotated[
        list[str],
        Field(
            description="Array of values to select in the dropdown. This can be a single value or multiple values."
        ),
    ],
) -> str:
    """Select an option in a dropdown"""
    await (await tab.locate(ref)).select_option(values)
    return f"Selected {', '.join(json.dumps(v) for v in values)} in {element}"


@browser_tool(
    hints("Fill form", read_only=False, destructive=False, idempotent=True, open_world=True),
    doing="Filling the form",
)
async def browser_fill_form(
    tab: Tab, fields: Annotated[list[FormField], Field(description="Fields to fill in")]
) -> str:
    """Fill multiple form fields"""
    for entry in fields:
        await _fill_field(await tab.locate(entry.ref), entry)
    return "Filled " + ", ".join(f"{f.name} = {json.dumps(f.value)}" for f in fields)


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


@browser_tool(
    hints("Upload files", read_only=False, destructive=False, idempotent=True, open_world=True),
    doing="Uploading",
    answers="file chooser",
)
async def browser_file_upload(
    session: BrowserSession,
    tab: Tab,
    paths: Annotated[
        list[str] | None,
        Field(
            description="The absolute paths to the files to upload. Can be single file or multiple files. If "
            "omitted, file chooser is cancelled."
        ),
    ] = None,
) -> str:
    """Upload one or multiple files"""
    assert tab.chooser is not None  # browser_tool answers "No file chooser is open" otherwise
    if paths is None:
        tab.chooser = None
        return "Cancelled the file chooser."
    # The bytes of each file the guard opened go to the page, not a name the browser would open later.
    files = [await run_blocking(_payload, session.paths, raw) for raw in paths]
    await tab.chooser.set_files(files)
    tab.chooser = None
    return "Uploaded " + ", ".join(session.paths.shown(raw) for raw in paths)


def _payload(guard: PathGuard, raw: str) -> FilePayload:
    limit = get_settings().max_read_bytes
    with guard.open_file(raw) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ToolFailure(
            f"{raw} is larger than GAIA_MAX_READ_BYTES ({limit:,} bytes); upload a smaller file."
        )
    name = PurePosixPath(guard.shown(raw)).name
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FilePayload(name=name, mimeType=kind, buffer=data)
