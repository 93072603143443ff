"""The cost ledger end to end: a real gateway with the Google search and think servers on loopback fakes
(Google's Custom Search wire format, an OpenAI-compatible model), a price table and a per-session budget.

`gaia-train eval` reports cost per rollout and per tool; a runaway session's paid calls stop at its budget
while its free tools (and other sessions) go on."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gaia_kit_testing.fake_openai import chat_completions_app, tool_call
from gaia_kit_testing.fake_search import FakePage, FakeSearch
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.loopback import LoopbackServer
from gaia_train.cli import main
from gaia_train.data import gaia as ds
from gaia_train.demo.snapshot import write_demo_snapshot

SERVERS = "googlesearch-server,intelligence-think-server,filesystem-server"
PRICES = """
[prices."google-search"]
call = 0.005

[prices."model:think"]
call = 0.01
output_tokens_per_million = 0
"""
PAGES = [FakePage("Revenue by region", "https://example.org/revenue", "North leads revenue by region.")]


def model_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The think server's model (no tools offered) reasons; the agent searches, thinks, then answers."""
    if not body.get("tools"):
        return {"content": "Add up the North rows."}
    done = [m for m in body["messages"] if m["role"] == "tool"]
    if not done:
        return {"content": "", "tool_calls": [tool_call("search_google", {"query": "revenue by region"})]}
    if len(done) == 1:
        return {"content": "", "tool_calls": [tool_call("complex_problem_reasoning", {"question": "how?"})]}
    return {"content": "<answer>3070</answer>"}


@pytest.fixture(scope="module")
def model() -> Iterator[LoopbackServer]:
    with LoopbackServer(chat_completions_app(model_reply)) as server:
        yield server


@pytest.fixture(scope="module")
def search() -> Iterator[FakeSearch]:
    with FakeSearch(PAGES) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, model: LoopbackServer, search: FakeSearch) -> Iterator[RunningGateway]:
    root = tmp_path_factory.mktemp("costs")
    (root / "prices.toml").write_text(PRICES)
    env = {
        "GOOGLE_API_KEY": search.key,
        "GOOGLE_CSE_ID": "test-engine",
        "GOOGLE_CSE_URL": search.google_url,
        "SEARCH_BACKEND": "google",
        "GAIA_HTTP_ALLOW": "127.0.0.1",
        "GAIA_HTTP_CACHE_MODE": "off",  # every search is sent, so every one is paid
        "THINK_LLM_BASE_URL": model.url("/v1"),
        "THINK_LLM_MODEL_NAME": "scripted",
        "THINK_LLM_API_KEY": "sk-test",
        "GAIA_PRICES": str(root / "prices.toml"),
        "GAIA_SESSION_BUDGET_CALLS": "google-search=2",
    }
    gateway = launch(root, "--servers", SERVERS, env=env)
    yield gateway
    gateway.stop()


def search_call(gateway: RunningGateway, session: str) -> dict[str, Any]:
    return gateway.call("search_google", {"query": "revenue"}, headers={"X-Session-Id": session})


def metric(text: str, name: str, backend: str) -> float:
    found = re.search(rf'^{name}\{{backend="{re.escape(backend)}"\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_budget_stops_a_runaway_sessions_paid_calls_and_leaves_free_tools(
    gateway: RunningGateway, search: FakeSearch
) -> None:
    sent_before = len(search.requests)
    first, second = search_call(gateway, "runaway"), search_call(gateway, "runaway")
    assert not first["isError"] and "example.org/revenue" in first["content"][0]["text"]
    cost = second["_meta"]["gaia-env/cost"]
    assert cost["usd"] == pytest.approx(0.005)
    assert cost["session"]["backends"]["google-search"] == {"calls": 2, "usd": pytest.approx(0.01)}

    refused = search_call(gateway, "runaway")
    assert refused["isError"]
    assert "This session's budget for google-search is spent" in refused["content"][0]["text"]
    assert "GAIA_SESSION_BUDGET_CALLS" in refused["content"][0]["text"]
    assert len(search.requests) == sent_before + 2  # the refused search never left the server

    free = gateway.call("list_directory", {"path": "."}, headers={"X-Session-Id": "runaway"})
    assert not free["isError"]
    assert not search_call(gateway, "another-session")["isError"]  # budgets are per session

    report = httpx.get(gateway.base + "/sessions/runaway", timeout=10).json()
    assert report["cost"]["backends"]["google-search"] == {
        "calls": 2,
        "refused": 1,
        "usd": pytest.approx(0.01),
    }
    assert report["cost"]["tools"]["search_google"]["usd"] == pytest.approx(0.01)
    metrics = httpx.get(gateway.base + "/metrics", timeout=10).text
    assert metric(metrics, "gaia_env_budget_refusals_total", "google-search") >= 1
    assert metric(metrics, "gaia_env_paid_calls_total", "google-search") >= 3
    assert metric(metrics, "gaia_env_cost_usd_total", "google-search") >= 0.015 - 1e-9

    assert httpx.delete(gateway.base + "/sessions/runaway", timeout=10).status_code == 204
    ended = [json.loads(line) for line in gateway.log().splitlines() if '"session ended"' in line]
    assert any(r.get("session") == "runaway" and r["cost"]["usd"] == pytest.approx(0.01) for r in ended)


def test_eval_reports_cost_per_rollout_and_per_tool(
    gateway: RunningGateway, model: LoopbackServer, tmp_path: Path, capsys
) -> None:
    demo = tmp_path / "demo"
    write_demo_snapshot(demo, skip_audio=True)
    tasks = ds.load_split(demo, "validation")[:2]
    rows = tmp_path / "rows.parquet"
    import pandas as pd

    pd.DataFrame([ds.to_row(t, 0, ds.DEFAULT_MOUNT) for t in tasks]).to_parquet(rows, index=False)
    out = tmp_path / "eval"
    code = main(
        ["eval", "--data", str(rows), "--out", str(out), "--base-url", model.url("/v1"), "--model", "scripted",
         "--mcp-url", gateway.url, "--servers", SERVERS, "--no-progress"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err

    records = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        assert record["metrics"]["cost_usd"] == pytest.approx(0.015)
        assert record["metrics"]["cost_usd_by_tool"] == {
            "search_google": pytest.approx(0.005),
            "complex_problem_reasoning": pytest.approx(0.01),
        }
        assert record["metrics"]["paid_calls"] == {"google-search": 1, "model:think": 1}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost_usd"] == pytest.approx(0.03)
    assert summary["mean_cost_usd_per_rollout"] == pytest.approx(0.015)
    assert summary["cost_usd_by_tool"] == {
        "complex_problem_reasoning": pytest.approx(0.02),
        "search_google": pytest.approx(0.01),
    }
    assert summary["paid_calls_by_backend"] == {"google-search": 2, "model:think": 2}
    table = capsys.readouterr().out
    assert "mean cost USD / rollout" in table and "cost USD: complex_problem_reasoning" in table
