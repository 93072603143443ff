"""The `call` fixture of a server's tests, made in one line of its conftest:

call = call_fixture(server)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from .checks import Invoke, session_call


def call_fixture(server: MCPServer, session_id: str = "s1") -> Callable[..., Any]:
    """A fixture named `call`: call(tool, **arguments) -> CallToolResult, through the MCP protocol,
    in `session_id`, whose workspace is kit_env's."""

    @pytest.fixture
    async def call(kit_env: SimpleNamespace) -> AsyncIterator[Invoke]:
        async with session_call(server, kit_env.workspace, session_id) as invoke:
            yield invoke

    return call
