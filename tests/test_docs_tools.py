"""docs/tools.md is generated from the live catalog; it must match what the servers serve now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_tools_reference_is_current(tmp_path: Path) -> None:
    fresh = tmp_path / "tools.md"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gaia_env",
            "tools",
            "--format",
            "markdown",
            "--output",
            str(fresh),
            "--workspace-root",
            str(tmp_path / "ws"),
            "--dataset-dir",
            str(tmp_path / "data"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    committed = (ROOT / "docs" / "tools.md").read_text()
    assert committed == fresh.read_text(), "docs/tools.md is stale: run `make docs` and commit it."
