"""Supervision: keep one replica's process running.

Start it, watch it (watchdog.py), and when it exits or hangs start a new one after a backoff that
doubles up to MAX_BACKOFF_S. A replica that crashes CRASHES_BEFORE_FAILED times within
CRASH_WINDOW_S is marked failed (its pool refuses calls with the last error) and keeps retrying at
the slowest pace, so a server that comes back is used again.

Starting is CPU-bound (a server's imports take seconds of one core), so a gateway lets only as many
processes start at once as it has cores: 27 servers starting together on two cores each took the
whole herd's time and missed their own startup_timeout, where one after another each starts in
seconds. The timeout counts from a process's turn, not from the queue.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from .process import CallTimeout, RemoteError, ServerGone, ServerProcess
from .registry import ServerSpec
from .replica import Replica, ReplicaState
from .watchdog import watch

logger = logging.getLogger("gaia_env.pool")

CRASH_WINDOW_S = 60.0
CRASHES_BEFORE_FAILED = 5
FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 30.0


class Supervised(Protocol):
    """What a supervisor tells the pool its replica belongs to."""

    def keeps(self, replica: Replica) -> bool:
        """Whether the replica should still run (the pool is not closing, scaling did not retire it)."""
        ...

    def came_up(self, replica: Replica, tools: list[dict[str, Any]]) -> None:
        """A new process of the replica answered initialize with these tools."""
        ...

    def moved(self, replica: Replica, state: ReplicaState) -> None:
        """The replica's state changed."""
        ...

    def went_down(self, replica: Replica) -> None:
        """The replica's process exited, hung or failed to start; a restart follows."""
        ...


def new_process(spec: ServerSpec, env: Mapping[str, str], replica: Replica) -> ServerProcess:
    """The replica's next process: its command line is built here and nowhere else."""
    return ServerProcess(f"{spec.id}#{replica.index}", spec.argv(), env, spec.nice)


def start_slots(cores: int) -> asyncio.Semaphore:
    """The turns of processes starting at once, shared by every pool of one gateway."""
    return asyncio.Semaphore(max(2, cores))


async def supervise(
    spec: ServerSpec, env: Mapping[str, str], replica: Replica, pool: Supervised, starts: asyncio.Semaphore
) -> None:
    """Run the replica's process until the pool no longer keeps the replica."""
    attempt = 0
    while pool.keeps(replica):
        process = new_process(spec, env, replica)
        replica.process, replica.hung = process, None
        try:
            async with starts:
                tools = await process.start(spec.startup_timeout)
        except (ServerGone, CallTimeout, RemoteError, OSError) as exc:
            replica.last_error = f"failed to start: {spec.missing_program() or _reason(exc, process)}"
            logger.error("%s #%d %s", spec.id, replica.index, replica.last_error)
            await process.stop(grace=1.0)
        else:
            replica.generation += 1
            pool.came_up(replica, tools)
            attempt = 0
            await _run(spec, replica, process)
            if not pool.keeps(replica):
                break
            replica.last_error = replica.hung or f"server {process.last_words()}"
            logger.error("%s #%d %s; restarting it", spec.id, replica.index, replica.last_error)
            pool.moved(replica, ReplicaState.RESTARTING)
            await process.stop(grace=1.0)
        if not pool.keeps(replica):
            break
        replica.restarts += 1
        failing = _crashed(replica, time.monotonic())
        pool.moved(replica, ReplicaState.FAILED if failing else ReplicaState.RESTARTING)
        pool.went_down(replica)
        await asyncio.sleep(backoff(attempt))
        attempt += 1


async def _run(spec: ServerSpec, replica: Replica, process: ServerProcess) -> None:
    """Until the process exits; the watchdog kills it first if it hangs."""
    watchdog = asyncio.create_task(watch(process, spec.hung_after_s), name=f"watch-{process.name}")
    await process.exited.wait()
    replica.hung = watchdog.result() if watchdog.done() and not watchdog.cancelled() else None
    watchdog.cancel()
    if replica.hung:
        logger.error("%s #%d %s; killed it", spec.id, replica.index, replica.hung)


def backoff(attempt: int) -> float:
    """Seconds to wait before the next start after `attempt` failed ones in a row."""
    return min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2**attempt)


def _crashed(replica: Replica, now: float) -> bool:
    """Count a crash; True when the replica crashed too often lately to be called ready again soon."""
    replica.crash_times = [t for t in replica.crash_times if now - t < CRASH_WINDOW_S] + [now]
    return len(replica.crash_times) >= CRASHES_BEFORE_FAILED


def _reason(exc: BaseException, process: ServerProcess) -> str:
    if isinstance(exc, CallTimeout):
        return "no answer to initialize in time"
    if isinstance(exc, OSError):
        return f"could not run {process.argv[0]}: {exc.strerror or exc}"
    return str(exc) or process.last_words()
