"""A pool's state from its replicas' states."""

from __future__ import annotations

import pytest
from gaia_env.replica import PoolState, ReplicaState, pool_state

R = ReplicaState


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([R.READY, R.READY], PoolState.READY),
        ([R.READY, R.DRAINING], PoolState.READY),
        ([R.READY, R.RESTARTING], PoolState.DEGRADED),
        ([R.READY, R.FAILED], PoolState.DEGRADED),
        ([R.FAILED, R.FAILED], PoolState.FAILED),
        ([R.STARTING, R.FAILED], PoolState.STARTING),
        ([R.RESTARTING, R.FAILED], PoolState.RESTARTING),
    ],
)
def test_pool_state(states: list[ReplicaState], expected: PoolState) -> None:
    assert pool_state(states) is expected


def test_states_read_as_their_wire_names() -> None:
    assert f"{PoolState.DEGRADED}" == "degraded" and ReplicaState.DRAINING == "draining"
