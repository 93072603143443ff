"""gaia_kit.core.quota_watch: a command's workspace measured while it runs, without a sandbox."""

from __future__ import annotations

import anyio
import pytest
from gaia_kit.core.quota_watch import CommandWatch

pytestmark = pytest.mark.anyio

MB = 1024 * 1024


async def test_no_watch_without_a_quota(kit_env, workspace_quota):
    workspace_quota(0, 0)
    assert await CommandWatch.begin(kit_env.workspace) is None


async def test_a_command_may_write_only_the_room_left(kit_env, workspace_quota):
    workspace_quota(4, 20)
    (kit_env.workspace / "a.bin").write_bytes(b"x" * MB)
    watch = await CommandWatch.begin(kit_env.workspace)
    assert watch is not None and watch.file_size_room == 3 * MB


async def test_growth_past_the_quota_is_noticed_while_the_command_runs(kit_env, workspace_quota):
    workspace_quota(1, 20)
    watch = await CommandWatch.begin(kit_env.workspace)
    assert watch is not None

    async def write_too_much() -> None:
        await anyio.sleep(0.05)
        (kit_env.workspace / "big.bin").write_bytes(b"x" * (2 * MB))

    async with anyio.create_task_group() as group:
        group.start_soon(write_too_much)
        with anyio.fail_after(10):
            used = await watch.crossed()
    assert used.bytes == 2 * MB
    assert "went past its quota (2.0 MB of 1 MB (GAIA_WORKSPACE_MAX_MB)" in watch.stopped_message(used)


async def test_a_workspace_already_over_may_stay_where_it_was(kit_env, workspace_quota):
    workspace_quota(1, 20)
    (kit_env.workspace / "big.bin").write_bytes(b"x" * (2 * MB))
    watch = await CommandWatch.begin(kit_env.workspace)
    assert watch is not None
    assert not watch.ceiling.over(watch.start)  # the command is stopped only if it grows further
    assert "over its quota" in (await watch.note_after() or "")
    (kit_env.workspace / "big.bin").unlink()
    assert await watch.note_after() is None
