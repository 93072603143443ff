"""The gateway end to end: a real `gaia-env serve` process, real server subprocesses."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time

import httpx
import psutil
import pytest
from gaia_contract import BUSY
from gaia_env.registry import load_registry
from gaia_kit_testing.gateway import RunningGateway
from gaia_kit_testing.probe import PROBE_REGISTRY, write_registry
from mcp import Client

DOCUMENTED_CURL = """curl -X POST http://localhost:8080/mcp -H "Content-Type: application/json" \\
  -d '{"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1}'"""

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ENABLED = {sid for sid, spec in load_registry().items() if spec.enabled}


def served_tool_count(gateway: RunningGateway) -> int:
    servers = gateway.status()["servers"]
    assert set(servers) == ENABLED and all(s["state"] == "ready" for s in servers.values()), servers
    return sum(s["tools"] for s in servers.values())


def _curl(command: str, port: str) -> tuple[int, dict]:
    argv = shlex.split(command.replace("\\\n", " ").replace("localhost:8080", f"localhost:{port}"))
    out = subprocess.run([*argv, "-s", "-w", "\n%{http_code}"], capture_output=True, text=True, timeout=60)
    body, _, status = out.stdout.rpartition("\n")
    return int(status), json.loads(body)


# -- the documented entry points ------------------------------------------------------------------


def test_documented_curl_lists_tools(real_gateway: RunningGateway) -> None:
    assert DOCUMENTED_CURL in (real_gateway_readme := open("README.md").read()), (
        "README lost the curl example"
    )
    del real_gateway_readme
    status, reply = _curl(DOCUMENTED_CURL, real_gateway.base.rsplit(":", 1)[1])
    assert status == 200
    names = {tool["name"] for tool in reply["result"]["tools"]}
    assert len(names) == served_tool_count(real_gateway)
    assert {"read_text_file", "extract_text_content", "extract_csv_content"} <= names
    assert all(NAME.match(name) for name in names)


def test_curl_tools_call_is_plain_json(real_gateway: RunningGateway) -> None:
    command = DOCUMENTED_CURL.replace(
        '"method": "tools/list", "params": {}',
        '"method": "tools/call", "params": {"name": "list_allowed_directories", "arguments": {}}',
    )
    status, reply = _curl(command, real_gateway.base.rsplit(":", 1)[1])
    assert status == 200
    assert reply["result"]["isError"] is False
    assert "/workspace/gaia_dataset" in reply["result"]["content"][0]["text"]


def test_readme_tools_call_example_verbatim(real_gateway: RunningGateway) -> None:
    readme = open("README.md").read()
    command = next(
        block for block in readme.split("```") if '"method": "tools/call"' in block and "curl" in block
    )
    status, reply = _curl(command.strip(), real_gateway.base.rsplit(":", 1)[1])
    assert status == 200 and reply["result"]["isError"] is False, reply
    read = real_gateway.call("read_text_file", {"path": "notes.txt"}, headers={"X-Session-Id": "my-run-1"})
    assert read["content"][0]["text"].startswith("hello")


@pytest.mark.anyio
async def test_sdk_session_keeps_one_workspace(real_gateway: RunningGateway) -> None:
    async with Client(real_gateway.url, mode="legacy") as client:
        await client.send_ping()
        tools = await client.list_tools()
        assert len(tools.tools) == served_tool_count(real_gateway)
        written = await client.call_tool(
            "filesystem-server__write_file", {"path": "notes/a.txt", "content": "kept\n"}
        )
        assert not written.is_error, written
        read = await client.call_tool("read_text_file", {"path": "notes/a.txt"})
        assert read.content[0].text.startswith("kept")


@pytest.mark.anyio
async def test_sdk_auto_mode_lists_and_calls(real_gateway: RunningGateway) -> None:
    async with Client(real_gateway.url) as client:
        tools = await client.list_tools()
        assert len(tools.tools) == served_tool_count(real_gateway)
        result = await client.call_tool("list_allowed_directories", {})
        assert not result.is_error


# -- selection and naming -------------------------------------------------------------------------


def test_collision_names_are_qualified(real_gateway: RunningGateway) -> None:
    names = {t["name"] for t in real_gateway.rpc("tools/list").json()["result"]["tools"]}
    assert "list_supported_formats" not in names
    assert {
        "documents-txt-server__list_supported_formats",
        "documents-csv-server__list_supported_formats",
    } <= names
    txt = real_gateway.call("documents-txt-server__list_supported_formats")
    csv = real_gateway.call("documents-csv-server__list_supported_formats")
    assert not txt["isError"] and not csv["isError"]
    assert txt["content"][0]["text"] != csv["content"][0]["text"]


def test_selection_by_header_query_and_path(real_gateway: RunningGateway) -> None:
    def names(**kwargs) -> set[str]:
        return {t["name"] for t in real_gateway.rpc("tools/list", **kwargs).json()["result"]["tools"]}

    by_header = names(headers={"MCP_SERVERS": "documents-txt-server"})
    assert by_header == {"extract_text_content", "list_supported_formats"}
    assert names(headers={"MCP-Servers": "documents-txt-server,documents-csv-server"}) >= {
        "documents-csv-server__list_supported_formats"
    }
    assert names(path="/mcp?servers=documents-csv-server") == {
        "extract_csv_content",
        "list_supported_formats",
    }
    assert names(path="/servers/filesystem-server/mcp") == names(headers={"MCP_SERVERS": "filesystem-server"})
    # With one server selected the bare name is unique again, and the qualified form still works.
    only_txt = {"MCP_SERVERS": "documents-txt-server"}
    assert not real_gateway.call("list_supported_formats", headers=only_txt)["isError"]
    assert not real_gateway.call("documents-txt-server__list_supported_formats", headers=only_txt)["isError"]


def test_an_ambiguous_bare_name_says_how_to_choose(real_gateway: RunningGateway) -> None:
    reply = real_gateway.rpc(
        "tools/call", {"name": "write_file", "arguments": {"path": "x", "content": "y"}}
    ).json()
    message = reply["error"]["message"]
    assert reply["error"]["code"] == -32602
    assert "filesystem-server__write_file" in message and "terminal-controller__write_file" in message
    assert "MCP_SERVERS" in message
    selected = {"MCP_SERVERS": "filesystem-server"}
    assert not real_gateway.call("write_file", {"path": "x", "content": "y"}, headers=selected)["isError"]


def test_unknown_server_id_lists_valid_ids(real_gateway: RunningGateway) -> None:
    reply = real_gateway.rpc("tools/list", headers={"MCP_SERVERS": "no-such-server"}).json()
    assert reply["error"]["code"] == -32602
    assert "no-such-server" in reply["error"]["message"] and "filesystem-server" in reply["error"]["message"]
    reply = real_gateway.rpc("tools/list", path="/servers/nope/mcp").json()
    assert reply["error"]["code"] == -32602


# -- sessions --------------------------------------------------------------------------------------


def test_sessions_cannot_see_each_others_files(real_gateway: RunningGateway) -> None:
    alice, bob = {"X-Session-Id": "alice"}, {"X-Session-Id": "bob"}
    assert not real_gateway.call(
        "filesystem-server__write_file", {"path": "secret.txt", "content": "alice only"}, headers=alice
    )["isError"]
    assert (
        "alice only"
        in real_gateway.call("read_text_file", {"path": "secret.txt"}, headers=alice)["content"][0]["text"]
    )
    denied = real_gateway.call("read_text_file", {"path": "secret.txt"}, headers=bob)
    assert denied["isError"]
    listing = real_gateway.call("filesystem-server__list_directory", {"path": "."}, headers=bob)["content"][
        0
    ]["text"]
    assert "secret.txt" not in listing
    # Bob cannot reach Alice's workspace by absolute path either.
    alice_dir = next(p for p in real_gateway.workspace_root.iterdir() if (p / "secret.txt").exists())
    escaped = real_gateway.call("read_text_file", {"path": str(alice_dir / "secret.txt")}, headers=bob)
    assert escaped["isError"] and "outside the allowed directories" in escaped["content"][0]["text"]


def test_sessionless_calls_get_a_fresh_workspace_each_time(real_gateway: RunningGateway) -> None:
    assert not real_gateway.call("filesystem-server__write_file", {"path": "tmp.txt", "content": "x"})[
        "isError"
    ]
    assert real_gateway.call("read_text_file", {"path": "tmp.txt"})["isError"]
    assert not any(p.name.startswith("e-") for p in real_gateway.workspace_root.iterdir())


def test_delete_ends_session_and_removes_workspace(real_gateway: RunningGateway) -> None:
    carol = {"X-Session-Id": "carol"}
    real_gateway.call("filesystem-server__write_file", {"path": "c.txt", "content": "c"}, headers=carol)
    before = {p.name for p in real_gateway.workspace_root.iterdir()}
    reply = httpx.delete(real_gateway.url, headers=real_gateway.headers(**carol))
    assert reply.status_code == 200 and reply.json() == {"ended": True}
    after = {p.name for p in real_gateway.workspace_root.iterdir()}
    assert len(before - after) == 1
    assert real_gateway.call("read_text_file", {"path": "c.txt"}, headers=carol)["isError"]


@pytest.mark.anyio
async def test_mcp_session_delete_removes_workspace(real_gateway: RunningGateway) -> None:
    before = {p.name for p in real_gateway.workspace_root.iterdir()}
    async with Client(real_gateway.url, mode="legacy") as client:
        await client.call_tool("filesystem-server__write_file", {"path": "m.txt", "content": "m"})
        during = {p.name for p in real_gateway.workspace_root.iterdir()}
        assert len(during - before) == 1
    time.sleep(0.5)
    assert {p.name for p in real_gateway.workspace_root.iterdir()} == before


def test_dataset_is_readable_and_read_only(real_gateway: RunningGateway) -> None:
    (real_gateway.dataset_dir / "2023").mkdir(exist_ok=True)
    (real_gateway.dataset_dir / "2023" / "q.txt").write_text("dataset text\n")
    read = real_gateway.call("read_text_file", {"path": "/workspace/gaia_dataset/2023/q.txt"})
    assert "dataset text" in read["content"][0]["text"]
    write = real_gateway.call(
        "filesystem-server__write_file", {"path": "/workspace/gaia_dataset/2023/q.txt", "content": "no"}
    )
    assert write["isError"] and "read-only" in write["content"][0]["text"]


# -- malformed input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method", "params": {}}', -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}', -32602),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}',
            -32602,
        ),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "not an object"}', -32602),
        (b"[1, 2, 3]", -32600),
        (b'"just a string"', -32600),
        # Nested past the parser's depth (issue 17: this was HTTP 500).
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
            -32700,
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":'
            b'{"path":"deep","content":' + b"[" * 300 + b"]" * 300 + b"}}}",
            -32700,
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":' + b'{"a":' * 3000 + b"1" + b"}" * 3001,
            -32700,
        ),
    ],
)
def test_malformed_requests_get_jsonrpc_errors(real_gateway: RunningGateway, body: bytes, code: int) -> None:
    reply = httpx.post(real_gateway.url, content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code < 500
    error = reply.json()["error"]
    assert error["code"] == code, error
    assert error["message"]


def test_wrong_argument_type_is_a_result_that_names_the_field(real_gateway: RunningGateway) -> None:
    # Since MCP 2025-11-25 input validation errors are tool results, so the model can correct the call.
    result = real_gateway.call("read_text_file", {"path": 42})
    assert result["isError"] and "'path': 42 is not of type 'string'" in result["content"][0]["text"]


def test_oversized_body_is_refused(real_gateway: RunningGateway) -> None:
    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "big", "content": "x" * (17 * 1024 * 1024)}},
    }
    reply = httpx.post(real_gateway.url, json=big, headers={"Content-Type": "application/json"}, timeout=60)
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == -32600


def test_get_without_session_is_a_client_error(real_gateway: RunningGateway) -> None:
    reply = httpx.get(real_gateway.url, headers={"Accept": "text/event-stream"})
    assert 400 <= reply.status_code < 500


# -- operations ------------------------------------------------------------------------------------


def test_ready_metrics_and_status_page(real_gateway: RunningGateway) -> None:
    ready = httpx.get(real_gateway.base + "/ready")
    assert ready.status_code == 200
    servers = ready.json()["servers"]
    assert set(servers) == ENABLED
    assert servers["filesystem-server"]["tools"] == 14 and servers["filesystem-server"]["state"] == "ready"
    real_gateway.call("list_allowed_directories")
    metrics = httpx.get(real_gateway.base + "/metrics").text
    assert (
        'gaia_env_tool_calls_total{outcome="ok",server="filesystem-server",tool="list_allowed_directories"}'
        in metrics
    )
    assert "gaia_env_tool_call_seconds_bucket" in metrics and "gaia_env_server_restarts" in metrics
    page = httpx.get(real_gateway.base + "/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "filesystem-server" in page.text and "ready" in page.text
    assert httpx.get(real_gateway.base + "/health").json() == {"status": "ok"}


def test_logs_are_structured_with_request_ids(real_gateway: RunningGateway) -> None:
    real_gateway.call("list_allowed_directories", headers={"X-Request-Id": "req-abc-123"})
    time.sleep(0.2)
    lines = [json.loads(line) for line in real_gateway.log().splitlines() if line.startswith("{")]
    call = next(e for e in lines if e.get("request_id") == "req-abc-123")
    assert call["server"] == "filesystem-server" and call["tool"] == "list_allowed_directories"


# -- failures: crash, hang, shutdown ---------------------------------------------------------------


def test_server_killed_mid_call_fails_fast_and_comes_back(probe_gateway: RunningGateway) -> None:
    pid_before = probe_gateway.server_process("probe-a").pid
    results: dict[str, object] = {}

    def slow_call() -> None:
        started = time.monotonic()
        results["reply"] = probe_gateway.call("probe-a__nap", {"seconds": 3.5})
        results["elapsed"] = time.monotonic() - started

    worker = threading.Thread(target=slow_call)
    worker.start()
    time.sleep(0.5)
    os.kill(pid_before, signal.SIGKILL)
    worker.join(10)
    reply = results["reply"]
    assert reply["isError"] and "probe-a" in reply["content"][0]["text"]
    assert results["elapsed"] < 2.0
    # The other server never noticed.
    assert probe_gateway.call("probe-b__echo", {"text": "still here"})["content"][0]["text"] == "still here"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and probe_gateway.status()["servers"]["probe-a"]["state"] != "ready":
        time.sleep(0.2)
    after = probe_gateway.call("probe-a__whoami")
    assert not after["isError"] and probe_gateway.server_process("probe-a").pid != pid_before
    assert probe_gateway.status()["servers"]["probe-a"]["restarts"] >= 1


def _pid_of(gateway: RunningGateway, tool: str = "probe-a__whoami") -> str | None:
    """The replica process's INSTANCE, or None while it is being restarted (a busy answer)."""
    reply = gateway.rpc("tools/call", {"name": tool, "arguments": {}}).json()
    if "error" in reply:
        assert reply["error"]["code"] == BUSY and "retry after" in reply["error"]["message"], reply
        return None
    result = reply["result"]
    return None if result["isError"] else result["content"][0]["text"].split()[-1]


