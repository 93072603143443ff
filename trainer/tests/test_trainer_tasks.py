"""Task files of other suites, mixed with GAIA, and the reward that routes by row."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from gaia_train.data import gaia as ds
from gaia_train.data.tasks import TaskFileError, TaskSource, load_task_file
from gaia_train.demo.snapshot import write_demo_snapshot
from gaia_train.reward import ANSWER_KEY, routed_score


def write_tasks(path: Path, tasks: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def test_task_file_rows_carry_scorer_selection_and_attachment(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "a.csv").write_text("x\n1\n")
    path = write_tasks(
        tmp_path / "arith.jsonl",
        [
            {"question": "Sum?", "answer": 3, "scorer": "numeric", "tolerance": 0.01, "servers": "documents-csv-server",
             "tools": ["extract_csv_content"], "attachment": "files/a.csv"},
            {"question": "Name?", "answer": "Ada"},
        ],
    )  # fmt: skip
    first, second = load_task_file(path, tmp_path, "/workspace/gaia_dataset")
    assert first["data_source"] == "arith" and first["reward_model"]["ground_truth"] == "3"
    info = first["extra_info"]
    assert (info["scorer"], info["tolerance"], info["mcp_servers"], info["mcp_tools"]) == (
        "numeric", 0.01, "documents-csv-server", "extract_csv_content"
    )  # fmt: skip
    assert "Attached file: /workspace/gaia_dataset/files/a.csv" in first["prompt"][1]["content"]
    assert second["extra_info"]["scorer"] == "exact" and second["extra_info"]["mcp_servers"] == ""


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"question": "q"}, "'answer' must be"),
        ({"question": "q", "answer": "a", "colour": 1}, "unknown keys colour"),
        ({"question": "q", "answer": "a", "scorer": "fuzzy"}, "scorer must be one of"),
        ({"question": "q", "answer": "a", "attachment": "../outside.txt"}, "outside the dataset folder"),
        ({"question": "q", "answer": "a", "attachment": "missing.txt"}, "is not a file"),
        ({"question": "q", "answer": "a", "agent_name": ""}, "'agent_name' must name an agent loop"),
    ],
)
def test_bad_tasks_name_their_line(tmp_path: Path, task: dict, message: str) -> None:
    (tmp_path.parent / "outside.txt").write_text("x")
    path = write_tasks(tmp_path / "t.jsonl", [{"question": "fine", "answer": "1"}, task])
    with pytest.raises(TaskFileError, match=message) as error:
        load_task_file(path, tmp_path, "/workspace/gaia_dataset")
    assert f"{path}:2" in str(error.value)


def test_rows_pick_their_agent_loop(tmp_path: Path) -> None:
    """A line may name its agent loop (a team, say); the others take the build's default."""
    path = write_tasks(
        tmp_path / "t.jsonl",
        [{"question": "q1", "answer": "1", "agent_name": "demo_team"}, {"question": "q2", "answer": "2"}],
    )
    first, second = load_task_file(path, tmp_path, "/workspace/gaia_dataset")
    assert (first["agent_name"], second["agent_name"]) == ("demo_team", "gaia_agent")
    demo = tmp_path / "demo"
    write_demo_snapshot(demo, skip_audio=True)
    written = ds.build(
        demo, tmp_path / "out", test_size=1, agent_name="demo_team", task_sources=[TaskSource(path)]
    )
    names = pd.read_parquet(written["train"], columns=["agent_name"])["agent_name"].tolist()
    assert set(names) == {"demo_team"} and len(names) == 5 + 1  # one of each source held out


def test_source_specs() -> None:
    assert TaskSource.parse("suite.jsonl") == TaskSource(Path("suite.jsonl"), 1.0)
    assert TaskSource.parse("suite.jsonl:2.5") == TaskSource(Path("suite.jsonl"), 2.5)
    with pytest.raises(TaskFileError, match="positive"):
        TaskSource.parse("suite.jsonl:0")


def test_gaia_and_a_suite_mix_with_weights(tmp_path: Path) -> None:
    write_demo_snapshot(tmp_path / "snap", skip_audio=True)
    suite = write_tasks(
        tmp_path / "snap" / "suite.jsonl", [{"question": f"q{i}?", "answer": str(i)} for i in range(10)]
    )
    written = ds.build(
        tmp_path / "snap", tmp_path / "out", test_size=0.2, seed=3, task_sources=[TaskSource(suite, 2.0)]
    )
    train, test = pd.read_parquet(written["train"]), pd.read_parquet(written["test"])

    def family(source: str) -> str:
        return source.split("/")[0]  # GAIA's rows are gaia/level1..3

    counts = train["data_source"].map(family).value_counts().to_dict()
    # GAIA: 6 demo tasks, 1 held out (20%), 5 kept once; the suite: 2 held out, 8 taken twice
    assert counts == {"gaia": 5, "suite": 16}
    assert test["data_source"].map(family).value_counts().to_dict() == {"gaia": 1, "suite": 2}
    assert list(train["extra_info"].map(lambda e: e["index"])) == list(range(21))
    assert set(train["extra_info"].map(lambda e: e["scorer"])) == {"gaia", "exact"}
    again = pd.read_parquet(ds.build(tmp_path / "snap", tmp_path / "again", test_size=0.2, seed=3,
                                     task_sources=[TaskSource(suite, 2.0)])["train"])  # fmt: skip
    assert list(again["prompt"].map(lambda p: p[1]["content"])) == list(
        train["prompt"].map(lambda p: p[1]["content"])
    )


def user_scorer(data_source, solution_str, ground_truth, extra_info=None) -> float:
    return 0.5 if ground_truth in solution_str else 0.0


def test_the_reward_routes_by_row() -> None:
    assert routed_score("gaia", "<answer>1,000</answer>", "1000", {"scorer": "gaia"}) == 1.0
    assert routed_score("gaia", "<answer>1,000</answer>", "1000") == 1.0  # gaia's rows by default
    assert routed_score("s", "<answer>  ada   LOVELACE </answer>", "Ada Lovelace") == 1.0
    assert routed_score("s", "<answer>Ada, Lovelace</answer>", "Ada Lovelace") == 0.0
    numeric = {"scorer": "numeric", "tolerance": 0.01}
    assert routed_score("s", "<answer>3.14</answer>", "3.14159", numeric) == 1.0
    assert routed_score("s", "<answer>3.2</answer>", "3.14159", numeric) == 0.0
    assert routed_score("s", "no tag", "3", numeric) == 0.0
    # the loop's own answer wins here too
    assert routed_score("s", "<answer>2</answer>", "3", {**numeric, ANSWER_KEY: "3"}) == 1.0
    spec = {"scorer": f"{__name__}:user_scorer"}
    assert routed_score("s", "it is 42", "42", spec) == 0.5
    with pytest.raises(ValueError, match="cannot be loaded"):
        routed_score("s", "x", "y", {"scorer": "no.such.module:f"})
