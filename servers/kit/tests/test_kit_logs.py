"""What a kit server tells the gateway besides results: JSON log records naming session and tool, busy answers."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path

import pytest
from gaia_contract import BUSY, RETRY_AFTER, SESSION_ID_KEY, WORKSPACE_KEY
from gaia_kit import KitServer
from gaia_kit.core.errors import Busy, describe_exception
from gaia_kit.core.logs import JsonFormatter, log_to_stderr
from gaia_kit.core.settings import forget_settings
from mcp import Client
from mcp.shared.exceptions import MCPError


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GAIA_WORKSPACE_ROOT", str(tmp_path / "ws"))
    forget_settings()
    yield tmp_path / "ws"
    forget_settings()


def make_server() -> KitServer:
    server = KitServer("kit-logs")

    @server.tool()
    def work(n: int) -> str:
        logging.getLogger("kit-logs.work").warning("working on %d", n)
        return "done"

    @server.tool()
    async def crowded() -> str:
        raise Busy("The test server is busy", 3)

    @server.tool()
    async def fails() -> str:
        raise KeyError("deep detail")

    return server


def test_log_lines_are_one_json_object_each_with_context(roots: Path) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:

        async def run() -> None:
            meta = {SESSION_ID_KEY: "rollout-7", WORKSPACE_KEY: str(roots / "s-7")}
            async with Client(make_server()) as client:
                await client.call_tool("work", {"n": 5}, meta=meta)
                await client.call_tool("fails", {}, meta=meta)

        asyncio.run(run())
        logging.getLogger("outside").warning("no tool running")
    finally:
        root.removeHandler(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    work = next(r for r in lines if r["msg"] == "working on 5")
    assert (work["level"], work["logger"], work["session"], work["tool"]) == (
        "warning",
        "kit-logs.work",
        "rollout-7",
        "work",
    )
    failure = next(r for r in lines if r["msg"] == "fails raised an unexpected exception")
    assert failure["level"] == "error" and failure["error"] == "KeyError: 'deep detail'"
    assert "Traceback" in failure["traceback"] and failure["tool"] == "fails"
    outside = next(r for r in lines if r["msg"] == "no tool running")
    assert "session" not in outside and "tool" not in outside


def test_log_to_stderr_replaces_the_sdks_terminal_handler() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        make_server()  # the SDK installs its rich handler here
        log_to_stderr(logging.WARNING)
        (handler,) = root.handlers
        assert isinstance(handler.formatter, JsonFormatter) and root.level == logging.WARNING
    finally:
        root.handlers[:], root.level = saved[0], saved[1]


@pytest.mark.anyio
async def test_a_busy_tool_answers_with_the_busy_error_not_a_failure(roots: Path) -> None:
    async with Client(make_server()) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("crowded", {})
    assert refused.value.error.code == BUSY and refused.value.error.data == {RETRY_AFTER: 3}
    assert refused.value.error.message == "The test server is busy; retry after 3 s."


def test_a_timeout_without_a_message_still_says_what_happened() -> None:
    message = describe_exception("browser_navigate", TimeoutError())
    assert "no details" not in message and "did not finish in time" in message
    assert "raised without a message" in describe_exception("x", RuntimeError())
