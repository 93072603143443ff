"""A GAIA snapshot, as published, turned into the parquet files VeRL reads.

Snapshot layout: `<root>/2023/<split>/metadata.parquet` (or the older `metadata.jsonl`), with
attachments beside the metadata. Each task becomes one row of `gaia_train.row` (VeRL's columns).

The test split's answers are hidden upstream ("?"), so training and held-out sets both come
from the validation split (stratified by level, seeded); the test split is only ever turned
into an inference set for a leaderboard submission.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..row import AGENT_NAME, build_row
from .tasks import TaskFileError, TaskSource, load_task_file, weighted

DATA_SOURCE = "gaia"
"""The family of GAIA's data sources: each row's is `data_source(level)`, "gaia/level1".."gaia/level3"."""
ABILITY = "agentic_tool_use"
DEFAULT_MOUNT = "/workspace/gaia_dataset"
YEAR = "2023"
HIDDEN_ANSWER = "?"


@dataclass(frozen=True)
class GaiaTask:
    task_id: str
    question: str
    level: int
    answer: str
    file_name: str
    attachment_relpath: str
    """The attachment's path relative to the snapshot root, "" when there is none."""
    split: str


class DatasetError(ValueError):
    """The snapshot or the options cannot make a dataset; the message says what to fix."""


def _parse_level(raw: Any, where: str) -> int:
    try:
        level = int(str(raw).strip())
    except ValueError:
        raise DatasetError(f"{where}: Level must be 1, 2 or 3, got {raw!r}") from None
    if level not in (1, 2, 3):
        raise DatasetError(f"{where}: Level must be 1, 2 or 3, got {raw!r}")
    return level


def _read_metadata(split_dir: Path) -> list[dict[str, Any]]:
    parquet, jsonl = split_dir / "metadata.parquet", split_dir / "metadata.jsonl"
    if parquet.exists():
        return pd.read_parquet(parquet).to_dict(orient="records")
    if jsonl.exists():
        rows = []
        for number, line in enumerate(jsonl.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{jsonl}:{number}: not valid JSON ({exc.msg})") from None
        return rows
    raise DatasetError(
        f"no metadata.parquet or metadata.jsonl in {split_dir}; pass the snapshot root "
        f"(the folder that holds {YEAR}/validation and {YEAR}/test)"
    )


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def load_split(root: Path, split: str, *, check_attachments: bool = True) -> list[GaiaTask]:
    """Every task of one split of the snapshot at `root`."""
    root = Path(root)
    split_dir = root / YEAR / split
    if not split_dir.is_dir():
        raise DatasetError(f"{split_dir} does not exist; is {root} a GAIA snapshot root?")
    tasks, missing = [], []
    for index, row in enumerate(_read_metadata(split_dir)):
        where = f"{split_dir.name} row {index}"
        for key in ("task_id", "Question", "Level"):
            if _text(row.get(key)) == "":
                raise DatasetError(f"{where}: the {key!r} field is missing or empty")
        if "Final answer" not in row:
            raise DatasetError(f"{where}: the 'Final answer' field is missing")
        file_name = _text(row.get("file_name"))
        relpath = ""
        if file_name:
            # Newer snapshots give the attachment's path from the root; older ones only its name.
            file_path = _text(row.get("file_path"))
            relpath = file_path if file_path else f"{YEAR}/{split}/{file_name}"
            if check_attachments and not (root / relpath).is_file():
                missing.append(relpath)
        tasks.append(
            GaiaTask(
                task_id=_text(row["task_id"]),
                question=_text(row["Question"]),
                level=_parse_level(row["Level"], where),
                answer=_text(row["Final answer"]),
                file_name=file_name,
                attachment_relpath=relpath,
                split=split,
            )
        )
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise DatasetError(
            f"{len(missing)} attachment(s) named in {split_dir} are not in the snapshot: {shown}. "
            "Download the full snapshot (attachments included) or pass --no-check-attachments"
        )
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"{split_dir}: task_id values are not unique")
    return tasks


def attachment_path(task: GaiaTask, mount: str) -> str:
    return f"{mount.rstrip('/')}/{task.attachment_relpath}" if task.attachment_relpath else ""


def data_source(level: int) -> str:
    # One data_source per level: VeRL's validation reports its metrics per data_source, so the
    # pass rate of each GAIA level is logged (val-core/gaia/level1/acc/...).
    return f"{DATA_SOURCE}/level{level}"


def to_row(task: GaiaTask, index: int, mount: str, agent_name: str = AGENT_NAME) -> dict[str, Any]:
    return build_row(
        question=task.question,
        answer=task.answer,
        data_source=data_source(task.level),
        ability=ABILITY,
        reward_style="GAIA",
        task_id=task.task_id,
        level=task.level,
        split=task.split,
        file_name=task.file_name,
        attachment_path=attachment_path(task, mount),
        scorer="gaia",
        tolerance=0.0,
        agent_name=agent_name,
        index=index,
    )


def _resolve_size(size: float, total: int, name: str) -> int:
    if size < 0:
        raise DatasetError(f"{name} must not be negative, got {size}")
    count = round(size * total) if 0 < size < 1 else int(size)
    if size >= 1 and size != int(size):
        raise DatasetError(f"{name} is a fraction below 1 or a whole count, got {size}")
    return count


