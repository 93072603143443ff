"""Fixtures that run the real gateway (`gaia-env serve`) with real server subprocesses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_harness import PROBE_REGISTRY, RunningGateway, launch, write_registry


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator:
    started: list[RunningGateway] = []

    def start(*args: str, **kwargs) -> RunningGateway:
        gateway = launch(tmp_path, *args, **kwargs)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()


@pytest.fixture(scope="session")
def real_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """Every server of the shipped registry, as `make serve` runs them."""
    tmp = tmp_path_factory.mktemp("real")
    gateway = launch(tmp)
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def probe_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("probe")
    registry = write_registry(tmp / "servers.toml", PROBE_REGISTRY)
    gateway = launch(tmp, "--config", str(registry))
    yield gateway
    gateway.stop()
