"""KitServer: an MCPServer whose tools fail with one clear sentence, never a traceback.

Each tools/call runs inside a `gaia_kit.core.calls.Call`: the tool's hints, its cancellation and its
progress, reachable from the worker thread that does the work. A plain `def` tool runs in a worker
thread that a cancelled call stops waiting for at once; the call's `cancelled` event then tells the
thread (and any subprocess it runs through gaia_kit.execution.process) to stop.

A server made with `bounded_calls=True` (the document and spreadsheet servers) runs each plain `def`
tool in a child forked from the event loop under the per-call memory limit (`gaia_kit.core.bounded`):
a file that inflates to gigabytes gets a clear answer, and the memory a call took goes back when it
ends.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
from gaia_contract import (
    BUDGET_SPENT_KEY,
    SESSION_ENDED,
    SESSION_ID_KEY,
    TASK_KEY,
    USAGE_KEY,
    WITHHELD_KEY,
)
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, NotificationParams, TextContent

from gaia_kit.core import calls, logs
from gaia_kit.core.benchmark_guard import screen_result
from gaia_kit.core.bounded import run_bounded
from gaia_kit.core.callbacks import SessionEndHandler, call_each
from gaia_kit.core.errors import describe_exception
from gaia_kit.core.results import rewritten
from gaia_kit.core.schemas import strict_input_schema
from gaia_kit.core.session import session_of

logger = logging.getLogger("gaia_kit")


class SessionEndedParams(NotificationParams):
    session_id: str  # sessionId on the wire


class KitServer(MCPServer):
    def __init__(self, *args: Any, bounded_calls: bool = False, web_facing: bool = False, **kwargs: Any):
        """`bounded_calls`: plain `def` tools run in a child forked per call, under GAIA_CALL_MEMORY_MB
        (gaia_kit.core.bounded). `web_facing`: every result of this server's tools is screened by the
        benchmark-copy guard (gaia_kit.core.benchmark_guard) before it is answered."""
        super().__init__(*args, **kwargs)
        self._bounded_calls = bounded_calls
        self.web_facing = web_facing
        self._session_end_handlers: list[SessionEndHandler] = []
        self._lowlevel_server.add_notification_handler(SESSION_ENDED, SessionEndedParams, self._session_ended)

    def on_session_end(self, handler: SessionEndHandler) -> SessionEndHandler:
        """Register `handler(session_id)`, called when the gateway ends a session (DELETE or idle)."""
        self._session_end_handlers.append(handler)
        return handler

    async def _session_ended(self, ctx: Any, params: SessionEndedParams) -> None:
        await call_each(self._session_end_handlers, params.session_id, logger)

    def tool(self, name: str | None = None, *, output: Any = None, **kwargs: Any) -> Callable[[Any], Any]:
        """Register a tool; `output` (a pydantic model or type) publishes its structured result's schema."""

        def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tool(fn, name=name, output=output, **kwargs)
            return fn

        return decorator

    def add_tool(
        self, fn: Callable[..., Any], name: str | None = None, *, output: Any = None, **kwargs: Any
    ) -> None:
        # Text results only, unless a tool publishes an `output` schema and returns gaia_kit.core.results.
        kwargs["structured_output"] = False
        # Agents read the description: give them the docstring without its source indentation.
        if kwargs.get("description") is None and fn.__doc__:
            kwargs["description"] = inspect.cleandoc(fn.__doc__)
        annotations = kwargs.get("annotations")
        if kwargs.get("title") is None and annotations is not None and annotations.title:
            kwargs["title"] = annotations.title
        name = name or fn.__name__
        super().add_tool(_explained(fn, name, bounded=self._bounded_calls), name=name, **kwargs)
        tool = self._tool_manager.get_tool(name)
        assert tool is not None
        tool.parameters = strict_input_schema(tool.parameters)
        if output is not None:
            tool.fn_metadata = FuncMetadata(arg_model=tool.fn_metadata.arg_model, output_model=output)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        report = context.report_progress if context is not None else None
        call = calls.Call(name, tool.annotations if tool is not None else None, report)
        _read_meta(call, context)
        token = calls.enter(call)
        # Every log record written while the tool runs names the tool and the session.
        tool_token = logs.tool.set(name)
        session_token = logs.session.set(_session_id(context))
        try:
            result = await super().call_tool(name, arguments, context)
            await call.drain()  # progress already reported goes out before the result
            if self.web_facing:
                result = screen_result(result, arguments)
            return _with_accounts(rewritten(result, _concealer(context)), call)
        except ToolError as exc:  # its sentence is the answer: no host path in it either
            exc.args = (_concealer(context)(str(exc)),)
            if call.usage or call.withheld:  # what was spent or withheld before it failed is still told
                failed = CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
                return _with_accounts(failed, call)
            raise
        except anyio.get_cancelled_exc_class():
            call.cancelled.set()
            raise
        finally:
            logs.tool.reset(tool_token)
            logs.session.reset(session_token)
            calls.leave(token)


