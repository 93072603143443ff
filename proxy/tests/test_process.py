"""One server process over stdio, against the real probe server: replies by id, exits, timeouts, logs."""

from __future__ import annotations

import asyncio
import collections
import logging
import sys
from pathlib import Path

import psutil
import pytest
from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from gaia_env.logs import ServerLog
from gaia_env.process import CallTimeout, ServerGone, ServerProcess
from gaia_kit_testing.probe import PROBE

pytestmark = pytest.mark.anyio


class Caught(logging.Handler):
    """Records the gateway relays from servers' stderr; `arrived` is set by each."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.arrived = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.arrived.set()

    async def next(self) -> logging.LogRecord:
        self.arrived.clear()
        await asyncio.wait_for(self.arrived.wait(), 10)
        return self.records[-1]


@pytest.fixture
async def probe(probe_env: dict[str, str]):
    process = ServerProcess("probe#0", [sys.executable, str(PROBE)], probe_env)
    tools = await process.start(60)
    assert {"echo", "nap", "crash"} <= {t["name"] for t in tools}
    yield process
    await process.stop(grace=1)


@pytest.fixture
def relayed():
    handler = Caught()
    logger = logging.getLogger("gaia_env.server")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


async def test_calls_share_one_pipe_and_replies_match_by_id(probe: ServerProcess) -> None:
    slow = asyncio.ensure_future(probe.request("tools/call", call("nap", seconds=1.0), 10))
    fast = await probe.request("tools/call", call("echo", text="first"), 10)
    assert fast["content"][0]["text"] == "first" and not slow.done()
    assert (await slow)["content"][0]["text"] == "slept 1.0"


async def test_anything_on_stdout_counts_as_heard(probe: ServerProcess) -> None:
    before = probe.last_heard
    await probe.request("ping", {}, 10)
    assert probe.last_heard > before


async def test_an_exit_fails_pending_calls_at_once(probe: ServerProcess) -> None:
    pending = asyncio.ensure_future(probe.request("tools/call", call("nap", seconds=60), 90))
    with pytest.raises(ServerGone, match="exited with code 3"):
        await probe.request("tools/call", call("crash"), 10)
    with pytest.raises(ServerGone):
        async with asyncio.timeout(5):  # at once, not when the nap would have ended
            await pending
    assert probe.exited.is_set()


async def test_a_timeout_cancels_the_call_and_the_server_goes_on(probe: ServerProcess) -> None:
    with pytest.raises(CallTimeout):
        await probe.request("tools/call", call("nap", seconds=5), 0.2)
    reply = await probe.request("tools/call", call("echo", text="still here"), 10)
    assert reply["content"][0]["text"] == "still here"


async def test_stop_ends_the_whole_process_tree(probe: ServerProcess) -> None:
    child = psutil.Process(
        int((await probe.request("tools/call", call("spawn_child"), 10))["content"][0]["text"])
    )
    await probe.stop(grace=1)
    _, alive = psutil.wait_procs([child], timeout=5)
    assert not alive


async def test_a_server_and_what_it_starts_run_below_the_gateways_priority(probe_env: dict[str, str]) -> None:
    process = ServerProcess("probe#0", [sys.executable, str(PROBE)], probe_env, nice=7)
    await process.start(60)
    try:
        child = psutil.Process(
            int((await process.request("tools/call", call("spawn_child"), 10))["content"][0]["text"])
        )
        expected = min(19, psutil.Process().nice() + 7)
        assert psutil.Process(process.pid).nice() == expected
        assert child.nice() == expected
        autogroup = Path(f"/proc/{process.pid}/autogroup")
        if autogroup.exists():  # the server leads its own session, so its own autogroup
            assert autogroup.read_text().split()[-1] == str(expected)
    finally:
        await process.stop(grace=1)


async def test_server_log_records_keep_level_server_session_and_tool(
    probe: ServerProcess, relayed: Caught, kit_env
) -> None:
    meta = {SESSION_ID_KEY: "s-logs", WORKSPACE_KEY: str(kit_env.workspace)}
    params = {**call("log", level="error", message="the disk is on fire"), "_meta": meta}
    arrived = asyncio.ensure_future(relayed.next())
    await probe.request("tools/call", params, 10)
    record = await arrived
    assert record.levelno == logging.ERROR and record.getMessage() == "the disk is on fire"
    assert (record.server, record.replica, record.session, record.tool) == ("probe", 0, "s-logs", "log")
    assert record.server_logger == "probe"


async def test_raw_stderr_lines_of_one_burst_are_one_record(probe: ServerProcess, relayed: Caught) -> None:
    arrived = asyncio.ensure_future(relayed.next())
    await probe.request("tools/call", call("scribble", lines=6), 10)
    record = await arrived
    assert record.getMessage().count("probe box line") == 6 and record.levelno == logging.INFO
    assert record.server == "probe"


def test_a_traceback_is_one_error_record(relayed: Caught) -> None:
    tail: collections.deque[str] = collections.deque(maxlen=5)
    relay = ServerLog("probe#1", tail)
    for line in ["Traceback (most recent call last):", '  File "x.py", line 1', "ValueError: bad input", ""]:
        relay.feed(line)
    relay.flush()
    (record,) = relayed.records
    assert record.levelno == logging.ERROR and record.getMessage().endswith("ValueError: bad input")
    assert record.replica == 1 and tail[-1] == "ValueError: bad input"
    relay.feed('{"level": "warning", "logger": "x", "msg": "careful", "args": "clash"}')
    assert relayed.records[-1].levelno == logging.WARNING and relayed.records[-1].server_args == "clash"
