"""`gaia-train dataset` on tiny fake snapshots in the GAIA layout (jsonl and parquet metadata)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from gaia_train.cli import main
from gaia_train.data import gaia as ds


def write_snapshot(root: Path, *, levels=(1,) * 10 + (2,) * 6 + (3,) * 4, parquet: bool = False) -> Path:
    """A validation split with one attachment per third task, and a test split with hidden answers."""
    for split in ("validation", "test"):
        split_dir = root / "2023" / split
        split_dir.mkdir(parents=True)
        rows = []
        for i, level in enumerate(levels if split == "validation" else (1, 2)):
            task_id = f"{split[:3]}-{i:03d}"
            file_name = f"{task_id}.csv" if i % 3 == 0 else ""
            if file_name:
                (split_dir / file_name).write_text("a,b\n1,2\n")
            row = {
                "task_id": task_id,
                "Question": f"Question {i}?",
                # upstream has both: strings in the parquet release, ints in older jsonl
                "Level": str(level) if i % 2 == 0 else level,
                "Final answer": "?" if split == "test" else f"answer {i}",
                "file_name": file_name,
                "Annotator Metadata": {"Steps": "1. look"},
            }
            if parquet:
                row["Level"] = str(level)
                row["file_path"] = f"2023/{split}/{file_name}" if file_name else ""
            rows.append(row)
        if parquet:
            pd.DataFrame(rows).to_parquet(split_dir / "metadata.parquet", index=False)
        else:
            (split_dir / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.mark.parametrize("parquet", [False, True], ids=["jsonl", "parquet"])
def test_build_writes_verl_columns(tmp_path: Path, parquet: bool) -> None:
    snapshot = write_snapshot(tmp_path / "snap", parquet=parquet)
    written = ds.build(snapshot, tmp_path / "out", test_size=0.25, seed=7, include_test_split=True)
    train, test = pd.read_parquet(written["train"]), pd.read_parquet(written["test"])
    assert len(train) == 15 and len(test) == 5
    assert set(train.columns) == {
        "prompt",
        "data_source",
        "ability",
        "reward_model",
        "extra_info",
        "agent_name",
    }
    row = ds.read_rows(written["train"])[0]
    # one data_source per GAIA level: VeRL's validation reports each level's pass rate
    assert (
        row["data_source"] == f"gaia/level{row['extra_info']['level']}" and row["agent_name"] == "gaia_agent"
    )
    levels = {r["extra_info"]["level"] for r in ds.read_rows(written["train"])}
    assert set(train["data_source"]) == {f"gaia/level{level}" for level in levels} and len(levels) > 1
    assert row["reward_model"]["style"] == "GAIA"
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "<answer>" in row["prompt"][0]["content"]
    with_file = next(
        r
        for r in ds.read_rows(written["train"]) + ds.read_rows(written["test"])
        if r["extra_info"]["file_name"]
    )
    info = with_file["extra_info"]
    assert info["attachment_path"] == f"/workspace/gaia_dataset/2023/validation/{info['file_name']}"
    assert info["attachment_path"] in with_file["prompt"][1]["content"]
    assert info["level"] in (1, 2, 3) and info["split"] == "validation"


def test_held_out_set_is_stratified_and_seeded(tmp_path: Path) -> None:
    tasks = ds.load_split(write_snapshot(tmp_path / "snap"), "validation")
    train, test = ds.stratified_split(tasks, 0.25, seed=1)
    # 5 of 20 held out, each level keeping its share (10/6/4 -> 2.5/1.5/1, largest remainder)
    assert Counter(t.level for t in test) == {1: 3, 2: 1, 3: 1}
    assert not {t.task_id for t in train} & {t.task_id for t in test}
    assert [t.task_id for t in ds.stratified_split(tasks, 0.25, seed=1)[1]] == [t.task_id for t in test]
    others = {tuple(t.task_id for t in ds.stratified_split(tasks, 0.25, seed=s)[1]) for s in range(2, 8)}
    assert len(others) > 1
    assert len(ds.stratified_split(tasks, 4, seed=1)[1]) == 4
    assert len(ds.stratified_split(tasks, 4, seed=1, train_size=6)[0]) == 6


def test_test_split_answers_never_reach_training(tmp_path: Path) -> None:
    written = ds.build(write_snapshot(tmp_path / "snap"), tmp_path / "out", include_test_split=True)
    for name in ("train", "test"):
        truths = {r["reward_model"]["ground_truth"] for r in ds.read_rows(written[name])}
        assert "?" not in truths
        assert {r["extra_info"]["split"] for r in ds.read_rows(written[name])} == {"validation"}
    inference = ds.read_rows(written["inference"])
    assert {r["reward_model"]["ground_truth"] for r in inference} == {"?"}
    assert {r["extra_info"]["split"] for r in inference} == {"test"}


def test_cli_dataset(tmp_path: Path, capsys) -> None:
    snapshot = write_snapshot(tmp_path / "snap")
    code = main(
        [
            "dataset",
            "--snapshot",
            str(snapshot),
            "--out",
            str(tmp_path / "out"),
            "--test-size",
            "4",
            "--mount",
            "/mnt/gaia",
        ]
    )
    assert code == 0
    assert "train: " in capsys.readouterr().out
    rows = ds.read_rows(tmp_path / "out" / "test.parquet")
    assert len(rows) == 4
    assert all(
        r["extra_info"]["attachment_path"].startswith("/mnt/gaia/2023/validation/")
        for r in rows
        if r["extra_info"]["file_name"]
    )


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("missing_attachment", "attachment(s) named in"),
        ("bad_level", "Level must be 1, 2 or 3"),
        ("no_metadata", "no metadata.parquet or metadata.jsonl"),
        ("missing_answer_field", "'Final answer' field is missing"),
        ("bad_json", "not valid JSON"),
        ("hidden_in_validation", "hidden answer"),
    ],
)
def test_bad_snapshots_get_clear_errors(tmp_path: Path, capsys, breakage: str, message: str) -> None:
    snapshot = write_snapshot(tmp_path / "snap")
    meta = snapshot / "2023" / "validation" / "metadata.jsonl"
    rows = [json.loads(line) for line in meta.read_text().splitlines()]
    if breakage == "missing_attachment":
        (snapshot / "2023" / "validation" / "val-000.csv").unlink()
    elif breakage == "bad_level":
        rows[1]["Level"] = "easy"
    elif breakage == "no_metadata":
        meta.unlink()
    elif breakage == "missing_answer_field":
        del rows[2]["Final answer"]
    elif breakage == "hidden_in_validation":
        rows[2]["Final answer"] = "?"
    if breakage in ("bad_level", "missing_answer_field", "hidden_in_validation"):
        meta.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if breakage == "bad_json":
        meta.write_text(meta.read_text() + "{not json\n")
    code = main(["dataset", "--snapshot", str(snapshot), "--out", str(tmp_path / "out")])
    assert code == 1
    assert message in capsys.readouterr().err


def test_bad_options_get_clear_errors(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "snap")
    with pytest.raises(ds.DatasetError, match="asks for 99 held-out tasks"):
        ds.build(snapshot, tmp_path / "out", test_size=99)
    with pytest.raises(ds.DatasetError, match="absolute path"):
        ds.build(snapshot, tmp_path / "out", mount="gaia")
    with pytest.raises(ds.DatasetError, match="snapshot root"):
        ds.build(tmp_path, tmp_path / "out")
    assert len(ds.load_split(snapshot, "validation")) == 20
    (snapshot / "2023" / "validation" / "val-003.csv").unlink()
    assert len(ds.load_split(snapshot, "validation", check_attachments=False)) == 20
