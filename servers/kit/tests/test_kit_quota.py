"""Per-session disk quotas: every kind of write stops at the quota, says how much is used, and the
session goes on once it frees space; a sandboxed command that crosses it is stopped mid-write."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from gaia_kit import ToolFailure, atomic_write
from gaia_kit.core.quota import copy_into, place, staged
from gaia_kit.core.quota_accounting import QUOTA_DIR, Quota, measure
from gaia_kit.core.settings import forget_settings
from gaia_kit.execution.sandbox import Limits, run_sandboxed

MB = 1024 * 1024
QUICK = Limits(wall_s=20, cpu_s=15, memory_mb=1024, processes=64)


@pytest.fixture
def quota(kit_env, monkeypatch):
    """The s1 workspace with a 4 MB, 20-file quota."""
    monkeypatch.setenv("GAIA_WORKSPACE_MAX_MB", "4")
    monkeypatch.setenv("GAIA_WORKSPACE_MAX_FILES", "20")
    forget_settings()
    yield Quota.of(kit_env.workspace)
    forget_settings()


def test_the_quota_belongs_to_the_workspace_that_holds_the_path(quota, kit_env, tmp_path):
    assert Quota.of(kit_env.workspace / "a" / "b.txt") == quota
    assert quota.max_bytes == 4 * MB and quota.max_files == 20
    assert Quota.of(kit_env.root) is None and Quota.of(tmp_path / "elsewhere") is None
    assert Quota.of(kit_env.root / QUOTA_DIR / "staging" / "x") is None


def test_usage_counts_sizes_and_entries_without_following_links(quota, kit_env, tmp_path):
    ws = kit_env.workspace
    (ws / "sub").mkdir()
    (ws / "sub" / "a").write_bytes(b"x" * 1000)
    os.link(ws / "sub" / "a", ws / "b")  # the same bytes under two names
    outside = tmp_path / "big"
    outside.write_bytes(b"y" * 5000)
    (ws / "link").symlink_to(outside)
    assert measure(ws).bytes == 1000 and measure(ws).files == 4


def test_a_write_past_the_quota_is_refused_and_goes_through_once_space_is_freed(quota, kit_env):
    ws = kit_env.workspace
    atomic_write(ws / "first.bin", b"a" * (3 * MB))
    with pytest.raises(ToolFailure) as refused:
        atomic_write(ws / "second.bin", b"b" * (2 * MB))
    message = str(refused.value)
    assert "3.0 MB of 4 MB (GAIA_WORKSPACE_MAX_MB)" in message and "rm" in message
    assert not (ws / "second.bin").exists()
    assert not list((kit_env.root / QUOTA_DIR / "staging").iterdir())  # nothing half-written is left
    atomic_write(ws / "first.bin", b"a" * (2 * MB))  # replacing a file only counts the difference
    atomic_write(ws / "second.bin", b"b" * (2 * MB))
    (ws / "first.bin").unlink()
    atomic_write(ws / "third.bin", b"c" * MB)
    assert measure(ws).bytes == 3 * MB


def test_the_file_count_is_a_limit_too(quota, kit_env):
    for number in range(19):
        atomic_write(kit_env.workspace / f"f{number}", b"")
    with pytest.raises(ToolFailure, match=r"19 of 20 files .*GAIA_WORKSPACE_MAX_FILES"):
        atomic_write(kit_env.workspace / "deeper" / "f", b"")  # a new folder and a file: two entries
    atomic_write(kit_env.workspace / "f19", b"")


def test_concurrent_writers_never_overshoot(quota, kit_env):
    """Sixteen threads race to write 1 MB each: exactly four fit, whoever wins."""
    errors: list[Exception] = []

    def write(number: int) -> None:
        try:
            atomic_write(kit_env.workspace / f"part{number}", b"z" * MB)
        except ToolFailure as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 12 and measure(kit_env.workspace).bytes == 4 * MB


def test_staged_writes_and_copies_are_placed_within_the_quota(quota, kit_env, tmp_path):
    ws = kit_env.workspace
    with staged(ws / "out.bin") as temporary:
        assert not temporary.is_relative_to(ws)
        temporary.write_bytes(b"q" * (5 * MB))
        with pytest.raises(ToolFailure, match="Saving out.bin"):
            place(temporary, ws / "out.bin")
    source = tmp_path / "source.bin"
    source.write_bytes(b"s" * (5 * MB))
    with pytest.raises(ToolFailure, match="quota"):
        copy_into(source, ws / "copy.bin")
    source.write_bytes(b"s" * MB)
    copy_into(source, ws / "copy.bin")
    assert (ws / "copy.bin").stat().st_size == MB and not (ws / "out.bin").exists()
    with staged(ws / "copy.bin") as temporary, pytest.raises(FileExistsError):
        temporary.write_bytes(b"new")
        place(temporary, ws / "copy.bin", replace=False)


def test_no_quota_when_both_limits_are_zero(kit_env, monkeypatch):
    monkeypatch.setenv("GAIA_WORKSPACE_MAX_MB", "0")
    monkeypatch.setenv("GAIA_WORKSPACE_MAX_FILES", "0")
    forget_settings()
    assert Quota.of(kit_env.workspace) is None
    atomic_write(kit_env.workspace / "free.bin", b"f" * MB)
    forget_settings()


@pytest.mark.anyio
async def test_a_command_is_stopped_mid_write_and_the_session_goes_on(quota, kit_env):
    ws = kit_env.workspace
    writer = "i=0; while true; do head -c 262144 /dev/zero > chunk$i; i=$((i+1)); done"
    result = await run_sandboxed(["bash", "-c", writer], workspace=ws, limits=QUICK)
    assert result.quota_stop and not result.timed_out, result.describe()
    assert "went past its quota" in result.describe() and "rm -r" in result.describe()
    assert result.duration_s < 10
    used = measure(ws)
    # Stopped within one measurement of crossing: a few chunks past the limit at most.
    assert used.files > 20 or used.bytes > 4 * MB
    assert used.files <= 60 and used.bytes <= 12 * MB, used
    with pytest.raises(ToolFailure, match="past its quota"):
        atomic_write(ws / "more.txt", "no room")
    # Over quota, a command may still delete; then the session writes again.
    cleanup = await run_sandboxed(["bash", "-c", "rm -f chunk*; echo freed"], workspace=ws, limits=QUICK)
    assert cleanup.stdout == "freed\n" and cleanup.quota_stop is None, cleanup.describe()
    atomic_write(ws / "more.txt", "room again")
    again = await run_sandboxed(
        ["bash", "-c", "head -c 1000 /dev/zero > small; ls"], workspace=ws, limits=QUICK
    )
    assert again.exit_code == 0 and "small" in again.stdout, again.describe()


@pytest.mark.anyio
async def test_one_file_cannot_outgrow_the_room_left(quota, kit_env):
    atomic_write(kit_env.workspace / "held.bin", b"h" * (3 * MB))
    result = await run_sandboxed(
        ["bash", "-c", "head -c 3000000 /dev/zero > big.bin"], workspace=kit_env.workspace, limits=QUICK
    )
    assert result.exit_code != 0 and (kit_env.workspace / "big.bin").stat().st_size <= MB
    assert "left in the session workspace's quota" in result.describe(), result.describe()


@pytest.mark.anyio
async def test_a_command_that_leaves_the_workspace_over_quota_says_so(quota, kit_env):
    result = await run_sandboxed(
        ["bash", "-c", "touch $(seq -f 'f%g' 1 40)"], workspace=kit_env.workspace, limits=QUICK
    )
    assert "files (GAIA_WORKSPACE_MAX_FILES)" in result.describe(), result.describe()


def test_other_workspaces_keep_writing_while_one_is_over(quota, kit_env):
    full, other = kit_env.workspace, kit_env.root / "s2"
    other.mkdir()
    atomic_write(full / "all.bin", b"a" * (4 * MB))
    with pytest.raises(ToolFailure):
        atomic_write(full / "one-more", b"x")
    atomic_write(other / "fine.bin", b"b" * (3 * MB))
    assert Path(other / "fine.bin").stat().st_size == 3 * MB
