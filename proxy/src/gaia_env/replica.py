"""One replica of a server, and the states it and its pool go through.

A replica is a slot in the pool that a process fills: the process may exit and be replaced (a new
generation), the replica stays. Scaling retires a replica (`wanted` false) and may revive it later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from .process import ServerProcess


class ReplicaState(StrEnum):
    STARTING = "starting"
    """Its process is starting; no call goes to it yet."""
    READY = "ready"
    """Its process answered initialize: it takes calls."""
    DRAINING = "draining"
    """Retired by scaling: it finishes its calls, takes no new ones, then stops."""
    RESTARTING = "restarting"
    """Its process exited or hung: a new one starts after a backoff."""
    FAILED = "failed"
    """It crashed too often in a short time: it keeps retrying, slowly, and calls are refused."""
    STOPPED = "stopped"
    """Closed, or retired and drained."""


class PoolState(StrEnum):
    READY = "ready"
    """Every wanted replica is ready (or draining)."""
    DEGRADED = "degraded"
    """Some replicas are ready, some are not."""
    STARTING = "starting"
    RESTARTING = "restarting"
    FAILED = "failed"
    """Every wanted replica failed: calls are refused with the last error."""


@dataclass
class Replica:
    index: int
    state: ReplicaState = ReplicaState.STARTING
    process: ServerProcess | None = None
    in_flight: int = 0
    quick_in_flight: int = 0
    """Of in_flight, the quick calls (dispatch.py)."""
    restarts: int = 0
    generation: int = 0
    """One more each time a process of this replica comes up: a session's state lives in one."""
    last_error: str | None = None
    crash_times: list[float] = field(default_factory=list)
    wanted: bool = True
    """False once scaling retires the replica."""
    hung: str | None = None
    """Why the watchdog killed its process, if it did."""

    @property
    def ready(self) -> bool:
        return self.state is ReplicaState.READY


def pool_state(states: Iterable[ReplicaState]) -> PoolState:
    """What a pool is, from the states of its wanted replicas."""
    present = set(states)
    if ReplicaState.READY in present:
        serving = {ReplicaState.READY, ReplicaState.DRAINING}
        return PoolState.READY if present <= serving else PoolState.DEGRADED
    if present == {ReplicaState.FAILED}:
        return PoolState.FAILED
    return PoolState.STARTING if ReplicaState.STARTING in present else PoolState.RESTARTING