def stratified_split(
    tasks: list[GaiaTask], test_size: float, seed: int, train_size: float | None = None
) -> tuple[list[GaiaTask], list[GaiaTask]]:
    """(train, held-out): the held-out set keeps each level's share of the split, seeded."""
    total = len(tasks)
    n_test = _resolve_size(test_size, total, "--test-size")
    if n_test > total:
        raise DatasetError(f"--test-size asks for {n_test} held-out tasks but the split has {total}")
    by_level: dict[int, list[GaiaTask]] = defaultdict(list)
    for task in sorted(tasks, key=lambda t: t.task_id):
        by_level[task.level].append(task)
    rng = random.Random(seed)
    for level in sorted(by_level):
        rng.shuffle(by_level[level])
    # Largest remainder, so the per-level counts add up to exactly n_test.
    quotas = {lvl: n_test * len(group) / total for lvl, group in by_level.items()} if total else {}
    counts = {lvl: math.floor(q) for lvl, q in quotas.items()}
    for lvl in sorted(quotas, key=lambda x: (quotas[x] - counts[x], -x), reverse=True)[
        : n_test - sum(counts.values())
    ]:
        counts[lvl] += 1
    test = [t for lvl in sorted(by_level) for t in by_level[lvl][: counts[lvl]]]
    train = [t for lvl in sorted(by_level) for t in by_level[lvl][counts[lvl] :]]
    if train_size is not None:
        n_train = _resolve_size(train_size, len(train), "--train-size")
        if n_train > len(train):
            raise DatasetError(
                f"--train-size asks for {n_train} tasks but only {len(train)} remain after the held-out set"
            )
        rng.shuffle(train)
        train = sorted(train[:n_train], key=lambda t: (t.level, t.task_id))
    return train, test


def build(
    snapshot: Path | None,
    out_dir: Path,
    *,
    test_size: float = 0.2,
    train_size: float | None = None,
    seed: int = 0,
    mount: str = DEFAULT_MOUNT,
    include_test_split: bool = False,
    check_attachments: bool = True,
    task_sources: list[TaskSource] | None = None,
    gaia_weight: float = 1.0,
    dataset_root: Path | None = None,
    agent_name: str = AGENT_NAME,
) -> dict[str, Path]:
    """Write train.parquet and test.parquet (and gaia_test_inference.parquet if asked).

    With `task_sources`, the tasks of other suites join GAIA's: each source keeps its own held-out
    share (`test_size` applies to each), and its training rows are taken `weight` times (a sample
    below 1, repeats above), shuffled together with the seed. `agent_name` is the VeRL agent loop of
    every row that does not name its own (a task file's line may): gaia_agent, or a team's.
    """
    if not mount.startswith("/"):
        raise DatasetError(f"--mount must be an absolute path inside the environment, got {mount!r}")
    sources = list(task_sources or [])
    if snapshot is None and not sources:
        raise DatasetError("give a GAIA snapshot (--snapshot), task files (--tasks), or both")
    rng = random.Random(seed)
    train_rows: list[dict[str, Any]] = []
    test_rows: list[dict[str, Any]] = []
    if snapshot is not None:
        validation = load_split(snapshot, "validation", check_attachments=check_attachments)
        hidden = [t.task_id for t in validation if t.answer.strip() == HIDDEN_ANSWER]
        if hidden:
            raise DatasetError(f"validation tasks with a hidden answer ('?'): {', '.join(hidden[:5])}")
        train, test = stratified_split(validation, test_size, seed, train_size)
        train_rows += weighted([to_row(t, 0, mount, agent_name) for t in train], gaia_weight, rng)
        test_rows += [to_row(t, 0, mount, agent_name) for t in test]
    root = Path(dataset_root or snapshot or (sources[0].path.parent if sources else "."))
    for source in sources:
        try:
            rows = load_task_file(source.path, root, mount, agent_name)
        except TaskFileError as exc:
            raise DatasetError(str(exc)) from None
        rng.shuffle(rows)
        n_test = _resolve_size(test_size, len(rows), "--test-size")
        if n_test >= len(rows):
            raise DatasetError(f"--test-size holds out {n_test} of the {len(rows)} tasks of {source.path}")
        for row in rows[:n_test]:
            row["extra_info"]["split"] = "test"
        test_rows += rows[:n_test]
        train_rows += weighted(rows[n_test:], source.weight, rng)
    if sources:
        rng.shuffle(train_rows)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {
        "train": _write_rows(out_dir / "train.parquet", train_rows),
        "test": _write_rows(out_dir / "test.parquet", test_rows),
    }
    if include_test_split:
        if snapshot is None:
            raise DatasetError("--include-test-split needs a GAIA snapshot")
        # Inference only: the rows keep the hidden "?" so the reward refuses to score them.
        written["inference"] = _write(
            out_dir / "gaia_test_inference.parquet",
            load_split(snapshot, "test", check_attachments=check_attachments),
            mount,
        )
    return written


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    # Repeats of a weighted source are the same dicts: each written row gets its own copy.
    rows = [{**row, "extra_info": {**row["extra_info"], "index": i}} for i, row in enumerate(rows)]
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def _write(path: Path, tasks: list[GaiaTask], mount: str) -> Path:
    return _write_rows(path, [to_row(task, index, mount) for index, task in enumerate(tasks)])


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a parquet written by `build` (or any VeRL parquet with the same columns)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path} does not exist")
    frame = pd.read_parquet(path)
    needed = {"prompt", "reward_model", "extra_info"}
    if not needed <= set(frame.columns):
        raise DatasetError(
            f"{path} lacks the columns {sorted(needed - set(frame.columns))}; is it a VeRL parquet?"
        )
    rows = []
    for record in frame.to_dict(orient="records"):
        record["prompt"] = [dict(m) for m in record["prompt"]]
        record["reward_model"] = dict(record["reward_model"])
        record["extra_info"] = dict(record["extra_info"])
        rows.append(record)
    return rows
