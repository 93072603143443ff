"""`gaia-train eval`: the episode loop against an OpenAI-compatible endpoint, over a dataset.

Episodes run with bounded concurrency; a row whose `agent_name` names a team is played by the team.
Each finished episode is appended to `trajectories.jsonl` at once, so an interrupted run resumes
where it stopped (finished task ids are skipped). Episodes that could not run or finish for reasons
not the agent's own (the model endpoint failed, or the environment did: gateway unreachable, transport
failure, busy past a call's deadline, the session's replica gone) go to `errors.jsonl`, each with its
`kind` (`model_error`, `environment_fault`), are reported apart in the table (never as failed tasks)
and are tried again on the next run. The summary (pass@1 overall, by
level, by data source and by agent, turns, tool calls, delegations, tool error rate, time split) is
printed, saved as summary.json and drawn in summary.png.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from tqdm import tqdm

from ..data.gaia import HIDDEN_ANSWER
from ..episode.loop import EpisodeLimits, Stop
from ..episode.session import McpSettings
from ..play import play, teams_of_rows
from ..reward import ANSWER_KEY, routed_score
from ..row import AGENT_NAME
from ..teams.team import Team
from .openai_policy import EndpointSettings, OpenAIPolicy, Spent, episode_client

TRAJECTORIES = "trajectories.jsonl"
ERRORS = "errors.jsonl"


@dataclass
class EvalReport:
    summary: dict[str, Any]
    ran: int
    skipped: int
    failed: list[dict[str, Any]] = field(default_factory=list)


def _task_id(row: dict[str, Any]) -> str:
    return str(row["extra_info"]["task_id"])


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            # A run killed mid-write leaves at most one torn last line; that task simply reruns.
            if number != len(lines):
                raise ValueError(f"{path}:{number} is not valid JSON; fix or remove the line") from None
    return records


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line that a killed run left half-written, so appends start on a fresh line."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


async def _run_one(
    row: dict[str, Any],
    endpoint: EndpointSettings,
    mcp: McpSettings,
    limits: EpisodeLimits,
    teams: Mapping[str, Team],
) -> dict[str, Any]:
    truth = str(row["reward_model"]["ground_truth"])
    agent_name = str(row.get("agent_name") or AGENT_NAME)
    spent = Spent()  # the episode's completion tokens, every role's together
    async with episode_client(endpoint.request_timeout_s) as client:
        result, team = await play(
            list(row["prompt"]),
            lambda: OpenAIPolicy(client, endpoint, spent),
            mcp,
            limits,
            teams.get(agent_name),
            row.get("extra_info"),
        )
    hidden = truth.strip() == HIDDEN_ANSWER
    source = str(row.get("data_source", "gaia"))
    # The row's own scorer, as in training (reward.routed_score): GAIA's for GAIA rows.
    info = {**row.get("extra_info", {}), ANSWER_KEY: result.answer}
    reward = None if hidden else routed_score(source, result.final_text, truth, info)
    return {
        "task_id": _task_id(row),
        "data_source": source,
        "level": int(row["extra_info"].get("level", 0)),
        "ground_truth": None if hidden else truth,
        "answer": result.answer,
        "reward": reward,
        "stop": str(result.stop),
        "error": result.error,
        "session_id": result.session_id,
        "agent_name": agent_name,
        "delegations": [
            {"role": d.role, "servers": d.servers, "stop": str(d.result.stop), "answer": d.result.answer}
            for d in (team.delegations if team else [])
        ],
        "metrics": result.metrics.as_dict(),
        "messages": result.messages,
    }


async def run_episodes(
    rows: list[dict[str, Any]],
    out_dir: Path,
    endpoint: EndpointSettings,
    mcp: McpSettings,
    limits: EpisodeLimits,
    *,
    concurrency: int = 32,
    progress: bool = True,
    team_files: Sequence[str | Path] = (),
) -> EvalReport:
    """Run every row not yet in out_dir/trajectories.jsonl; the report has no summary yet.

    A row whose `agent_name` names a team (one of `team_files`, else a shipped one) is played by it."""
    if concurrency < 1:
        raise ValueError(f"--concurrency must be at least 1, got {concurrency}")
    teams = teams_of_rows(rows, team_files)
    ids = [_task_id(r) for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("the dataset has repeated task ids; eval keys its trajectories by task id")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trajectories = out_dir / TRAJECTORIES
    _drop_torn_tail(trajectories)
    done = {r["task_id"] for r in _read_jsonl(trajectories)}
    todo = [r for r in rows if _task_id(r) not in done]
    failed: list[dict[str, Any]] = []
    gate = anyio.Semaphore(concurrency)
    write_lock = anyio.Lock()
    bar = tqdm(
        total=len(rows), initial=len(rows) - len(todo), disable=not progress, desc="episodes", unit="ep"
    )

    async def one(row: dict[str, Any]) -> None:
        record: dict[str, Any] | None = None
        failure: dict[str, Any] | None = None
        async with gate:
            record = await _run_one(row, endpoint, mcp, limits, teams)
            if record["stop"] in (Stop.MODEL_ERROR, Stop.ENVIRONMENT_FAULT):
                failure = {"task_id": record["task_id"], "kind": record["stop"], "error": record["error"]}
                record = None
        async with write_lock:
            if failure is not None:
                failed.append(failure)
                with (out_dir / ERRORS).open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(failure) + "\n")
            else:
                with trajectories.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            bar.update(1)

    async with anyio.create_task_group() as group:
        for row in todo:
            group.start_soon(one, row)
    bar.close()
    return EvalReport({}, ran=len(todo), skipped=len(rows) - len(todo), failed=failed)


async def run_eval(
    rows: list[dict[str, Any]],
    out_dir: Path,
    endpoint: EndpointSettings,
    mcp: McpSettings,
    limits: EpisodeLimits,
    *,
    concurrency: int = 32,
    progress: bool = True,
    team_files: Sequence[str | Path] = (),
) -> EvalReport:
    """`run_episodes`, then the summary over every finished episode of these rows."""
    report = await run_episodes(
        rows,
        out_dir,
        endpoint,
        mcp,
        limits,
        concurrency=concurrency,
        progress=progress,
        team_files=team_files,
    )
    out_dir = Path(out_dir)
    wanted = {_task_id(r) for r in rows}
    records = [r for r in _read_jsonl(out_dir / TRAJECTORIES) if r["task_id"] in wanted]
    report.summary = summarize(records, report.failed)
    (out_dir / "summary.json").write_text(json.dumps(report.summary, indent=2) + "\n", encoding="utf-8")
    draw_chart(report.summary, out_dir / "summary.png")
    _write_submission(records, out_dir)
    return report


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def summarize(records: list[dict[str, Any]], failed: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """pass@1 and the rest over finished episodes; `failed` (this run's errors) is only counted, by kind."""
    scored = [r for r in records if r["reward"] is not None]
    by_level: dict[int, list[float]] = defaultdict(list)
    by_source: dict[str, list[float]] = defaultdict(list)
    by_agent: dict[str, list[float]] = defaultdict(list)
    for record in scored:
        by_level[int(record["level"])].append(float(record["reward"]))
        by_source[record.get("data_source", "gaia")].append(float(record["reward"]))
        by_agent[record.get("agent_name", AGENT_NAME)].append(float(record["reward"]))
    tools: Counter[str] = Counter()
    cost_by_tool: Counter[str] = Counter()
    paid_calls: Counter[str] = Counter()
    for record in records:
        tools.update(record["metrics"]["tool_calls"])
        cost_by_tool.update(record["metrics"].get("cost_usd_by_tool", {}))
        paid_calls.update(record["metrics"].get("paid_calls", {}))
    cost = sum(r["metrics"].get("cost_usd", 0.0) for r in records)
    calls = sum(tools.values())
    errors = sum(r["metrics"]["tool_errors"] for r in records)
    model_s = sum(r["metrics"]["model_seconds"] for r in records)
    tool_s = sum(r["metrics"]["tool_seconds"] for r in records)
    return {
        "episodes": len(records),
        "scored": len(scored),
        "pass_at_1": _mean([float(r["reward"]) for r in scored]),
        "pass_at_1_by_level": {str(k): _mean(v) for k, v in sorted(by_level.items())},
        "episodes_by_level": {str(k): len(v) for k, v in sorted(by_level.items())},
        "pass_at_1_by_source": {k: _mean(v) for k, v in sorted(by_source.items())},
        "episodes_by_source": {k: len(v) for k, v in sorted(by_source.items())},
        "pass_at_1_by_agent": {k: _mean(v) for k, v in sorted(by_agent.items())},
        "episodes_by_agent": {k: len(v) for k, v in sorted(by_agent.items())},
        "mean_delegations": _mean([len(r.get("delegations", [])) for r in records]),
        "mean_turns": _mean([r["metrics"]["turns"] for r in records]),
        "mean_tool_calls": _mean([r["metrics"]["total_tool_calls"] for r in records]),
        "tool_calls_by_tool": dict(tools.most_common()),
        "tool_error_rate": errors / calls if calls else 0.0,
        "mean_model_seconds": _mean([r["metrics"]["model_seconds"] for r in records]),
        "mean_tool_seconds": _mean([r["metrics"]["tool_seconds"] for r in records]),
        "model_time_share": model_s / (model_s + tool_s) if model_s + tool_s > 0 else math.nan,
        # What the rollouts cost on paid backends (search keys, hosted readers, E2B, model-backed tools).
        "cost_usd": round(cost, 6),
        "mean_cost_usd_per_rollout": cost / len(records) if records else math.nan,
        "cost_usd_by_tool": {k: round(v, 6) for k, v in cost_by_tool.most_common()},
        "mean_cost_usd_per_call_by_tool": {
            k: round(v / tools[k], 6) for k, v in cost_by_tool.most_common() if tools[k]
        },
        "paid_calls_by_backend": dict(paid_calls.most_common()),
        "withheld": sum(r["metrics"].get("withheld", 0) for r in records),
        "stops": dict(Counter(r["stop"] for r in records).most_common()),
        "environment_faults": sum(f.get("kind") == Stop.ENVIRONMENT_FAULT for f in failed),
        "model_errors": sum(f.get("kind") == Stop.MODEL_ERROR for f in failed),
    }


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def format_table(summary: dict[str, Any]) -> str:
    lines = [
        ("episodes", summary["episodes"]),
        ("scored", summary["scored"]),
        ("pass@1", summary["pass_at_1"]),
        # Not the agent's doing: not scored, not in pass@1, tried again on the next run.
        ("environment faults (not scored, rerun)", summary.get("environment_faults", 0)),
        ("model endpoint errors (not scored, rerun)", summary.get("model_errors", 0)),
    ]
    for level, value in summary["pass_at_1_by_level"].items():
        lines.append((f"pass@1 level {level} (n={summary['episodes_by_level'][level]})", value))
    if len(summary["pass_at_1_by_source"]) > 1:  # a mixed dataset: each suite by its own scorer
        for source, value in summary["pass_at_1_by_source"].items():
            lines.append((f"pass@1 {source} (n={summary['episodes_by_source'][source]})", value))
    if set(summary["pass_at_1_by_agent"]) - {AGENT_NAME}:  # teams played: each agent's own pass@1
        for agent, value in summary["pass_at_1_by_agent"].items():
            lines.append((f"pass@1 {agent} (n={summary['episodes_by_agent'][agent]})", value))
        lines.append(("mean delegations", summary["mean_delegations"]))
    lines += [
        ("mean turns", summary["mean_turns"]),
        ("mean tool calls", summary["mean_tool_calls"]),
        ("tool error rate", summary["tool_error_rate"]),
        ("mean model s / episode", summary["mean_model_seconds"]),
        ("mean tool s / episode", summary["mean_tool_seconds"]),
        ("model share of time", summary["model_time_share"]),
        ("cost USD (paid backends)", summary.get("cost_usd", 0.0)),
        ("mean cost USD / rollout", summary.get("mean_cost_usd_per_rollout", math.nan)),
        ("withheld (benchmark copies)", summary.get("withheld", 0)),
    ]
    lines += [(f"calls: {tool}", count) for tool, count in summary["tool_calls_by_tool"].items()]
    lines += [(f"cost USD: {tool}", usd) for tool, usd in summary.get("cost_usd_by_tool", {}).items()]
    lines += [(f"paid calls: {name}", n) for name, n in summary.get("paid_calls_by_backend", {}).items()]
    lines += [(f"stop: {stop}", count) for stop, count in summary["stops"].items()]
    width = max(len(name) for name, _ in lines)
    return "\n".join(f"{name.ljust(width)}  {_fmt(value)}" for name, value in lines)


def draw_chart(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    levels = list(summary["pass_at_1_by_level"])
    scores = [0.0 if math.isnan(v) else v for v in summary["pass_at_1_by_level"].values()]
    left.bar(
        [f"L{lvl}" for lvl in levels] + ["all"],
        scores + [0.0 if math.isnan(summary["pass_at_1"]) else summary["pass_at_1"]],
        color="#4c72b0",
    )
    left.set_ylim(0, 1)
    left.set_title("pass@1 by level")
    tools = summary["tool_calls_by_tool"]
    right.barh(list(tools)[::-1], list(tools.values())[::-1], color="#55a868")
    right.set_title("tool calls by tool")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _write_submission(records: list[dict[str, Any]], out_dir: Path) -> None:
    hidden = [r for r in records if r["ground_truth"] is None]
    if not hidden:
        return
    # GAIA's leaderboard format: one {"task_id", "model_answer"} per line.
    with (out_dir / "submission.jsonl").open("w", encoding="utf-8") as handle:
        for record in hidden:
            handle.write(
                json.dumps({"task_id": record["task_id"], "model_answer": record["answer"] or ""}) + "\n"
            )
