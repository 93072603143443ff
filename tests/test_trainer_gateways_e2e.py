"""The trainer's episodes across two real gateways (`gaia-env serve`), one killed mid-run.

MCP_SERVER_URL names both. Each episode is pinned to one gateway by its session id: it writes a note,
naps (the kill lands here), reads the note back and answers with it. The episodes on the surviving
gateway answer with their own note (their workspace stayed theirs); the ones on the killed gateway end
as environment faults, never as an agent's wrong or missing answer. An episode that starts after the
kill and hashes to the dead gateway is opened on the live one.
"""

from __future__ import annotations

import os
import signal
import uuid
from typing import Any

import anyio
import psutil
import pytest
from gaia_kit_testing.gateway import launch
from gaia_kit_testing.probe import write_registry
from gaia_train.episode.gateways import Gateway, ranked
from gaia_train.episode.loop import EpisodeLimits, Generation, Stop, run_episode
from gaia_train.episode.session import McpSettings, McpToolSession
from gaia_train.episode.toolcalls import ToolCall

pytestmark = pytest.mark.anyio

REGISTRY = """
[servers.probe]
command = ["{python}", "{probe}"]
stateful = true
"""
EPISODES = 12


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class NotePolicy:
    """put(note) -> nap -> peek(note) -> <answer>what it read</answer>."""

    def __init__(self, note: str, napping: anyio.Event | None = None):
        self.note = note
        self.napping = napping

    async def start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        pass

    async def generate(self, messages: list[dict[str, Any]]) -> Generation:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        steps = [
            ToolCall("c1", "put", {"name": "note.txt", "text": self.note}),
            ToolCall("c2", "nap", {"seconds": 3}),
            ToolCall("c3", "peek", {"name": "note.txt"}),
        ]
        if len(results) < len(steps):
            if len(results) == 1 and self.napping is not None:
                self.napping.set()
            return Generation(text="", tool_calls=[steps[len(results)]])
        return Generation(text=f"<answer>{results[-1]}</answer>")

    async def observe(self, tool_messages: list[dict[str, Any]]) -> bool:
        return True

    def budget_left(self) -> bool:
        return True


def kill_tree(pid: int) -> None:
    """SIGKILL the gateway and its servers: a crash, not a shutdown."""
    processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    for process in processes:
        try:
            os.kill(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def test_episodes_survive_a_killed_gateway_as_results_or_marked_faults(tmp_path) -> None:
    gateways = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        gateways.append(launch(folder, "--config", str(write_registry(folder / "servers.toml", REGISTRY))))
    alive, doomed = gateways
    try:
        settings = McpSettings(url=f"{alive.url},{doomed.url}", call_timeout_s=20, open_backoff_s=0.2)
        sessions = [f"gaia-train-{uuid.uuid4().hex}" for _ in range(EPISODES)]
        pinned = {sid: ranked([Gateway(alive.url), Gateway(doomed.url)], sid)[0].url for sid in sessions}
        assert set(pinned.values()) == {alive.url, doomed.url}, "both gateways should get episodes"
        napping = [anyio.Event() for _ in sessions]
        results: dict[str, Any] = {}

        async def episode(index: int, sid: str) -> None:
            policy = NotePolicy(f"note-{index}", napping[index])
            results[sid] = await run_episode(
                [{"role": "user", "content": "Keep a note."}],
                policy,
                lambda: McpToolSession(settings, sid),
                EpisodeLimits(max_turns=8),
            )

        async with anyio.create_task_group() as group:
            for index, sid in enumerate(sessions):
                group.start_soon(episode, index, sid)
            with anyio.fail_after(60):
                for event in napping:
                    await event.wait()
            kill_tree(doomed.proc.pid)

        for index, sid in enumerate(sessions):
            result = results[sid]
            if pinned[sid] == alive.url:
                assert (result.stop, result.answer) == (Stop.ANSWER, f"note-{index}"), result.error
            else:
                assert result.stop is Stop.ENVIRONMENT_FAULT and result.answer is None, result.stop
                assert "gateway" in result.error

        # after the kill: an episode whose first choice is the dead gateway is opened on the live one
        sid = next(
            s
            for s in (f"gaia-train-{uuid.uuid4().hex}" for _ in range(100))
            if ranked([Gateway(alive.url), Gateway(doomed.url)], s)[0].url == doomed.url
        )
        result = await run_episode(
            [{"role": "user", "content": "Keep a note."}],
            NotePolicy("late"),
            lambda: McpToolSession(settings, sid),
            EpisodeLimits(max_turns=8),
        )
        assert (result.stop, result.answer) == (Stop.ANSWER, "late"), result.error
    finally:
        for gateway in gateways:
            gateway.stop()
