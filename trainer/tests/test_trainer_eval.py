"""`gaia-train eval` against a loopback OpenAI-compatible fake playing a scripted agent."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from gaia_kit_testing.fake_openai import chat_completions_app, tool_call
from gaia_kit_testing.loopback import LoopbackServer
from gaia_train.cli import main
from gaia_train.data import gaia as ds


def task(task_id: str, level: int, answer: str, question: str = "What is the code?") -> ds.GaiaTask:
    return ds.GaiaTask(task_id, question, level, answer, "notes.txt", "notes.txt", "validation")


class Agent:
    """Reads the attachment named in the prompt, then answers with the digits it found."""

    def __init__(self) -> None:
        self.in_flight = self.max_in_flight = 0
        self.failures: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.05)
            return self.reply(body)
        finally:
            self.in_flight -= 1

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        question = messages[1]["content"]
        if "broken" in question:
            return {"status": 400, "content": "this model cannot do that"}
        if "flaky" in question and self.failures.get(question, 0) < 2:
            self.failures[question] = self.failures.get(question, 0) + 1
            return {"status": 503, "content": "overloaded"}
        if messages[-1]["role"] != "tool":
            assert {t["function"]["name"] for t in body["tools"]} >= {"read_file"}
            # The attachment here is the loopback server's /data/notes.txt.
            if "text mode" in question:
                return {
                    "content": '<tool_call>{"name": "read_file", "arguments": {"path": "/data/notes.txt"}}</tool_call>'
                }
            return {"content": "", "tool_calls": [tool_call("read_file", {"path": "/data/notes.txt"})]}
        digits = re.findall(r"\d+", messages[-1]["content"])
        return {
            "content": f"The note says {digits[0]}. <answer>{digits[0]}</answer>",
            "reasoning_content": "read it, answer it",
        }


@pytest.fixture
def agent_endpoint():
    agent = Agent()
    with LoopbackServer(chat_completions_app(agent)) as server:
        yield agent, server.url("/v1")


def write_rows(path: Path, tasks: list[ds.GaiaTask]) -> Path:
    pd.DataFrame([ds.to_row(t, i, "/data") for i, t in enumerate(tasks)]).to_parquet(path, index=False)
    return path


def eval_args(data: Path, out: Path, base_url: str, mcp_url: str, *extra: str) -> list[str]:
    return [
        "eval",
        "--data",
        str(data),
        "--out",
        str(out),
        "--base-url",
        base_url,
        "--model",
        "scripted",
        "--mcp-url",
        mcp_url,
        "--no-progress",
        *extra,
    ]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_eval_scores_writes_trajectories_and_resumes(tmp_path, fake_mcp, agent_endpoint, capsys) -> None:
    agent, base_url = agent_endpoint
    tasks = [task(f"t{i}", 1 + i % 3, "7731") for i in range(9)]
    tasks.append(task("wrong", 2, "1234"))
    tasks.append(task("text", 3, "7731", "What is the code? (text mode)"))
    tasks.append(task("flaky", 1, "7731", "What is the code? (flaky)"))
    data = write_rows(tmp_path / "rows.parquet", tasks)
    out = tmp_path / "eval"

    assert main(eval_args(data, out, base_url, fake_mcp.url, "--concurrency", "4", "--retries", "3")) == 0
    table = capsys.readouterr().out
    assert re.search(r"pass@1\s+0\.917", table) and "calls: read_file" in table

    records = {r["task_id"]: r for r in read_jsonl(out / "trajectories.jsonl")}
    assert len(records) == 12
    assert records["wrong"]["reward"] == 0.0 and records["t0"]["reward"] == 1.0
    assert records["text"]["reward"] == 1.0 and records["flaky"]["reward"] == 1.0
    first = records["t0"]
    assert first["stop"] == "answer" and first["answer"] == "7731"
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert first["messages"][-1]["reasoning_content"] == "read it, answer it"
    assert first["metrics"]["tool_calls"] == {"read_file": 1} and first["metrics"]["turns"] == 2
    # every episode had its own MCP session, and each was closed
    sessions = {r["session_id"] for r in records.values()}
    assert len(sessions) == 12 and sessions <= fake_mcp.sessions("DELETE")
    # bounded concurrency, and reasoning never sent back to the endpoint
    assert agent.max_in_flight <= 4
    assert not any("reasoning_content" in m for body in agent.requests for m in body["messages"])
    assert not any("name" in m for body in agent.requests for m in body["messages"] if m["role"] == "tool")

    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_1"] == pytest.approx(11 / 12)
    assert summary["pass_at_1_by_level"] == {"1": 1.0, "2": pytest.approx(3 / 4), "3": 1.0}
    assert summary["tool_calls_by_tool"] == {"read_file": 12} and summary["tool_error_rate"] == 0.0
    assert summary["mean_turns"] == 2.0 and summary["stops"] == {"answer": 12}
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Resume: a finished run does nothing more; a torn last line and a lost one are run again.
    requests_before = len(agent.requests)
    assert main(eval_args(data, out, base_url, fake_mcp.url)) == 0
    assert len(agent.requests) == requests_before and "resumed past 12" in capsys.readouterr().out
    lines = (out / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (out / "trajectories.jsonl").write_text("".join(lines[:-2]) + lines[-2][:40])
    assert main(eval_args(data, out, base_url, fake_mcp.url)) == 0
    assert "ran 2, resumed past 10" in capsys.readouterr().out
    assert len(read_jsonl(out / "trajectories.jsonl")) == 12


def test_eval_of_a_mixed_dataset_scores_each_source_by_its_own_scorer(
    tmp_path, fake_mcp, agent_endpoint, capsys
) -> None:
    _, base_url = agent_endpoint
    rows = [ds.to_row(task(f"g{i}", 1, "7731"), i, "/data") for i in range(2)]
    # The scripted agent answers 7731 every time; only each row's own scorer tells them apart.
    for index, (truth, scorer) in enumerate([("7,731", "exact"), ("7731.4", "numeric")], start=2):
        row = ds.to_row(task(f"s{index}", 1, truth), index, "/data")
        row["data_source"] = "suite"
        row["extra_info"] = {**row["extra_info"], "scorer": scorer, "tolerance": 0.001}
        rows.append(row)
    data = tmp_path / "rows.parquet"
    pd.DataFrame(rows).to_parquet(data, index=False)
    out = tmp_path / "eval"

    assert main(eval_args(data, out, base_url, fake_mcp.url)) == 0
    table = capsys.readouterr().out
    assert re.search(r"pass@1 gaia/level1 \(n=2\)\s+1\.000", table)
    assert re.search(r"pass@1 suite \(n=2\)\s+0\.500", table)
    records = {r["task_id"]: r for r in read_jsonl(out / "trajectories.jsonl")}
    # Exact match refuses 7731 for "7,731"; numeric accepts it for 7731.4, where GAIA's scorer would not.
    assert records["s2"]["reward"] == 0.0 and records["s3"]["reward"] == 1.0
    assert records["s2"]["data_source"] == "suite" and records["g0"]["data_source"] == "gaia/level1"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass_at_1_by_source"] == {"gaia/level1": 1.0, "suite": 0.5}
    assert summary["episodes_by_source"] == {"gaia/level1": 2, "suite": 2}


TEAM_TOML = """
name = "pair"
coordinator = "lead"