def _wait_for_new_pid(gateway: RunningGateway, old: str, within: float = 30) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        pid = _pid_of(gateway)
        if pid is not None and pid != old:
            return pid
        time.sleep(0.3)
    raise AssertionError(f"probe-a was not restarted within {within} s: {gateway.status()}")


def test_hung_server_times_out_and_is_restarted(probe_gateway: RunningGateway) -> None:
    instance_before = _pid_of(probe_gateway)
    pid_before = probe_gateway.server_process("probe-a").pid
    started = time.monotonic()
    reply = probe_gateway.call("probe-a__freeze", {"seconds": 60})
    assert reply["isError"]
    text = reply["content"][0]["text"]
    assert "freeze" in text and "probe-a" in text and "4 s" in text
    assert time.monotonic() - started < 10
    _wait_for_new_pid(probe_gateway, instance_before)
    assert not psutil.pid_exists(pid_before) or psutil.Process(pid_before).status() == psutil.STATUS_ZOMBIE
    assert "not even a ping" in probe_gateway.status()["servers"]["probe-a"]["last_error"]


def test_a_stopped_server_is_detected_and_restarted(probe_gateway: RunningGateway) -> None:
    instance_before = _pid_of(probe_gateway)
    pid_before = probe_gateway.server_process("probe-a").pid
    restarts = probe_gateway.status()["servers"]["probe-a"]["restarts"]
    os.kill(pid_before, signal.SIGSTOP)  # hung_after_s = 3 in the probe registry
    _wait_for_new_pid(probe_gateway, instance_before)
    assert probe_gateway.status()["servers"]["probe-a"]["restarts"] == restarts + 1
    assert not psutil.pid_exists(pid_before) or psutil.Process(pid_before).status() == psutil.STATUS_ZOMBIE


