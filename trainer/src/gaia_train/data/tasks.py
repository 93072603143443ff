"""Task files of other suites, mixed with GAIA into one training set.

A task file is JSONL, one task a line:

    {"question": "...", "answer": "42",                      required
     "attachment": "files/a.csv",                             relative to the file's folder
     "data_source": "my-suite", "task_type": "qa", "id": "t1",
     "scorer": "exact" | "numeric" | "gaia" | "package.module:function", "tolerance": 0.01,
     "servers": "documents-csv-server,filesystem-server", "tools": ["read_csv"],
     "agent_name": "demo_team"}

`scorer` picks how `reward.routed_reward_func` scores the row (default "exact"); `servers` and
`tools` select what the row's episode sees (per-sample tools: the loop sends them as
MCP-Servers and lists only those schemas in the prompt); `agent_name` picks the VeRL agent loop that
plays the row (a team registered in agent.yaml, say). An attachment must lie under the
folder the environment serves as the dataset (`dataset_root`), so the prompt can name it at
its path inside the environment.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..reward import BUILTIN_SCORERS
from ..row import AGENT_NAME, build_row

ALLOWED_KEYS = {
    "question", "answer", "attachment", "data_source", "task_type", "id",
    "scorer", "tolerance", "servers", "tools", "agent_name",
}  # fmt: skip


class TaskFileError(ValueError):
    """A task file or its options cannot make rows; the message says what to fix."""


@dataclass(frozen=True)
class TaskSource:
    path: Path
    weight: float = 1.0

    @classmethod
    def parse(cls, spec: str) -> TaskSource:
        """`PATH` or `PATH:WEIGHT` (a weight of 2 takes each training task twice, on average)."""
        head, colon, tail = spec.rpartition(":")
        try:
            value = float(tail) if colon else None
        except ValueError:
            value = None  # a colon inside the path
        path = head if value is not None else spec
        value = 1.0 if value is None else value
        if value <= 0:
            raise TaskFileError(f"{spec!r}: the weight must be positive")
        return cls(Path(path), value)


def _names(value: Any, where: str, key: str) -> str:
    if value is None:
        return ""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise TaskFileError(f"{where}: {key!r} must be a comma-separated string or a list of names")
    return ",".join(i.strip() for i in items if i.strip())


def _scorer(task: dict[str, Any], where: str) -> str:
    scorer = task.get("scorer", "exact")
    if not isinstance(scorer, str) or (scorer not in BUILTIN_SCORERS and ":" not in scorer):
        raise TaskFileError(
            f"{where}: scorer must be one of {', '.join(BUILTIN_SCORERS)} or 'package.module:function', "
            f"got {scorer!r}"
        )
    return scorer


def _attachment(task: dict[str, Any], file: Path, dataset_root: Path, mount: str, where: str) -> str:
    name = task.get("attachment")
    if not name:
        return ""
    path = (file.parent / str(name)).resolve()
    if not path.is_file():
        raise TaskFileError(f"{where}: attachment {name} is not a file at {path}")
    try:
        inside = path.relative_to(dataset_root.resolve())
    except ValueError:
        raise TaskFileError(
            f"{where}: attachment {path} is outside the dataset folder {dataset_root} the environment "
            "serves; move it there or pass --dataset-root"
        ) from None
    return f"{mount.rstrip('/')}/{inside.as_posix()}"


def _agent_name(task: dict[str, Any], default: str, where: str) -> str:
    name = task.get("agent_name", default)
    if not isinstance(name, str) or not name.strip():
        raise TaskFileError(
            f"{where}: 'agent_name' must name an agent loop of agent.yaml, such as gaia_agent"
        )
    return name.strip()


def _row(
    task: dict[str, Any], file: Path, dataset_root: Path, mount: str, where: str, agent_name: str
) -> dict[str, Any]:
    unknown = sorted(set(task) - ALLOWED_KEYS)
    if unknown:
        raise TaskFileError(
            f"{where}: unknown keys {', '.join(unknown)} (allowed: {', '.join(sorted(ALLOWED_KEYS))})"
        )
    question, answer = task.get("question"), task.get("answer")
    if not isinstance(question, str) or not question.strip():
        raise TaskFileError(f"{where}: 'question' must be a non-empty string")
    if not isinstance(answer, (str, int, float)) or isinstance(answer, bool):
        raise TaskFileError(f"{where}: 'answer' must be a string or a number")
    attachment = _attachment(task, file, dataset_root, mount, where)
    data_source = str(task.get("data_source") or file.stem)
    return build_row(
        question=question,
        answer=str(answer),
        data_source=data_source,
        ability=str(task.get("task_type") or "qa"),
        reward_style="rule",
        task_id=str(task.get("id") or f"{data_source}-{where.rsplit(':', 1)[1]}"),
        level=0,
        split="train",
        file_name=Path(str(task.get("attachment") or "")).name,
        attachment_path=attachment,
        scorer=_scorer(task, where),
        tolerance=float(task.get("tolerance") or 0.0),
        mcp_servers=_names(task.get("servers"), where, "servers"),
        mcp_tools=_names(task.get("tools"), where, "tools"),
        agent_name=_agent_name(task, agent_name, where),
    )


def load_task_file(
    path: Path, dataset_root: Path, mount: str, agent_name: str = AGENT_NAME
) -> list[dict[str, Any]]:
    """The rows of one task file, in file order; every problem names its line."""
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(f"task file {path} does not exist")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            task = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(task, dict):
            raise TaskFileError(f"{where}: a task is a JSON object")
        rows.append(_row(task, path, dataset_root, mount, where, agent_name))
    if not rows:
        raise TaskFileError(f"task file {path} has no tasks")
    return rows


def weighted(rows: list[dict[str, Any]], weight: float, rng: random.Random) -> list[dict[str, Any]]:
    """round(weight * len(rows)) rows: a sample below 1, every row plus repeats drawn at random above."""
    target = round(weight * len(rows))
    if target == len(rows):
        return list(rows)
    if target < len(rows):
        return rng.sample(rows, target)
    return rows + rng.choices(rows, k=target - len(rows))
