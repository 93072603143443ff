"""The answer sizes in docs/tools.md are what the tools answer now (benchmarks/answer_sizes.py)."""

from __future__ import annotations

import pytest
from gaia_env import answer_sizes
from gaia_kit.core.settings import forget_settings

from benchmarks import answer_sizes as answer_sizes_bench


@pytest.fixture
def bench(monkeypatch):
    # measure() points the kit at its own workspace and dataset; keep that to this test.
    monkeypatch.setenv("GAIA_WORKSPACE_ROOT", "")
    monkeypatch.setenv("GAIA_DATASET_DIR", "")
    yield answer_sizes_bench
    forget_settings()


def test_committed_answer_sizes_are_current(bench):
    measured = bench.run()
    committed = answer_sizes.load()
    changed = [
        f"{new['tool']} on {new['input']}: {old['chars']} -> {new['chars']}"
        for new, old in zip(measured, committed, strict=False)
        if new != old
    ]
    assert len(measured) == len(committed) and not changed, (
        f"answer sizes changed ({changed}): run `uv run python -m benchmarks.answer_sizes` and `make docs`"
    )


def test_the_rows_layout_is_the_compact_one():
    sizes = {(r["tool"], r["input"]): r["chars"] for r in answer_sizes.load()}
    cells = sizes[("read_data_from_excel", "50 rows x 8 columns (layout cells)")]
    rows = sizes[("read_data_from_excel", "50 rows x 8 columns (layout rows)")]
    assert rows * 4 < cells
