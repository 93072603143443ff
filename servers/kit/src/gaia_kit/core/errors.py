"""Tool failures as one clear sentence for the model, never a stack trace."""

from __future__ import annotations

import errno
import logging

from gaia_contract import BUSY, RETRY_AFTER, busy_message
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

logger = logging.getLogger("gaia_kit")


class ToolFailure(ToolError):
    """A failure the user can act on: the message says what failed and what to do."""


class Busy(MCPError):
    """Refused for lack of capacity now: a JSON-RPC busy error the gateway passes on, and clients
    retry after `retry_after` seconds (raise it from a tool; it is not a tool failure)."""

    def __init__(self, what: str, retry_after: int):
        super().__init__(BUSY, busy_message(what, retry_after), {RETRY_AFTER: retry_after})


def describe_exception(tool: str, exc: BaseException) -> str:
    """Turn an unexpected exception into one sentence; the traceback goes to the log only."""
    if isinstance(exc, FileNotFoundError):
        return f"{tool}: no such file or directory: {exc.filename}. List the directory to see what exists."
    if isinstance(exc, IsADirectoryError):
        return f"{tool}: {exc.filename} is a directory, not a file."
    if isinstance(exc, NotADirectoryError):
        return f"{tool}: {exc.filename} is not a directory."
    if isinstance(exc, PermissionError):
        return f"{tool}: permission denied for {exc.filename}."
    if isinstance(exc, FileExistsError):
        return f"{tool}: {exc.filename} already exists; choose another name or remove it first."
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"{tool}: no space left on the device."
    if isinstance(exc, MemoryError):
        return f"{tool}: the input is too large to process in memory; read a smaller part of it."
    if isinstance(exc, UnicodeDecodeError):
        return f"{tool}: the file is not valid {exc.encoding} text; pass another encoding."
    logger.error("%s raised an unexpected exception", tool, exc_info=exc)
    detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    if isinstance(exc, TimeoutError):
        # asyncio's timeouts carry no message: say what a timeout means here instead.
        return (
            f"{tool}: a step of it did not finish in time{f' ({detail})' if detail else ''}; "
            "the machine may be overloaded: retry in a few seconds, or ask for less."
        )
    if not detail:
        return f"{tool} failed unexpectedly ({type(exc).__name__}, raised without a message; the server log has the traceback)."
    return f"{tool} failed unexpectedly ({type(exc).__name__}: {detail})."