def test_stateful_session_sticks_to_one_replica(probe_gateway: RunningGateway) -> None:
    pids = set()
    for _ in range(6):
        text = probe_gateway.call("probe-b__whoami", headers={"X-Session-Id": "sticky"})["content"][0]["text"]
        pids.add(text.split()[-1])
    assert len(pids) == 1


def test_crash_loop_marks_server_failed_and_gateway_stays_up(gateway_factory, tmp_path) -> None:
    registry = write_registry(
        tmp_path / "crashy.toml",
        """
        [servers.crashy]
        command = ["{python}", "-c", "import sys; sys.stderr.write('boom: missing thing\\\\n'); sys.exit(7)"]
        [servers.probe-a]
        command = ["{python}", "{probe}"]
    """,
    )
    gateway = gateway_factory("--config", str(registry), wait_ready=False)
    deadline = time.monotonic() + 40
    state = {}
    while time.monotonic() < deadline:
        try:
            state = httpx.get(gateway.base + "/ready").json()
        except httpx.HTTPError:
            time.sleep(0.3)
            continue
        if state["servers"]["crashy"]["state"] == "failed":
            break
        time.sleep(0.3)
    assert state["servers"]["crashy"]["state"] == "failed"
    assert "boom: missing thing" in state["servers"]["crashy"]["last_error"]
    assert httpx.get(gateway.base + "/ready").status_code == 503
    assert gateway.call("probe-a__echo", {"text": "fine"})["content"][0]["text"] == "fine"
    reply = gateway.rpc("tools/call", {"name": "crashy__anything", "arguments": {}}).json()
    assert "crashy" in reply["error"]["message"] and "unavailable" in reply["error"]["message"]


