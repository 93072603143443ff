"""The workspace in the URL, end to end: a real `gaia-env serve` and two real servers.

Every kind of client keeps one workspace under `/sessions/<id>/mcp`: mcp's `Client` in its default
(2026-07-28, sessionless) mode, a client that opens a new MCP session for every call (as
langchain's `get_tools()` and llama-index's `BasicMCPClient` do), and bare curl POSTs. Invalid
arguments come back as results the model can read, on both fronts.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import httpx
import pytest
from gaia_kit_testing.gateway import RunningGateway, launch
from mcp import Client
from mcp.shared.exceptions import MCPError

SERVERS = "filesystem-server,documents-txt-server"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    running = launch(tmp_path_factory.mktemp("sessions"), "--servers", SERVERS)
    yield running
    running.stop()


def new_session(gateway: RunningGateway) -> dict:
    reply = httpx.post(gateway.base + "/sessions", headers=gateway.headers())
    assert reply.status_code == 201, reply.text
    return reply.json()


def curl(url: str, method: str, params: dict) -> tuple[int, dict]:
    """One bare POST as curl sends it (Accept: */*, no initialize, no session header)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    argv = ["curl", "-s", "-w", "\n%{http_code}", "-X", "POST", url, "-H", "Content-Type: application/json"]
    out = subprocess.run([*argv, "-d", body], capture_output=True, text=True, timeout=60, check=True)
    text, _, status = out.stdout.rpartition("\n")
    return int(status), json.loads(text)


def text_of(result) -> str:
    return result.content[0].text


# -- every client keeps the URL's workspace ------------------------------------------------------


@pytest.mark.anyio
async def test_default_client_keeps_the_workspace_across_clients(gateway: RunningGateway) -> None:
    url = new_session(gateway)["url"]
    async with Client(url) as writer:
        assert "POST /sessions" in (writer.instructions or "")
        written = await writer.call_tool("write_file", {"path": "notes.txt", "content": "auto mode\n"})
        assert not written.is_error, written
    async with Client(url) as reader:
        assert text_of(await reader.call_tool("read_text_file", {"path": "notes.txt"})) == "auto mode\n"


@pytest.mark.anyio
async def test_a_new_mcp_session_per_call_keeps_the_workspace(gateway: RunningGateway) -> None:
    url = new_session(gateway)["url"]
    async with Client(url, mode="legacy") as client:
        assert "POST /sessions" in (client.instructions or "")
        await client.call_tool("write_file", {"path": "a.txt", "content": "legacy\n"})
    # Each client ends its MCP session (DELETE with Mcp-Session-Id) on close: the URL's workspace stays.
    for _ in range(2):
        async with Client(url, mode="legacy") as client:
            assert text_of(await client.call_tool("read_text_file", {"path": "a.txt"})) == "legacy\n"


def test_bare_posts_keep_the_workspace_and_delete_removes_it(gateway: RunningGateway) -> None:
    session = new_session(gateway)
    before = set(gateway.session_workspaces())
    status, reply = curl(
        session["url"],
        "tools/call",
        {"name": "write_file", "arguments": {"path": "b.txt", "content": "curl\n"}},
    )
    assert status == 200 and not reply["result"]["isError"], reply
    (workspace,) = set(gateway.session_workspaces()) - before
    assert (workspace / "b.txt").read_text() == "curl\n"
    status, reply = curl(
        session["url"], "tools/call", {"name": "read_text_file", "arguments": {"path": "b.txt"}}
    )
    assert reply["result"]["content"][0]["text"] == "curl\n"

    ended = httpx.delete(gateway.base + f"/sessions/{session['session_id']}", headers=gateway.headers())
    assert ended.status_code == 204
    assert not workspace.exists()
    again = httpx.delete(gateway.base + f"/sessions/{session['session_id']}", headers=gateway.headers())
    assert again.status_code == 404 and "Session not found" in again.json()["error"]["message"]
    _, reply = curl(session["url"], "tools/call", {"name": "read_text_file", "arguments": {"path": "b.txt"}})
    assert reply["result"]["isError"]


def test_the_per_server_url_selects_the_server_in_the_same_workspace(gateway: RunningGateway) -> None:
    session = new_session(gateway)
    curl(
        session["url"],
        "tools/call",
        {"name": "write_file", "arguments": {"path": "t.txt", "content": "one\n"}},
    )
    per_server = session["server_url_template"].format(server_id="documents-txt-server")
    _, listing = curl(per_server, "tools/list", {})
    assert {t["name"] for t in listing["result"]["tools"]} == {
        "extract_text_content",
        "list_supported_formats",
    }
    _, reply = curl(
        per_server, "tools/call", {"name": "extract_text_content", "arguments": {"file_path": "t.txt"}}
    )
    assert "one" in reply["result"]["content"][0]["text"], reply
    _, header_selected = curl(session["url"] + "?servers=documents-txt-server", "tools/list", {})
    assert header_selected["result"] == listing["result"]


def test_an_id_the_client_chooses_works_and_bad_ids_are_refused(gateway: RunningGateway) -> None:
    mine = gateway.base + "/sessions/my-run-7/mcp"
    curl(mine, "tools/call", {"name": "write_file", "arguments": {"path": "c.txt", "content": "chosen\n"}})
    # The same key by header reaches the same workspace: one rule, one namespace of keys.
    read = gateway.call("read_text_file", {"path": "c.txt"}, headers={"X-Session-Id": "my-run-7"})
    assert read["content"][0]["text"] == "chosen\n"
    before = set(gateway.session_workspaces())
    for url in (gateway.base + "/sessions/bad.id/mcp", gateway.base + "/sessions/" + "x" * 129 + "/mcp"):
        status, reply = curl(url, "tools/list", {})
        assert status == 400 and reply["error"]["code"] == -32600
        assert "Invalid session id" in reply["error"]["message"]
    assert set(gateway.session_workspaces()) == before


# -- invalid arguments are results, an unknown tool is not -----------------------------------------


def test_bare_invalid_arguments_are_error_results(gateway: RunningGateway) -> None:
    url = new_session(gateway)["url"]
    cases = {
        "read_text_file": (
            {"path": 42},
            "Invalid arguments for read_text_file: 'path': 42 is not of type 'string'.",
        ),
        "write_file": ({"path": "x"}, "Invalid arguments for write_file: 'content' is a required property."),
    }
    for tool, (arguments, sentence) in cases.items():
        status, reply = curl(url, "tools/call", {"name": tool, "arguments": arguments})
        assert status == 200 and reply["result"] == {
            "content": [{"type": "text", "text": sentence}],
            "isError": True,
        }
    _, reply = curl(url, "tools/call", {"name": "read_text_file", "arguments": {"path": "x", "heads": 1}})
    message = reply["result"]["content"][0]["text"]
    assert reply["result"]["isError"] and "'heads' was unexpected" in message and "head" in message
    status, reply = curl(url, "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert reply["error"]["code"] == -32602 and "Unknown tool: no_such_tool" in reply["error"]["message"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sdk_invalid_arguments_are_error_results(gateway: RunningGateway, mode: str) -> None:
    async with Client(new_session(gateway)["url"], mode=mode) as client:
        wrong = await client.call_tool("read_text_file", {"path": 42})
        assert wrong.is_error and "'path': 42 is not of type 'string'" in text_of(wrong)
        missing = await client.call_tool("write_file", {"path": "x"})
        assert missing.is_error and "'content' is a required property" in text_of(missing)
        with pytest.raises(MCPError, match="Unknown tool: no_such_tool"):
            await client.call_tool("no_such_tool", {})


# -- the URL form passes the official conformance scenarios /mcp passes ----------------------------


@pytest.mark.parametrize("scenario", ["server-initialize", "tools-list", "ping"])
def test_the_session_url_passes_conformance(
    conformance_suite, gateway: RunningGateway, scenario: str, tmp_path
) -> None:
    out = conformance_suite(
        "server",
        "--url",
        gateway.base + "/sessions/conformance-1/mcp",
        "--scenario",
        scenario,
        "-o",
        str(tmp_path),
    )
    report = out.stdout + out.stderr
    assert out.returncode == 0 and "0 failed" in report and "Passed: " in report, report
