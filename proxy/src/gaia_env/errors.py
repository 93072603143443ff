"""The one error type the gateway answers requests with: a JSON-RPC error, the same on every front.

Both the SDK front (front.py) and the bare fast path (bare.py) turn a GatewayError into the same
`{"code", "message", "data"}`; tool failures are not errors but results with isError true.
"""

from __future__ import annotations

from typing import Any

from gaia_contract import BUSY, RETRY_AFTER, busy_message
from mcp_types import INVALID_PARAMS


class GatewayError(Exception):
    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def as_jsonrpc(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class InvalidRequest(GatewayError):
    """The client asked for something that cannot be served as asked (JSON-RPC invalid params)."""

    def __init__(self, message: str):
        super().__init__(INVALID_PARAMS, message)


class SelectionError(InvalidRequest):
    pass


class UnknownTool(InvalidRequest):
    pass


class Busy(GatewayError):
    """Refused for lack of capacity now; `retry_after` says when to send the call again."""

    def __init__(self, what: str, retry_after: int, server: str):
        super().__init__(BUSY, busy_message(what, retry_after), {RETRY_AFTER: retry_after, "server": server})
        self.retry_after = retry_after
