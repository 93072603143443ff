"""The call a tool runs in: annotations, structured results, progress, cancellation, and the replay rule."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import psutil
import pytest
from gaia_kit import KitServer
from gaia_kit.core.calls import Call, current_call, enter, leave, replay_allowed
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from gaia_kit.core.settings import forget_settings
from gaia_kit.execution.process import run_in_group
from gaia_kit.web.http import forget_shared_http, shared_http
from gaia_kit_testing import failed, ok
from mcp import Client
from mcp_types import CallToolResult
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Count(BaseModel):
    n: int
    words: list[str]


def make_server(pid_file: Path, base_url: str = "") -> KitServer:
    server = KitServer("calls-test")

    @server.tool(annotations=hints("Count words", read_only=True, open_world=False), output=Count)
    def count(text: str) -> CallToolResult:
        words = text.split()
        return with_data(f"{len(words)} words", Count(n=len(words), words=words))

    @server.tool(annotations=hints("Steps", read_only=True, open_world=False))
    def steps(n: int) -> str:
        for done in range(n):
            current_call().progress(done + 1, n, f"step {done + 1}")
        return "done"

    @server.tool(annotations=hints("Sleep in a child", read_only=True, open_world=False))
    def child_sleep() -> str:
        def note_pid() -> None:
            sleeping = [
                p.pid for p in psutil.Process().children(recursive=True) if p.cmdline() == ["sleep", "60"]
            ]
            if sleeping and not pid_file.exists():
                pid_file.write_text(" ".join(map(str, sleeping)))

        run_in_group(["sleep", "60"], timeout=120, tick=note_pid)
        return "woke up"

    @server.tool(annotations=hints("Busy loop", read_only=True, open_world=False))
    def busy() -> str:
        call = current_call()
        pid_file.write_text("started")
        for _ in range(600):
            call.check()
            time.sleep(0.05)
        pid_file.write_text("finished")
        return "finished"

    @server.tool(
        annotations=hints("Post", read_only=False, destructive=False, idempotent=False, open_world=True)
    )
    async def fetch_changing(url: str) -> str:
        return (await shared_http().get(url)).text()

    @server.tool(annotations=hints("Fetch", read_only=True, open_world=True))
    async def fetch_reading(url: str) -> str:
        return (await shared_http().get(url)).text()

    return server


def test_hints_say_all_five_and_refuse_contradictions() -> None:
    reading = hints("Read", read_only=True, open_world=False)
    assert reading.model_dump(by_alias=True) == {
        "title": "Read", "readOnlyHint": True, "destructiveHint": False,
        "idempotentHint": True, "openWorldHint": False,
    }  # fmt: skip
    with pytest.raises(ValueError, match="destructive= and idempotent="):
        hints("Write", read_only=False, open_world=False)
    with pytest.raises(ValueError, match="read-only"):
        hints("Read", read_only=True, destructive=True, open_world=False)


async def test_tools_list_their_annotations_title_and_output_schema(tmp_path: Path) -> None:
    async with Client(make_server(tmp_path / "pid")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["count"].title == "Count words"
    assert tools["count"].annotations.read_only_hint is True
    assert tools["count"].output_schema["properties"]["words"]["type"] == "array"
    assert tools["steps"].output_schema is None


async def test_a_structured_result_keeps_its_text_and_carries_the_data(tmp_path: Path) -> None:
    async with Client(make_server(tmp_path / "pid")) as client:
        result = await client.call_tool("count", {"text": "three short words"})
    assert ok(result) == "3 words"
    assert result.structured_content == {"n": 3, "words": ["three", "short", "words"]}


async def test_progress_reaches_a_client_that_asked_in_order(tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(make_server(tmp_path / "pid")) as client:
        result = await client.call_tool("steps", {"n": 5}, progress_callback=on_progress)
        assert ok(result) == "done"
        assert ok(await client.call_tool("steps", {"n": 3})) == "done"  # no token, no notifications
    assert seen == [(float(i), 5.0, f"step {i}") for i in range(1, 6)]


async def _cancel_after(client: Client, tool: str, ready) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(client.call_tool, tool, {})
        with anyio.fail_after(20):
            while not ready():
                await anyio.sleep(0.05)
        group.cancel_scope.cancel()


async def test_a_cancelled_call_kills_its_subprocess(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    async with Client(make_server(pid_file)) as client:
        await _cancel_after(client, "child_sleep", pid_file.exists)
        pids = [int(p) for p in pid_file.read_text().split()]
        assert pids
        with anyio.fail_after(10):
            while any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids):
                await anyio.sleep(0.05)
        assert ok(await client.call_tool("steps", {"n": 1})) == "done"  # the server goes on serving


async def test_a_cancelled_call_stops_its_worker_thread(tmp_path: Path) -> None:
    marker = tmp_path / "state"
    async with Client(make_server(marker)) as client:
        started = time.monotonic()
        await _cancel_after(client, "busy", marker.exists)
        assert time.monotonic() - started < 10
        await anyio.sleep(0.5)
    assert marker.read_text() == "started"  # the loop saw the cancellation and never finished


def test_replay_follows_the_calling_tools_hints() -> None:
    assert replay_allowed("GET") and not replay_allowed("POST")  # outside a call: the method decides
    cases = [
        (hints("Read", read_only=True, open_world=True), (True, True)),
        (
            hints("Download", read_only=False, destructive=False, idempotent=True, open_world=True),
            (True, False),
        ),
        (hints("Act", read_only=False, destructive=True, idempotent=False, open_world=True), (False, False)),
        (None, (False, False)),
    ]
    for tool_hints, (get, post) in cases:
        token = enter(Call("tool", tool_hints))
        try:
            assert (replay_allowed("GET"), replay_allowed("POST")) == (get, post), tool_hints
        finally:
            leave(token)


async def test_a_non_idempotent_tool_is_never_recorded_nor_replayed(
    fake_web, kit_env, monkeypatch, tmp_path: Path
) -> None:
    url = fake_web.url("/blob.bin")
    async with Client(make_server(tmp_path / "pid")) as client:
        ok(await client.call_tool("fetch_changing", {"url": url}))
        ok(await client.call_tool("fetch_changing", {"url": url}))
        assert len(fake_web.requests) == 2  # not recorded: both reached the site
        ok(await client.call_tool("fetch_reading", {"url": url}))
        ok(await client.call_tool("fetch_reading", {"url": url}))
        assert len(fake_web.requests) == 3  # recorded once, then answered from the cache
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    forget_shared_http()
    async with Client(make_server(tmp_path / "pid")) as client:
        ok(await client.call_tool("fetch_reading", {"url": url}))
        refused = failed(await client.call_tool("fetch_changing", {"url": url}))
    assert "fetch_changing is not marked idempotent" in refused and "GAIA_HTTP_CACHE_MODE" in refused
    assert len(fake_web.requests) == 3


def test_run_in_group_outside_a_call_still_honours_its_deadline() -> None:
    import subprocess

    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_in_group(["sleep", "30"], timeout=0.5)
    assert time.monotonic() - started < 5


def test_run_in_group_feeds_large_input_to_a_slow_reader() -> None:
    # The child reads only after several polls: its whole input must still arrive.
    done = run_in_group(["bash", "-c", "sleep 0.7; wc -c"], timeout=20, input=b"x" * 3_000_000)
    assert done.returncode == 0 and done.stdout.strip() == b"3000000"
