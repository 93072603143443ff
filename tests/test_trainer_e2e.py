"""The trainer end to end: real gateway, real filesystem and csv servers, the demo data, and a
loopback OpenAI-compatible fake playing a scripted agent through `gaia-train eval`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gaia_kit_testing.fake_openai import chat_completions_app, tool_call
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.loopback import LoopbackServer
from gaia_train.cli import main
from gaia_train.data import gaia as ds
from gaia_train.demo.snapshot import DEMO_TASKS, write_demo_snapshot

SERVERS = "filesystem-server,documents-csv-server"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    write_demo_snapshot(root, skip_audio=True)
    return root


@pytest.fixture(scope="module")
def gateway(demo: Path, tmp_path_factory) -> Iterator[RunningGateway]:
    gateway = launch(tmp_path_factory.mktemp("gw"), "--servers", SERVERS, dataset_dir=demo)
    yield gateway
    gateway.stop()


def scripted_agent(body: dict[str, Any]) -> dict[str, Any]:
    """Lists the attachment's folder, reads the CSV, adds up the North region's revenue."""
    messages = body["messages"]
    attachment = re.search(r"Attached file: (\S+)", messages[1]["content"]).group(1)
    tool_turns = [m for m in messages if m["role"] == "tool"]
    if not tool_turns:
        return {
            "content": "",
            "tool_calls": [tool_call("list_directory", {"path": attachment.rsplit("/", 1)[0]})],
        }
    if len(tool_turns) == 1:
        assert attachment.rsplit("/", 1)[1] in tool_turns[0]["content"], tool_turns[0]["content"]
        return {"content": "", "tool_calls": [tool_call("extract_csv_content", {"file_path": attachment})]}
    revenue = 0
    for line in tool_turns[-1]["content"].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] == "North":
            revenue += int(cells[2]) * int(cells[3])
    return {"content": f"North revenue is {revenue}. <answer>{revenue}</answer>"}


def test_eval_against_the_real_gateway(demo: Path, gateway: RunningGateway, tmp_path: Path, capsys) -> None:
    [revenue_task] = [t for t in DEMO_TASKS if t.key == "csv-revenue"]
    tasks = [t for t in ds.load_split(demo, "validation") if t.task_id == revenue_task.task_id]
    rows = tmp_path / "rows.parquet"
    import pandas as pd

    pd.DataFrame([ds.to_row(t, 0, ds.DEFAULT_MOUNT) for t in tasks]).to_parquet(rows, index=False)

    with LoopbackServer(chat_completions_app(scripted_agent)) as model:
        code = main(
            [
                "eval",
                "--data",
                str(rows),
                "--out",
                str(tmp_path / "eval"),
                "--base-url",
                model.url("/v1"),
                "--model",
                "scripted",
                "--mcp-url",
                gateway.url,
                "--servers",
                SERVERS,
                "--no-progress",
            ]
        )
    assert code == 0, capsys.readouterr().err

    [record] = [json.loads(x) for x in (tmp_path / "eval" / "trajectories.jsonl").read_text().splitlines()]
    assert record["reward"] == 1.0 and record["answer"] == "3070" and record["stop"] == "answer"
    assert record["metrics"]["tool_calls"] == {"list_directory": 1, "extract_csv_content": 1}
    assert record["metrics"]["tool_errors"] == 0
    tool_outputs = [m["content"] for m in record["messages"] if m["role"] == "tool"]
    assert "| North" in tool_outputs[1]

    # The episode's session is gone from the gateway and its workspace removed.
    assert "session ended, workspace removed" in gateway.log()
    assert gateway.status()["sessions"] == 0
    assert gateway.session_workspaces() == []
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["pass_at_1"] == 1.0 and (tmp_path / "eval" / "summary.png").exists()


def test_a_row_sees_only_its_own_servers_and_tools(
    demo: Path, gateway: RunningGateway, tmp_path: Path
) -> None:
    """Per-sample tools: the row's mcp_servers go to the gateway as MCP-Servers; mcp_tools narrow the list."""
    seen: list[list[str]] = []

    def agent(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(sorted(t["function"]["name"] for t in body.get("tools", [])))
        if not [m for m in body["messages"] if m["role"] == "tool"]:
            return {"content": "", "tool_calls": [tool_call("list_directory", {"path": "/workspace"})]}
        return {"content": "<answer>done</answer>"}

    rows = tmp_path / "rows.parquet"
    import pandas as pd

    first, second = (ds.to_row(t, 0, ds.DEFAULT_MOUNT) for t in ds.load_split(demo, "validation")[:2])
    csv_only = {**first, "extra_info": {**first["extra_info"], "mcp_servers": "documents-csv-server"}}
    narrowed = {**second, "extra_info": {**second["extra_info"], "mcp_tools": "extract_csv_content"}}
    pd.DataFrame([csv_only, narrowed]).to_parquet(rows, index=False)
    with LoopbackServer(chat_completions_app(agent)) as model:
        code = main(
            ["eval", "--data", str(rows), "--out", str(tmp_path / "eval"), "--base-url", model.url("/v1"),
             "--model", "scripted", "--mcp-url", gateway.url, "--concurrency", "1", "--no-progress"]
        )  # fmt: skip
    assert code == 0
    records = [json.loads(x) for x in (tmp_path / "eval" / "trajectories.jsonl").read_text().splitlines()]
    # the csv server's two tools only (the filesystem server's fourteen are not in the prompt)
    assert len(seen[0]) == 2 and "extract_csv_content" in seen[0] and "list_directory" not in seen[0]
    assert seen[-1] == ["extract_csv_content"]
    # a call outside the row's selection is answered as an unknown tool, never run
    for record in records:
        [tool_message] = [m for m in record["messages"] if m["role"] == "tool"]
        assert "Unknown tool 'list_directory'" in tool_message["content"]


def test_check_env_shows_what_the_agent_will_see(gateway: RunningGateway, capsys) -> None:
    assert main(["check-env", "--mcp-url", gateway.url, "--servers", SERVERS, "--mcp-config"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 servers ready, 16 tools for this selection" in out
    assert re.search(r"documents-csv-server\s+ready\s+2 tools", out)
    assert "sample call: list_allowed_directories ok in" in out
    assert '"MCP_SERVERS": "filesystem-server,documents-csv-server"' in out
