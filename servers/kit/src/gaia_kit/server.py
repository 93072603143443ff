"""KitServer: an MCPServer whose tools fail with one clear sentence, never a traceback."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from .errors import describe_exception


class KitServer(MCPServer):
    def add_tool(self, fn: Callable[..., Any], name: str | None = None, **kwargs: Any) -> None:
        # Text results only, unless a tool asks: structured output would send every result twice.
        kwargs["structured_output"] = kwargs.get("structured_output") or False
        # Agents read the description: give them the docstring without its source indentation.
        if kwargs.get("description") is None and fn.__doc__:
            kwargs["description"] = inspect.cleandoc(fn.__doc__)
        super().add_tool(_explained(fn, name or fn.__name__), name=name, **kwargs)


def _explained(fn: Callable[..., Any], tool: str) -> Callable[..., Any]:
    """Wrap a tool so unexpected exceptions become a sentence; sync stays sync (it runs in a thread)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except ToolError:
                raise
            except Exception as exc:
                raise ToolError(describe_exception(tool, exc)) from None

        return async_tool

    @functools.wraps(fn)
    def sync_tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(describe_exception(tool, exc)) from None

    return sync_tool
