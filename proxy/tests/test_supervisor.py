"""Supervision of one replica against real processes: the probe server, and a command that crashes."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass, field
from typing import Any

import pytest
from gaia_env import supervisor
from gaia_env.registry import ServerSpec
from gaia_env.replica import Replica, ReplicaState
from gaia_env.supervisor import backoff, start_slots, supervise
from gaia_kit_testing.probe import PROBE

pytestmark = pytest.mark.anyio


@dataclass
class Recorder:
    """A pool that keeps its replica for `keep_for` lost processes and records what it is told."""

    keep_for: int = 1
    states: list[ReplicaState] = field(default_factory=list)
    tools: list[list[dict[str, Any]]] = field(default_factory=list)
    downs: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def keeps(self, replica: Replica) -> bool:
        return self.downs < self.keep_for

    def came_up(self, replica: Replica, tools: list[dict[str, Any]]) -> None:
        self.tools.append(tools)
        self.moved(replica, ReplicaState.READY)

    def moved(self, replica: Replica, state: ReplicaState) -> None:
        replica.state = state
        self.states.append(state)
        self.changed.set()

    def went_down(self, replica: Replica) -> None:
        self.downs += 1


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor, "FIRST_BACKOFF_S", 0.01)


async def test_a_server_that_keeps_crashing_is_marked_failed_with_its_last_words(probe_env) -> None:
    spec = ServerSpec(
        id="crashy", command=("{python}", "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)")
    )
    replica, pool = Replica(0), Recorder(keep_for=supervisor.CRASHES_BEFORE_FAILED)
    await asyncio.wait_for(supervise(spec, probe_env, replica, pool, start_slots(2)), 60)
    assert pool.tools == [] and replica.restarts == supervisor.CRASHES_BEFORE_FAILED
    assert pool.states == [ReplicaState.RESTARTING] * (supervisor.CRASHES_BEFORE_FAILED - 1) + [
        ReplicaState.FAILED
    ]
    assert replica.last_error.startswith("failed to start: ") and "boom" in replica.last_error


async def test_a_process_that_exits_is_replaced_by_a_new_generation(probe_env) -> None:
    replica, pool = Replica(0), Recorder(keep_for=2)
    task = asyncio.create_task(
        supervise(
            ServerSpec(id="probe", command=("{python}", str(PROBE))), probe_env, replica, pool, start_slots(2)
        )
    )
    try:
        while replica.generation < 1:
            await asyncio.wait_for(pool.changed.wait(), 60)
            pool.changed.clear()
        first = replica.process
        assert replica.state is ReplicaState.READY and "echo" in {t["name"] for t in pool.tools[0]}
        first.proc.send_signal(signal.SIGTERM)
        while replica.generation < 2:
            await asyncio.wait_for(pool.changed.wait(), 60)
            pool.changed.clear()
        assert replica.process is not first and replica.restarts == 1 and replica.state is ReplicaState.READY
        assert pool.states[:3] == [ReplicaState.READY, ReplicaState.RESTARTING, ReplicaState.RESTARTING]
        assert replica.last_error == "server was killed by SIGTERM"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await replica.process.stop()


async def test_a_process_starts_only_in_its_turn(probe_env) -> None:
    starts = start_slots(2)
    await starts.acquire()
    await starts.acquire()  # both turns taken, as by two servers still importing
    replica, pool = Replica(0), Recorder()
    task = asyncio.create_task(
        supervise(ServerSpec(id="probe", command=("{python}", str(PROBE))), probe_env, replica, pool, starts)
    )
    try:
        await asyncio.sleep(0.5)
        assert replica.process is not None and replica.process.proc is None, "started before its turn"
        starts.release()
        await asyncio.wait_for(pool.changed.wait(), 60)
        assert replica.state is ReplicaState.READY and replica.generation == 1
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await replica.process.stop()


def test_backoff_doubles_up_to_its_ceiling() -> None:
    assert [backoff(n) for n in range(3)] == [0.01, 0.02, 0.04]
    assert backoff(40) == supervisor.MAX_BACKOFF_S
