"""Today's MCP through the gateway, on both fronts (SDK sessions and the bare JSON fast path):
tool annotations, structured results, progress, cancellation, and requests without an Accept header."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import psutil
import pytest
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.probe import write_registry
from mcp import Client

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")

REGISTRY = """
[servers.probe]
command = ["{python}", "{probe}"]
timeout = 90
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("features")
    gateway = launch(tmp, "--config", str(write_registry(tmp / "servers.toml", REGISTRY)))
    yield gateway
    gateway.stop()


def sse_messages(body: str) -> list[dict]:
    """The JSON-RPC messages of an SSE body (priming events carry no data)."""
    found = []
    for event in body.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].strip() for line in event.split("\n") if line.startswith("data:"))
        if data:
            found.append(json.loads(data))
    return found


def wait_for_child(workspace_root: Path, timeout: float = 30) -> psutil.Process:
    """The host's view of the `sleep` a probe call started (found by its unique argument)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for marker in workspace_root.glob("*/child.pid"):
            argument = marker.read_text().strip()
            for process in psutil.process_iter(["cmdline"]):
                if argument and process.info["cmdline"] == ["sleep", argument]:
                    return process
        time.sleep(0.05)
    raise AssertionError("the tool never started its child process")


def gone(process: psutil.Process, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def clear_markers(gateway: RunningGateway) -> None:
    for marker in gateway.workspace_root.glob("*/child.pid"):
        marker.unlink()


# -- annotations ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_every_shipped_tool_has_a_title_and_all_four_hints_on_both_fronts(real_gateway) -> None:
    bare = real_gateway.rpc("tools/list").json()["result"]["tools"]
    async with Client(real_gateway.url, mode="legacy") as client:
        listed = (await client.list_tools()).tools
    assert len(bare) == len(listed) == 126
    for tool in bare:
        annotations = tool.get("annotations") or {}
        missing = [h for h in HINTS if not isinstance(annotations.get(h), bool)]
        assert not missing and annotations.get("title"), f"{tool['name']}: {annotations}"
        assert tool["title"] == annotations["title"]
        if annotations["readOnlyHint"]:
            assert annotations["destructiveHint"] is False and annotations["idempotentHint"] is True
    by_name = {t["name"]: t["annotations"] for t in bare}
    for tool in listed:
        assert tool.annotations.model_dump(by_alias=True, exclude_none=True) == by_name[tool.name]
    assert by_name["read_text_file"]["readOnlyHint"] is True
    assert by_name["filesystem-server__write_file"]["destructiveHint"] is True
    assert by_name["search_google"]["openWorldHint"] is True


# -- structured results ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_structured_content_and_output_schema_pass_through_unchanged(probe) -> None:
    bare_tools = {t["name"]: t for t in probe.rpc("tools/list").json()["result"]["tools"]}
    bare = probe.call("facts", {"text": "two words"})
    async with Client(probe.url, mode="legacy") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("facts", {"text": "two words"})
    expected = {"text": "two words", "length": 9, "words": ["two", "words"]}
    assert bare["structuredContent"] == expected and bare["content"][0]["text"] == "9 characters"
    assert result.structured_content == expected and result.content[0].text == "9 characters"
    schema = bare_tools["facts"]["outputSchema"]
    assert schema["properties"]["words"]["type"] == "array"
    assert listed["facts"].output_schema == schema
    assert "outputSchema" not in bare_tools["echo"]


@pytest.mark.anyio
async def test_shipped_servers_answer_with_data_through_the_gateway(real_gateway) -> None:
    bare = real_gateway.call("list_allowed_directories", headers={"X-Session-Id": "data-1"})
    async with Client(real_gateway.url, mode="legacy") as client:
        session = await client.call_tool("list_allowed_directories", {})
    assert bare["structuredContent"]["directories"][1] == {
        "path": "/workspace/gaia_dataset",
        "writable": False,
    }
    assert session.structured_content["directories"][1] == bare["structuredContent"]["directories"][1]


# -- progress -------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_progress_reaches_an_sdk_client_in_order_before_the_result(probe, mode) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async with Client(probe.url, mode=mode) as client:
        result = await client.call_tool("count_up", {"steps": 4}, progress_callback=on_progress)
    assert result.content[0].text == "counted to 4"
    assert seen == [(float(i), 4.0, f"step {i}") for i in range(1, 5)]


def test_a_bare_post_that_accepts_sse_gets_progress_events_then_the_result(probe) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "count_up", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok"}},
    }
    streamed = httpx.post(
        probe.url, json=body, headers={"Accept": "application/json, text/event-stream"}, timeout=60
    )
    assert streamed.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(streamed.text)
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
        ("tok", 1, 3), ("tok", 2, 3), ("tok", 3, 3)
    ]  # fmt: skip
    assert messages[-1]["id"] == 7 and messages[-1]["result"]["content"][0]["text"] == "counted to 3"

    # JSON-response mode has no wire for notifications inside a call: the same request answered as
    # one JSON body carries only the result.
    plain = httpx.post(probe.url, json=body, headers={"Accept": "application/json"}, timeout=60)
    assert plain.headers["content-type"].startswith("application/json")
    assert plain.json()["result"]["content"][0]["text"] == "counted to 3"


# -- cancellation ---------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_cancelled_sdk_call_kills_the_servers_child_process(probe, mode) -> None:
    clear_markers(probe)
    async with Client(probe.url, mode=mode) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "child_sleep", {"seconds": 60})
            child = await anyio.to_thread.run_sync(wait_for_child, probe.workspace_root)
            group.cancel_scope.cancel()  # legacy: notifications/cancelled; auto: the stream closes
        assert await anyio.to_thread.run_sync(gone, child), f"{child} outlived its cancelled call"
        assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == "still here"


def test_a_bare_client_that_goes_away_cancels_its_call(probe) -> None:
    clear_markers(probe)
    host, port = probe.base.removeprefix("http://").split(":")
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "child_sleep", "arguments": {}},
        }
    ).encode()
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"X-Session-Id: leaving\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((host, int(port))) as conn:
        conn.sendall(request)
        child = wait_for_child(probe.workspace_root)
    assert gone(child), f"{child} outlived the client that left"
    assert probe.call("echo", {"text": "ok"})["content"][0]["text"] == "ok"


# -- no Accept header -----------------------------------------------------------------------------


def _urllib(gateway: RunningGateway, message: dict) -> tuple[int, str, dict]:
    request = urllib.request.Request(
        gateway.url, data=json.dumps(message).encode(), headers={"Content-Type": "application/json"}
    )
    assert request.get_header("Accept") is None  # urllib sends none
    with urllib.request.urlopen(request, timeout=60) as reply:
        return reply.status, reply.headers["Content-Type"], json.loads(reply.read())


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "u", "version": "1"},
            },
        },
    ],  # fmt: skip
    ids=["ping", "tools-list", "tools-call", "sdk-method", "initialize"],
)
def test_a_request_without_accept_is_answered_as_curls_is(probe, message) -> None:
    status, content_type, reply = _urllib(probe, message)
    assert status == 200 and content_type.startswith("application/json")
    assert reply["id"] == message["id"]
    if message["method"] == "tools/call":
        assert reply["result"]["content"][0]["text"] == "hi"
    if message["method"] == "initialize":
        assert reply["result"]["serverInfo"]["name"] == "gaia-env"