def test_shutdown_leaves_no_process_behind(gateway_factory, tmp_path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    gateway = gateway_factory("--config", str(registry))
    assert not gateway.call("probe-a__spawn_child")["isError"]
    family = gateway.server_pids()
    # The grandchild left the server's process group (its pid in the reply is the one inside the
    # server's PID namespace); the host sees it by its command line.
    assert any(_cmdline(pid) == ["sleep", "300"] for pid in family) and len(family) >= 4
    assert gateway.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    time.sleep(0.5)
    alive = [
        pid
        for pid in family
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert alive == []


def _cmdline(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []


def test_past_capacity_calls_are_refused_fast_with_retry_after(gateway_factory, tmp_path) -> None:
    registry = write_registry(
        tmp_path / "tight.toml",
        """
        [servers.probe-a]
        command = ["{python}", "{probe}"]
        replicas = 1
        max_in_flight = 1
        max_queue_s = 1
        timeout = 20
    """,
    )
    gateway = gateway_factory("--config", str(registry))
    assert not gateway.call("nap", {"seconds": 2})["isError"]  # the gateway now knows a nap costs 2 s
    replies: list[tuple[float, dict]] = []

    def nap() -> None:
        started = time.monotonic()
        reply = gateway.rpc("tools/call", {"name": "nap", "arguments": {"seconds": 2}}).json()
        replies.append((time.monotonic() - started, reply))

    threads = [threading.Thread(target=nap) for _ in range(4)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(30)
    busy = [(took, r["error"]) for took, r in replies if "error" in r]
    served = [r["result"] for _, r in replies if "result" in r]
    assert len(replies) == 4 and len(served) == 2 and len(busy) == 2
    assert all(not result["isError"] for result in served)
    for took, error in busy:
        assert took < 1 and error["code"] == BUSY and error["data"]["server"] == "probe-a"
        assert error["message"].endswith(f"retry after {error['data']['retryAfter']} s.")
    assert gateway.status()["servers"]["probe-a"]["busy_answers"] == 2


# -- security --------------------------------------------------------------------------------------


def test_bearer_token_guards_everything_but_health(gateway_factory, tmp_path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    gateway = gateway_factory("--config", str(registry), token="s3cret")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert httpx.post(gateway.url, json=body).status_code == 401
    assert httpx.post(gateway.url, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(gateway.base + "/metrics").status_code == 401
    assert httpx.get(gateway.base + "/health").status_code == 200
    ok = httpx.post(
        gateway.url, json=body, headers={"Authorization": "Bearer s3cret", "Host": "gpu-node-17:8080"}
    )
    assert ok.status_code == 200 and ok.json()["result"]["tools"]


def test_cluster_host_header_needs_operator_consent(gateway_factory, tmp_path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    strict = gateway_factory("--config", str(registry))
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert httpx.post(strict.url, json=body, headers={"Host": "gpu-node-17:8080"}).status_code == 421
    allowed = gateway_factory("--config", str(registry), "--allowed-hosts", "gpu-node-17")
    assert httpx.post(allowed.url, json=body, headers={"Host": "gpu-node-17:8080"}).status_code == 200


def test_non_loopback_bind_without_token_is_refused(tmp_path) -> None:
    out = subprocess.run(
        ["gaia-env", "serve", "--host", "0.0.0.0", "--port", "1", "--workspace-root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        env={k: v for k, v in os.environ.items() if k != "MCP_AUTH_TOKEN"},
    )
    assert out.returncode == 2
    assert "MCP_AUTH_TOKEN" in out.stderr and "--insecure" in out.stderr


def test_idle_sessions_expire_and_lose_their_workspace(gateway_factory, tmp_path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    gateway = gateway_factory("--config", str(registry), "--session-ttl", "1")
    dave = {"X-Session-Id": "dave"}
    named = gateway.call("probe-a__put", {"name": "d.txt", "text": "d"}, headers=dave)["content"][0]["text"]
    assert named == "d.txt"  # answers name files as the agent does, never by their host path
    path = gateway.workspace_root / f"s-{hashlib.sha256(b'dave').hexdigest()[:32]}" / "d.txt"
    assert os.path.exists(path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(path):
        time.sleep(0.2)
    assert not os.path.exists(path)
    assert gateway.call("probe-a__peek", {"name": "d.txt"}, headers=dave)["isError"]


def test_only_the_replica_a_session_used_is_told_when_it_ends(probe_gateway: RunningGateway) -> None:
    ended_log = probe_gateway.workspace_root / ".ended-sessions.log"
    erin = {"X-Session-Id": "erin"}
    home = probe_gateway.call("probe-b__whoami", headers=erin)["content"][0]["text"].split()[-1]
    assert not probe_gateway.call("probe-a__echo", {"text": "x"}, headers=erin)["isError"]
    assert httpx.delete(probe_gateway.url, headers=erin).json() == {"ended": True}
    waited = probe_gateway.call("probe-b__wait_ended", {"session_id": "erin"}, headers={"X-Session-Id": "w"})
    assert waited["content"][0]["text"] == "told"
    told = [line.split()[0] for line in ended_log.read_text().splitlines() if line.endswith(" erin")]
    assert told == [home]  # not probe-b's other replica, not the stateless probe-a
    assert probe_gateway.call("probe-b__whoami", headers=erin)["content"][0]["text"].startswith("erin ")


def test_a_sessionless_call_tells_only_the_server_it_used(probe_gateway: RunningGateway) -> None:
    ended_log = probe_gateway.workspace_root / ".ended-sessions.log"
    before = ended_log.read_text().splitlines() if ended_log.exists() else []
    for _ in range(3):
        assert not probe_gateway.call("probe-a__echo", {"text": "x"})["isError"]
    ephemeral = probe_gateway.call("probe-b__whoami")["content"][0]["text"].split()[0]
    waited = probe_gateway.call(
        "probe-b__wait_ended", {"session_id": ephemeral}, headers={"X-Session-Id": "w2"}
    )
    assert waited["content"][0]["text"] == "told"
    new = ended_log.read_text().splitlines()[len(before) :]
    assert [line.split()[1] for line in new] == [ephemeral]


# -- one error type on both fronts ----------------------------------------------------------------


BAD_CALLS = [
    ("", {"name": "nope", "arguments": {}}),
    ("", {"name": "echo", "arguments": {"text": "ambiguous: both probes offer it"}}),
    ("?servers=no-such-server", {"name": "probe-a__echo", "arguments": {"text": "x"}}),
    ("", {"name": "probe-a__refuse", "arguments": {"retry_after": 4}}),
]


@pytest.mark.anyio
async def test_both_fronts_answer_bad_requests_with_the_same_error(probe_gateway: RunningGateway) -> None:
    from mcp.shared.exceptions import MCPError

    for query, params in BAD_CALLS:
        bare = probe_gateway.rpc("tools/call", params, path="/mcp" + query).json()["error"]
        async with Client(probe_gateway.url + query, mode="legacy") as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool(params["name"], params["arguments"])
        sdk = raised.value.error.model_dump(exclude_none=True)
        assert sdk == bare, (params, sdk, bare)
    assert bare["code"] == BUSY and bare["data"] == {"retryAfter": 4}


BAD_ARGUMENTS = [{"text": 5}, {}, {"text": "x", "txet": "y"}]


@pytest.mark.anyio
async def test_both_fronts_answer_bad_arguments_with_the_same_error_result(
    probe_gateway: RunningGateway,
) -> None:
    for arguments in BAD_ARGUMENTS:
        bare = probe_gateway.call("probe-a__echo", arguments)
        async with Client(probe_gateway.url, mode="legacy") as client:
            result = await client.call_tool("probe-a__echo", arguments)
        sdk = {
            "content": [block.model_dump(exclude_none=True) for block in result.content],
            "isError": result.is_error,
        }
        assert sdk == bare, (arguments, sdk, bare)


# -- logs ------------------------------------------------------------------------------------------


def test_server_stderr_lands_in_the_gateway_log_as_records(probe_gateway: RunningGateway) -> None:
    headers = {"X-Session-Id": "logger"}
    probe_gateway.call("probe-a__log", {"level": "error", "message": "disk on fire"}, headers=headers)
    probe_gateway.call("probe-a__scribble", {"lines": 4}, headers=headers)
    deadline, records = time.monotonic() + 10, []
    while time.monotonic() < deadline:
        records = [json.loads(line) for line in probe_gateway.log().splitlines() if line.startswith("{")]
        if any("probe box line 3" in r["msg"] for r in records):
            break
        time.sleep(0.1)
    fire = next(r for r in records if r["msg"] == "disk on fire")
    assert fire["level"] == "error" and fire["logger"] == "gaia_env.server"
    assert (fire["server"], fire["tool"], fire["session"]) == ("probe-a", "log", "logger")
    (box,) = [r for r in records if "probe box line" in r["msg"]]
    assert box["msg"].count("probe box line") == 4 and box["server"] == "probe-a"
    assert "replica plan on" in probe_gateway.log()
