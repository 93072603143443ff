"""A server's replicas against the real probe server: routing, admission, hung vs slow, lost state, scaling.

No test sleeps: each waits for the pool's own state changes (its `changed` condition) or for calls.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable

import pytest
from gaia_contract import BUSY, RETRY_AFTER, SESSION_ID_KEY, WORKSPACE_KEY
from gaia_env import pool as pool_module
from gaia_env import scaling
from gaia_env.errors import Busy
from gaia_env.pool import PoolError, ServerPool
from gaia_env.process import RemoteError, ServerProcess
from gaia_env.replica import PoolState, ReplicaState

pytestmark = pytest.mark.anyio


def params(tool: str, session: str = "s1", workspace: str = "/tmp", **arguments: object) -> dict:
    return {
        "name": tool,
        "arguments": arguments,
        "_meta": {SESSION_ID_KEY: session, WORKSPACE_KEY: workspace},
    }


def text(result: dict) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


async def until(pool: ServerPool, condition: Callable[[], bool], timeout: float = 30) -> None:
    await pool.until(condition, timeout)


async def whoami(pool: ServerPool, session: str, workspace: str) -> tuple[str, int]:
    result = await pool.call("tools/call", params("whoami", session, workspace), session)
    return text(result), int(text(result).split()[2])


async def test_calls_reuse_the_replicas_persistent_sessions(start_pool, kit_env) -> None:
    pool = await start_pool()
    pids = {(await whoami(pool, "s1", str(kit_env.workspace)))[1] for _ in range(5)}
    assert pids == {pool.replicas[0].process.pid}


async def test_a_stateful_session_sticks_and_its_end_tells_only_its_replica(
    start_pool, kit_env, monkeypatch
) -> None:
    told: list[int | None] = []
    real_notify = ServerProcess.notify
    monkeypatch.setattr(
        ServerProcess, "notify", lambda self, method, p: told.append(self.pid) or real_notify(self, method, p)
    )
    pool = await start_pool(replicas=2, stateful=True)
    workspace = str(kit_env.workspace)
    homes = {s: {(await whoami(pool, s, workspace))[1] for _ in range(4)} for s in ("a", "b", "c")}
    assert all(len(pids) == 1 for pids in homes.values())
    pool.end_session("a")
    (home,) = homes["a"]
    assert told == [home]
    answer = await pool.call("tools/call", params("wait_ended", "x", workspace, session_id="a"), "a")
    assert text(answer) == "told"
    pool.end_session("never-called")
    assert told == [home]


async def test_past_its_queue_a_call_is_refused_at_once_with_when_to_retry(start_pool, kit_env) -> None:
    pool = await start_pool(max_in_flight=1, max_queue_s=6)
    workspace = str(kit_env.workspace)
    busy = asyncio.ensure_future(pool.call("tools/call", params("nap", "s", workspace, seconds=30), "s"))
    await until(pool, lambda: pool.replicas[0].in_flight == 1)
    pool.admission.record("nap", 5.0)  # measured cost: each queued nap is 5 s of work for the one slot
    queued = [
        asyncio.ensure_future(pool.call("tools/call", params("nap", f"q{n}", workspace, seconds=30), f"q{n}"))
        for n in range(2)
    ]
    await until(pool, lambda: pool.waiting == 2)  # 10 s of work queued now
    started = time.monotonic()
    with pytest.raises(Busy) as refused:
        await pool.call("tools/call", params("nap", "late", workspace, seconds=1), "late")
    assert time.monotonic() - started < 1
    error = refused.value.as_jsonrpc()
    assert error["code"] == BUSY and error["data"] == {RETRY_AFTER: 7, "server": "probe"}
    assert "10.0 s of work is queued" in error["message"] and error["message"].endswith("retry after 7 s.")
    assert pool.describe()["busy_answers"] == 1
    for task in (busy, *queued):
        task.cancel()
    await asyncio.gather(busy, *queued, return_exceptions=True)
    assert pool.waiting == 0 and pool.describe()["queued_s"] == 0


async def test_a_quick_tool_does_not_wait_for_the_slots_heavy_calls_hold(start_pool, kit_env) -> None:
    pool = await start_pool(max_in_flight=1)
    workspace = str(kit_env.workspace)
    pool.admission.record("echo", 0.002)  # measured quick (timings vary here: the cost is set, not timed)
    heavy = asyncio.ensure_future(pool.call("tools/call", params("nap", "h1", workspace, seconds=30), "h1"))
    await until(pool, lambda: pool.replicas[0].in_flight == 1)
    queued = asyncio.ensure_future(pool.call("tools/call", params("nap", "h2", workspace, seconds=30), "h2"))
    await until(pool, lambda: pool.waiting == 1)  # the second heavy call waits for the one heavy slot
    answer = await pool.call("tools/call", params("echo", "q", workspace, text="past the line"), "q")
    assert text(answer) == "past the line" and pool.waiting == 1 and not heavy.done()
    for task in (heavy, queued):
        task.cancel()
    await asyncio.gather(heavy, queued, return_exceptions=True)


async def test_a_servers_own_busy_answer_is_passed_on(start_pool, kit_env) -> None:
    pool = await start_pool()
    with pytest.raises(RemoteError) as refused:
        await pool.call("tools/call", params("refuse", "s", str(kit_env.workspace), retry_after=3), "s")
    assert refused.value.code == BUSY and refused.value.data == {RETRY_AFTER: 3}
    assert refused.value.message == "The probe is busy; retry after 3 s."


async def test_a_stopped_process_is_hung_and_restarted(start_pool, kit_env) -> None:
    pool = await start_pool(hung_after_s=1.5)
    first = pool.replicas[0].process
    os.kill(first.pid, signal.SIGSTOP)
    await until(pool, lambda: pool.replicas[0].generation == 2 and pool.state is PoolState.READY)
    assert "not even a ping" in pool.replicas[0].last_error and pool.replicas[0].restarts == 1
    _, pid = await whoami(pool, "s", str(kit_env.workspace))
    assert pid != first.pid and first.proc.returncode == -signal.SIGKILL


async def test_a_saturated_replica_with_timed_out_calls_is_slow_not_dead(start_pool, kit_env) -> None:
    pool = await start_pool(hung_after_s=1.5, timeout=1.0)
    workspace = str(kit_env.workspace)
    replica = pool.replicas[0]
    # Four threads burning CPU for 7 s hold the replica's GIL: every call times out. Its pings get
    # through late on a loaded machine, but it uses CPU, so it has 3 x 1.5 s to answer one.
    burns = [
        pool.call("tools/call", params("spin", f"b{n}", workspace, seconds=7), f"b{n}") for n in range(4)
    ]
    outcomes = await asyncio.gather(*burns, return_exceptions=True)
    assert all(isinstance(o, PoolError) and "timed out after 1 s" in str(o) for o in outcomes), outcomes
    with pytest.raises(TimeoutError):  # through the rest of the burn, four times hung_after_s
        await asyncio.wait_for(replica.process.exited.wait(), 6)
    assert (replica.restarts, replica.generation, replica.hung) == (0, 1, None)
    assert text(await pool.call("tools/call", params("echo", "e", workspace, text="fine"), "e")) == "fine"


async def test_a_restart_tells_each_stateful_session_its_state_was_lost(start_pool, kit_env) -> None:
    pool = await start_pool(stateful=True, state="probe memories")
    workspace = str(kit_env.workspace)
    await whoami(pool, "kept", workspace)
    with pytest.raises(PoolError, match="probe memories this session had there was lost: retry"):
        await pool.call("tools/call", params("crash", "crasher", workspace), "crasher")
    await until(pool, lambda: pool.replicas[0].generation == 2 and pool.state is PoolState.READY)
    after = await pool.call("tools/call", params("whoami", "kept", workspace), "kept")
    note = after["content"][0]["text"]
    assert note.startswith("[gaia-env] Server probe was restarted since this session's last call")
    assert "exited with code 3" in note and "the probe memories this session had there was lost" in note
    assert text(after).splitlines()[-1].startswith("kept ")
    again = await pool.call("tools/call", params("whoami", "kept", workspace), "kept")
    assert len(again["content"]) == 1  # told once
    told_in_the_error = await pool.call("tools/call", params("whoami", "crasher", workspace), "crasher")
    assert len(told_in_the_error["content"]) == 1


async def test_queue_depth_adds_a_replica_and_quiet_retires_it(start_pool, kit_env, monkeypatch) -> None:
    monkeypatch.setattr(scaling, "SCALE_EVERY_S", 0.05)
    monkeypatch.setattr(scaling, "SCALE_DOWN_AFTER_S", 0.5)
    pool = await start_pool(replicas="auto", min_replicas=1, max_replicas=2, max_in_flight=1)
    workspace = str(kit_env.workspace)
    naps = [
        asyncio.ensure_future(pool.call("tools/call", params("nap", f"n{n}", workspace, seconds=60), f"n{n}"))
        for n in range(3)
    ]
    await until(pool, lambda: pool.waiting == 2)
    # Calls waiting at two scaling checks in a row start a replica, which takes one of them.
    await until(pool, lambda: sum(r.in_flight for r in pool.replicas if r.ready) == 2, 60)
    assert len(pool.active) == 2 and pool.waiting == 1
    for nap in naps:
        nap.cancel()
    await asyncio.gather(*naps, return_exceptions=True)
    await until(pool, lambda: len(pool.active) == 1 and pool.replicas[1].state is ReplicaState.STOPPED)
    assert pool.describe()["restarts"] == 0
    assert (await whoami(pool, "s", workspace))[1] == pool.replicas[0].process.pid


def test_server_errors_reach_agents_without_host_folders() -> None:
    last_words = (
        "failed to start: /srv/gaia/servers/x/.venv/bin/python does not exist: run `make sync` in /srv/gaia; "
        'File "/srv/gaia/servers/x/server.py", line 3; see http://127.0.0.1:8/a/b'
    )
    assert pool_module._for_agents(last_words) == (
        'failed to start: python does not exist: run `make sync` in gaia; File "server.py", line 3; '
        "see http://127.0.0.1:8/a/b"
    )
