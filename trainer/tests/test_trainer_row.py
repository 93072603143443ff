"""The dataset row: a GAIA task and a task file's line become rows of one shape."""

from __future__ import annotations

import json
from pathlib import Path

from gaia_train import row
from gaia_train.data import gaia as ds
from gaia_train.data.tasks import load_task_file

MOUNT = "/workspace/gaia_dataset"


def test_gaia_and_task_file_rows_have_the_rows_columns_and_extra_info_keys(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x\n1\n")
    task = ds.GaiaTask("t1", " How many rows? ", 1, "1", "a.csv", "2023/validation/a.csv", "validation")
    gaia_row = ds.to_row(task, 7, MOUNT)
    tasks = tmp_path / "suite.jsonl"
    tasks.write_text(json.dumps({"question": " How many rows? ", "answer": 1, "attachment": "a.csv"}) + "\n")
    (file_row,) = load_task_file(tasks, tmp_path, MOUNT)

    for built in (gaia_row, file_row):
        assert tuple(built) == row.COLUMNS
        assert built["prompt"][0] == {"role": "system", "content": row.SYSTEM_PROMPT}
        assert built["agent_name"] == row.AGENT_NAME
    assert tuple(gaia_row["extra_info"]) == row.EXTRA_INFO_KEYS
    # A task file's index is given when the parquet is written; every other key is the same.
    assert tuple(file_row["extra_info"]) == row.EXTRA_INFO_KEYS[1:]
    assert gaia_row["extra_info"]["index"] == 7
    # One sentence names the attachment at its path inside the environment, whoever wrote the row.
    assert gaia_row["prompt"][1]["content"] == (
        f"How many rows?\n\nAttached file: {MOUNT}/2023/validation/a.csv\nUse the tools to open it."
    )
    assert file_row["prompt"][1]["content"] == row.user_prompt(" How many rows? ", f"{MOUNT}/a.csv")


def test_a_row_without_an_attachment_is_the_question_alone() -> None:
    built = row.build_row(
        question="What is 6 x 7? ", answer="42", data_source="s", ability="qa", reward_style="rule",
        task_id="q", level=0, split="train", file_name="", attachment_path="", scorer="exact", tolerance=0.0,
    )  # fmt: skip
    assert built["prompt"][1]["content"] == "What is 6 x 7?"
    assert built["reward_model"] == {"style": "rule", "ground_truth": "42"}
    assert "index" not in built["extra_info"]
