"""KitServer: an MCPServer whose tools fail with one clear sentence, never a traceback."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import NotificationParams

from . import logs
from .contract import SESSION_ENDED, SESSION_ID_KEY
from .errors import describe_exception

logger = logging.getLogger("gaia_kit")

SessionEndHandler = Callable[[str], Awaitable[None] | None]


class SessionEndedParams(NotificationParams):
    session_id: str  # sessionId on the wire


class KitServer(MCPServer):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._session_end_handlers: list[SessionEndHandler] = []
        self._lowlevel_server.add_notification_handler(SESSION_ENDED, SessionEndedParams, self._session_ended)

    def on_session_end(self, handler: SessionEndHandler) -> SessionEndHandler:
        """Register `handler(session_id)`, called when the gateway ends a session (DELETE or idle)."""
        self._session_end_handlers.append(handler)
        return handler

    async def _session_ended(self, ctx: Any, params: SessionEndedParams) -> None:
        for handler in self._session_end_handlers:
            try:
                outcome = handler(params.session_id)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("releasing session %s failed", params.session_id)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        # Every log record written while the tool runs names the tool and the session.
        tool_token = logs.tool.set(name)
        session_token = logs.session.set(_session_id(context))
        try:
            return await super().call_tool(name, arguments, context)
        finally:
            logs.tool.reset(tool_token)
            logs.session.reset(session_token)

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, **kwargs: Any) -> None:
        # Text results only, unless a tool asks: structured output would send every result twice.
        kwargs["structured_output"] = kwargs.get("structured_output") or False
        # Agents read the description: give them the docstring without its source indentation.
        if kwargs.get("description") is None and fn.__doc__:
            kwargs["description"] = inspect.cleandoc(fn.__doc__)
        super().add_tool(_explained(fn, name or fn.__name__), name=name, **kwargs)


def _session_id(context: Any) -> str | None:
    try:
        meta = context.request_context.meta if context is not None else None
    except ValueError:  # a Context made outside a request
        return None
    return (meta or {}).get(SESSION_ID_KEY)


def _explained(fn: Callable[..., Any], tool: str) -> Callable[..., Any]:
    """Wrap a tool so unexpected exceptions become a sentence; sync stays sync (it runs in a thread)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except (ToolError, MCPError):  # MCPError: a protocol answer (busy), not a failure
                raise
            except Exception as exc:
                raise ToolError(describe_exception(tool, exc)) from None

        return async_tool

    @functools.wraps(fn)
    def sync_tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ToolError, MCPError):
            raise
        except Exception as exc:
            raise ToolError(describe_exception(tool, exc)) from None

    return sync_tool
