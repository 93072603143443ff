"""The watchdog against the real probe server: a stopped process is hung, a process that exits is not."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest
from gaia_env.process import ServerProcess
from gaia_env.watchdog import watch
from gaia_kit_testing.probe import PROBE

pytestmark = pytest.mark.anyio


@pytest.fixture
async def probe(probe_env: dict[str, str]):
    process = ServerProcess("probe#0", [sys.executable, str(PROBE)], probe_env)
    await process.start(60)
    yield process
    await process.stop()


async def test_a_stopped_process_is_killed_and_named_hung(probe: ServerProcess) -> None:
    os.kill(probe.pid, signal.SIGSTOP)
    reason = await asyncio.wait_for(watch(probe, hung_after_s=1.5), 30)
    assert reason is not None and "not even a ping" in reason and "using no CPU" in reason
    await asyncio.wait_for(probe.exited.wait(), 10)


async def test_a_process_that_answers_pings_is_left_alone_until_it_exits(probe: ServerProcess) -> None:
    watching = asyncio.create_task(watch(probe, hung_after_s=0.6))
    await asyncio.sleep(1.5)  # several quiet periods: each ends with a ping it answers
    assert not watching.done() and not probe.exited.is_set()
    probe.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(watching, 10) is None
