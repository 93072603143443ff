"""A busy gateway ("retry after N s") is waited out inside the per-call deadline, not shown to the model;
busy past the deadline is an environment fault. The endpoint here is a plain MCP server (no session URLs):
the session falls back to it as it is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gaia_contract import BUSY, RETRY_AFTER
from gaia_kit_testing.loopback import LoopbackServer
from gaia_train.episode.session import McpSettings, McpToolSession
from gaia_train.episode.toolcalls import ToolCall
from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio


class Refusals:
    def __init__(self) -> None:
        self.left = 0
        self.attempts = 0


@pytest.fixture(scope="module")
def crowded() -> Iterator[tuple[str, Refusals]]:
    refusals = Refusals()
    server = MCPServer("crowded")

    @server.tool()
    def lookup(key: str) -> str:
        """Answer busy while refusals are left, then the value."""
        refusals.attempts += 1
        if refusals.left:
            refusals.left -= 1
            raise MCPError(
                BUSY, "Server crowded is busy; retry after 1 s.", {RETRY_AFTER: 1, "server": "crowded"}
            )
        return f"value of {key}"

    @server.tool()
    def broken() -> str:
        """Fail with a protocol error that is not busy."""
        raise MCPError(-32602, "Invalid arguments for broken.")

    app = server.streamable_http_app(stateless_http=True, json_response=True)
    with LoopbackServer(app, lifespan="on") as loopback:
        yield loopback.url("/mcp"), refusals


async def call(url: str, name: str, timeout: float, **arguments: object):
    async with McpToolSession(McpSettings(url=url, call_timeout_s=timeout, mode="legacy")) as session:
        return await session.call(ToolCall(id="c1", name=name, arguments=arguments))


async def test_busy_answers_are_retried_after_the_time_they_give(crowded) -> None:
    url, refusals = crowded
    refusals.left, refusals.attempts = 2, 0
    outcome = await call(url, "lookup", 30, key="k")
    assert (outcome.text, outcome.is_error, refusals.attempts) == ("value of k", False, 3)
    assert outcome.seconds >= 2  # it waited as told: 1 s, then 1.5 s (plus jitter)


async def test_past_the_deadline_the_busy_answer_is_the_outcome(crowded) -> None:
    url, refusals = crowded
    refusals.left, refusals.attempts = 100, 0
    outcome = await call(url, "lookup", 2, key="k")
    assert outcome.is_error and refusals.attempts == 2
    # busy past the deadline is the environment's fault: it ends the episode, it is no tool result
    assert outcome.fault is not None and "stayed busy past the call's 2 s deadline" in outcome.fault
    assert "busy; retry after 1 s" in outcome.text and "did not finish" not in outcome.text
    assert outcome.seconds < 2


async def test_other_protocol_errors_are_not_retried(crowded) -> None:
    url, refusals = crowded
    outcome = await call(url, "broken", 30)
    assert outcome.is_error and "Invalid arguments for broken" in outcome.text and outcome.fault is None
