"""Pool and process tests run the probe server (tests/fixtures/probe_server.py) as a real subprocess."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from types import SimpleNamespace

import pytest
from gaia_env.pool import ServerPool
from gaia_env.registry import ServerSpec
from gateway_harness import PROBE

PROBE_SPEC = ServerSpec(id="probe", command=("{python}", str(PROBE)), replicas=1, timeout=20)


@pytest.fixture
def probe_env(kit_env: SimpleNamespace) -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@pytest.fixture
async def start_pool(probe_env: dict[str, str]) -> AsyncIterator[Callable[..., ServerPool]]:
    """start_pool(**spec_fields) -> a started ServerPool of the probe, ready; closed after the test."""
    pools: list[ServerPool] = []

    async def start(**fields: object) -> ServerPool:
        pool = ServerPool(replace(PROBE_SPEC, **fields), probe_env)
        pools.append(pool)
        pool.start()
        await pool.wait_started(60)
        assert pool.state == "ready", pool.describe()
        return pool

    yield start
    for pool in pools:
        await pool.close()