def _read_meta(call: calls.Call, context: Context | None) -> None:
    """The task and the spent budgets the gateway forwards with the call (gaia_contract)."""
    try:
        meta = (context.request_context.meta if context is not None else None) or {}
    except ValueError:  # a Context made outside a request
        return
    task = meta.get(TASK_KEY)
    if isinstance(task, dict) and isinstance(task.get("question"), str):
        call.task_question = task["question"]
    spent = meta.get(BUDGET_SPENT_KEY)
    if isinstance(spent, list):
        call.spent = tuple(str(item) for item in spent)


def _with_accounts(result: Any, call: calls.Call) -> Any:
    """The result with what the call spent and withheld in its `_meta`, for the gateway's ledger."""
    if not isinstance(result, CallToolResult) or not (call.usage or call.withheld):
        return result
    meta = dict(result.meta or {})
    if call.usage:
        meta[USAGE_KEY] = call.usage
    if call.withheld:
        meta[WITHHELD_KEY] = call.withheld
    result.meta = meta
    return result


def _concealer(context: Context | None) -> Callable[[str], str]:
    """Rewrites the host's paths of the calling session's roots as the agent names them (the last net
    under what tools show through `PathGuard.display`)."""
    try:
        return session_of(context).paths.conceal
    except (ToolError, ValueError):  # no usable session: the tool already failed saying so
        return str


def _session_id(context: Any) -> str | None:
    try:
        meta = context.request_context.meta if context is not None else None
    except ValueError:  # a Context made outside a request
        return None
    return (meta or {}).get(SESSION_ID_KEY)


def _explained(fn: Callable[..., Any], tool: str, *, bounded: bool = False) -> Callable[..., Any]:
    """Wrap a tool so unexpected exceptions become a sentence, and a sync tool runs in a worker thread
    that a cancelled call abandons (the thread learns of it from the call and stops); with `bounded`,
    it runs in a child forked from the event loop's thread under the per-call memory limit."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except (ToolError, MCPError, calls.CallCancelled):  # MCPError: a protocol answer (busy)
                raise
            except Exception as exc:
                raise ToolError(describe_exception(tool, exc)) from None

        return async_tool

    if bounded:

        @functools.wraps(fn)
        async def bounded_tool(*args: Any, **kwargs: Any) -> Any:
            try:
                return await run_bounded(fn, *args, **kwargs)
            except (ToolError, MCPError, calls.CallCancelled):
                raise
            except Exception as exc:
                raise ToolError(describe_exception(tool, exc)) from None

        return bounded_tool

    def sync_tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ToolError, MCPError, calls.CallCancelled):
            raise
        except Exception as exc:
            raise ToolError(describe_exception(tool, exc)) from None

    @functools.wraps(fn)
    async def threaded_tool(*args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(
            functools.partial(sync_tool, *args, **kwargs), abandon_on_cancel=True
        )

    return threaded_tool
