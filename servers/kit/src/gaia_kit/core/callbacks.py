"""Callbacks registered for a session's end, called so that one failing never stops the others."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable

SessionEndHandler = Callable[[str], Awaitable[None] | None]
"""`handler(session_id)`, plain or async, called once when a session ends."""


async def call_each(handlers: Iterable[SessionEndHandler], session_id: str, logger: logging.Logger) -> None:
    """Call every handler with `session_id`, in order; a failure is logged and the next one still runs."""
    for handler in handlers:
        try:
            outcome = handler(session_id)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.exception("ending session %s in %r failed", session_id, handler)
