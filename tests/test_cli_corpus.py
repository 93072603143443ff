"""`gaia-env corpus build|stats`: the offline index from a folder and from a ZIM, through the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gaia_kit_testing.fake_search import write_zim


def corpus(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "gaia_env", "corpus", *args]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def test_build_a_folder_then_stats(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Auks\n\nAuks are seabirds.")
    (tmp_path / "docs" / "b.txt").write_text("Terns dive for fish.")
    index = tmp_path / "index.sqlite"
    built = corpus("build", str(tmp_path / "docs"), "--output", str(index))
    assert built.returncode == 0, built.stderr
    assert "indexed 2 documents" in built.stdout and f"GAIA_CORPUS_PATH={index}" in built.stdout
    stats = corpus("stats", env={"GAIA_CORPUS_PATH": str(index)})
    assert stats.returncode == 0 and json.loads(stats.stdout)["documents"] == 2


def test_build_a_zim_records_its_metadata(tmp_path: Path) -> None:
    zim = write_zim(tmp_path / "w.zim", {"Auk": "<html><body><p>The great auk is extinct.</p></body></html>"})
    index = tmp_path / "w.sqlite"
    assert corpus("build", str(zim), "--output", str(index)).returncode == 0
    stats = json.loads(corpus("stats", "--path", str(index)).stdout)
    assert stats["kind"] == "zim" and stats["zim_metadata"]["Name"].startswith("wikipedia_en")


def test_mistakes_say_what_to_do(tmp_path: Path) -> None:
    no_source = corpus("build", "--output", str(tmp_path / "x.sqlite"))
    assert no_source.returncode == 2 and "needs a SOURCE" in no_source.stderr
    missing = corpus("stats", "--path", str(tmp_path / "none.sqlite"))
    assert missing.returncode == 1 and "gaia-env corpus build" in missing.stderr
    wrong = corpus("build", str(tmp_path / "nothing"), "--output", str(tmp_path / "x.sqlite"))
    assert wrong.returncode == 1 and "neither a folder nor a .zim" in wrong.stderr
