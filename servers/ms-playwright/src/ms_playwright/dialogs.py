"""Answering a dialog (alert, confirm, prompt, beforeunload): it blocks the page until answered, and
the action that opened it completes only then."""

from __future__ import annotations

import asyncio
from typing import Annotated

from gaia_kit.core.hints import hints
from gaia_kit.core.settings import settings
from playwright.async_api import Error as PlaywrightError
from pydantic import Field

from .browser import BrowserSession, Tab, first_line
from .settings import PlaywrightSettings
from .state import failure, report, settle
from .tool import browser_tool


@browser_tool(
    hints("Handle a dialog", read_only=False, destructive=True, idempotent=False, open_world=True),
    answers="dialog",
)
async def browser_handle_dialog(
    session: BrowserSession,
    tab: Tab,
    accept: Annotated[bool, Field(description="Whether to accept the dialog.")],
    promptText: Annotated[
        str | None, Field(description="The text of the prompt in case of a prompt dialog.")
    ] = None,
) -> str:
    """Handle a dialog"""
    dialog, tab.dialog = tab.dialog, None
    assert dialog is not None  # browser_tool answers "No dialog is open" otherwise
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


async def _resume(session: BrowserSession, tab: Tab, done: str) -> str:
    """Let the action the dialog interrupted finish, unless it opens another dialog."""
    pending, tab.pending = tab.pending, None
    if pending is not None:
        modal = asyncio.ensure_future(tab.modal.wait())
        await asyncio.wait(
            {pending, modal},
            timeout=settings(PlaywrightSettings).action_timeout_s,
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