[roles.lead]
prompt = "You lead."
servers = ["fake-lead"]
tools = ["read_file"]
delegates_to = ["helper"]

[roles.helper]
description = "adds numbers"
prompt = "You add."
servers = ["fake-helper"]
tools = ["add"]
"""


async def team_agent(body: dict[str, Any]) -> dict[str, Any]:
    """The lead hands the sum to the helper and answers what it got back; the helper adds."""
    messages, tools = body["messages"], sorted(t["function"]["name"] for t in body["tools"])
    last = messages[-1]
    if messages[0]["content"].startswith("You add"):
        assert tools == ["add"]
        if last["role"] != "tool":
            return {"content": "", "tool_calls": [tool_call("add", {"a": 2, "b": 3})]}
        return {"content": f"<answer>{last['content']}</answer>"}
    assert messages[0]["content"].startswith("You lead.\n\n") and tools == ["delegate", "read_file"]
    if last["role"] != "tool":
        return {
            "content": "",
            "tool_calls": [tool_call("delegate", {"role": "helper", "task": "add 2 and 3"})],
        }
    [number] = re.findall(r"\d+", last["content"])
    return {"content": f"<answer>{number}</answer>"}


def test_eval_plays_a_row_with_the_team_its_agent_name_names(tmp_path, fake_mcp, capsys) -> None:
    team_file = tmp_path / "pair.toml"
    team_file.write_text(TEAM_TOML)
    rows = [ds.to_row(task("single", 1, "7731"), 0, "/data")]
    rows += [ds.to_row(task(f"team{i}", 1, "5", "What is 2 + 3?"), i, "/data", "pair") for i in (1, 2)]
    data = tmp_path / "rows.parquet"
    pd.DataFrame(rows).to_parquet(data, index=False)
    out = tmp_path / "eval"

    agent = Agent()

    async def either(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][0]["content"].startswith(("You lead", "You add")):
            return await team_agent(body)
        return await agent(body)

    with LoopbackServer(chat_completions_app(either)) as server:
        args = eval_args(data, out, server.url("/v1"), fake_mcp.url, "--team", str(team_file))
        assert main(args) == 0
    table = capsys.readouterr().out
    assert re.search(r"pass@1 pair \(n=2\)\s+1\.000", table) and re.search(
        r"pass@1 gaia_agent \(n=1\)", table
    )
    records = {r["task_id"]: r for r in read_jsonl(out / "trajectories.jsonl")}
    team = records["team1"]
    assert team["reward"] == 1.0 and team["agent_name"] == "pair" and records["single"]["delegations"] == []
    assert team["delegations"] == [
        {"role": "helper", "servers": "fake-helper", "stop": "answer", "answer": "5"}
    ]
    # One transcript: the helper's turns sit inside the lead's delegate call, each tagged with its role.
    assert [(m["gaia_role"], m["role"]) for m in team["messages"]] == [
        ("lead", "system"), ("lead", "user"), ("lead", "assistant"),
        ("helper", "system"), ("helper", "user"), ("helper", "assistant"), ("helper", "tool"), ("helper", "assistant"),
        ("lead", "tool"), ("lead", "assistant"),
    ]  # fmt: skip
    # Both roles worked in the team's one session, each through its own servers.
    selections = {servers for _, sid, servers in fake_mcp.selections if sid == team["session_id"]}
    assert selections == {"fake-lead", "fake-helper"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes_by_agent"] == {"gaia_agent": 1, "pair": 2}
    assert summary["mean_delegations"] == pytest.approx(2 / 3)


def test_a_teams_roles_share_the_episodes_response_budget(tmp_path, fake_mcp) -> None:
    team_file = tmp_path / "pair.toml"
    team_file.write_text(TEAM_TOML)
    data = tmp_path / "rows.parquet"
    pd.DataFrame([ds.to_row(task("t", 1, "5", "What is 2 + 3?"), 0, "/data", "pair")]).to_parquet(data)
    out = tmp_path / "eval"
    # The fake counts a token per 4 characters: the lead's call 1, the helper's two turns 1 and 5. The
    # helper's turns spend the lead's budget too, so the lead stops before it answers.
    with LoopbackServer(chat_completions_app(team_agent)) as server:
        args = eval_args(data, out, server.url("/v1"), fake_mcp.url, "--team", str(team_file))
        assert main([*args, "--max-response-tokens", "4"]) == 0
    [record] = read_jsonl(out / "trajectories.jsonl")
    assert record["delegations"][0]["answer"] == "5"
    assert record["stop"] == "response_budget" and record["answer"] is None and record["reward"] == 0.0


def test_eval_refuses_rows_no_team_can_play(tmp_path, fake_mcp, agent_endpoint, capsys) -> None:
    _, base_url = agent_endpoint
    unknown = tmp_path / "unknown.parquet"
    pd.DataFrame([ds.to_row(task("a", 1, "1"), 0, "/data", "solo")]).to_parquet(unknown, index=False)
    assert main(eval_args(unknown, tmp_path / "o", base_url, fake_mcp.url)) == 1
    assert "agent_name 'solo', which is neither gaia_agent nor a team" in capsys.readouterr().err
    selecting = ds.to_row(task("b", 1, "1"), 0, "/data", "demo_team")
    selecting["extra_info"] = {**selecting["extra_info"], "mcp_servers": ["excel-server"]}
    data = tmp_path / "selecting.parquet"
    pd.DataFrame([selecting]).to_parquet(data, index=False)
    assert main(eval_args(data, tmp_path / "o", base_url, fake_mcp.url)) == 1
    assert "whose roles each bring their own" in capsys.readouterr().err
    assert not (tmp_path / "o" / "trajectories.jsonl").exists()


def test_eval_model_errors_are_kept_apart_and_retried(tmp_path, fake_mcp, agent_endpoint, capsys) -> None:
    _, base_url = agent_endpoint
    data = write_rows(tmp_path / "rows.parquet", [task("ok", 1, "7731"), task("bad", 1, "1", "broken?")])
    out = tmp_path / "eval"
    assert main(eval_args(data, out, base_url, fake_mcp.url, "--retries", "0")) == 2
    err = capsys.readouterr().err
    assert "1 episode(s) were ended by the environment or the model endpoint" in err and "answered 400" in err
    assert [r["task_id"] for r in read_jsonl(out / "trajectories.jsonl")] == ["ok"]
    assert [(r["task_id"], r["kind"]) for r in read_jsonl(out / "errors.jsonl")] == [("bad", "model_error")]


def test_eval_on_hidden_answers_writes_a_submission(tmp_path, fake_mcp, agent_endpoint) -> None:
    _, base_url = agent_endpoint
    data = write_rows(tmp_path / "rows.parquet", [task("h1", 1, "?"), task("h2", 2, "?")])
    assert main(eval_args(data, tmp_path / "eval", base_url, fake_mcp.url)) == 0
    submission = read_jsonl(tmp_path / "eval" / "submission.jsonl")
    assert sorted(submission, key=lambda r: r["task_id"]) == [
        {"task_id": "h1", "model_answer": "7731"},
        {"task_id": "h2", "model_answer": "7731"},
    ]
    assert all(r["reward"] is None for r in read_jsonl(tmp_path / "eval" / "trajectories.jsonl"))


def test_eval_on_the_demo_snapshot_and_unreachable_gateway(tmp_path, agent_endpoint, capsys) -> None:
    _, base_url = agent_endpoint
    from gaia_train.demo.snapshot import write_demo_snapshot

    write_demo_snapshot(tmp_path / "demo", skip_audio=True)
    args = [
        "eval",
        "--snapshot",
        str(tmp_path / "demo"),
        "--out",
        str(tmp_path / "eval"),
        "--base-url",
        base_url,
        "--model",
        "scripted",
        "--mcp-url",
        "http://127.0.0.1:9/mcp",
        "--no-progress",
        "--limit",
        "2",
    ]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert (
        "2 episode(s) were ended by the environment" in captured.err
        and "Is the gateway running" in captured.err
    )
    # environment faults are counted apart in the pass@1 table, never scored as the agent's failures
    assert re.search(r"environment faults \(not scored, rerun\)\s+2", captured.out)
    assert re.search(r"scored\s+0", captured.out)
    assert not (tmp_path / "eval" / "trajectories.jsonl").exists()
    errors = read_jsonl(tmp_path / "eval" / "errors.jsonl")
    assert [e["kind"] for e in errors] == ["environment_fault"] * 2


def test_eval_rejects_bad_options(tmp_path, capsys) -> None:
    data = write_rows(tmp_path / "rows.parquet", [task("a", 1, "1")])
    assert (
        main(["eval", "--data", str(data), "--out", str(tmp_path / "o"), "--model", "m", "--base-url", ""])
        == 1
    )
    assert "--base-url" in capsys.readouterr().err
    assert (
        main(
            [
                "eval",
                "--data",
                str(data),
                "--out",
                str(tmp_path / "o"),
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--concurrency",
                "0",
            ]
        )
        == 1
    )
    assert "--concurrency must be at least 1" in capsys.readouterr().err
    assert (
        main(
            [
                "eval",
                "--data",
                str(tmp_path / "none.parquet"),
                "--out",
                str(tmp_path / "o"),
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ]
        )
        == 1
    )
    assert "does not exist" in capsys.readouterr().err
