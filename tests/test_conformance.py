"""The official MCP conformance suite (npm @modelcontextprotocol/conformance) against the gateway.

tests/conformance_baseline.toml says which server scenarios must pass and why each other one is
not run; a scenario the suite adds must be named there before this module passes again.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from gaia_kit_testing.gateway import RunningGateway

BASELINE = tomllib.loads((Path(__file__).parent / "conformance_baseline.toml").read_text())


def test_the_baseline_names_every_server_scenario_once(conformance_suite) -> None:
    listing = conformance_suite("list").stdout
    server_part = listing.split("Client scenarios")[0]
    known = set(re.findall(r"^\s+- ([a-z0-9-]+) \[", server_part, flags=re.M))
    named = [name for table in BASELINE.values() for name in table]
    assert len(named) == len(set(named)), "a scenario is named twice in conformance_baseline.toml"
    assert known, listing
    assert set(named) == known, (
        f"unnamed: {sorted(known - set(named))}; no longer in the suite: {sorted(set(named) - known)}"
    )


@pytest.mark.parametrize("scenario", sorted(BASELINE["pass"]))
def test_conformance_scenario(
    conformance_suite, real_gateway: RunningGateway, scenario: str, tmp_path: Path
) -> None:
    out = conformance_suite("server", "--url", real_gateway.url, "--scenario", scenario, "-o", str(tmp_path))
    report = out.stdout + out.stderr
    assert out.returncode == 0, report
    assert "0 failed" in report and "Passed: " in report, report
