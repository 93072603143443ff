"""The end-to-end tests' gateway: the launcher (gaia_kit_testing.gateway) and the probe server's
registries from tests/fixtures."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gaia_kit_testing.gateway import RunningGateway, launch, readable_by_servers, wait_until_ready
from gaia_kit_testing.loopback import free_port

__all__ = [
    "PROBE",
    "PROBE_REGISTRY",
    "ROOT",
    "RunningGateway",
    "free_port",
    "launch",
    "readable_by_servers",
    "wait_until_ready",
    "write_registry",
]

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "fixtures" / "probe_server.py"


def write_registry(path: Path, entries: str) -> Path:
    path.write_text(textwrap.dedent(entries).replace("{probe}", str(PROBE)))
    return path


PROBE_REGISTRY = """
[servers.probe-a]
command = ["{python}", "{probe}"]
timeout = 4
hung_after_s = 3

[servers.probe-b]
command = ["{python}", "{probe}"]
replicas = 2
stateful = true
"""
