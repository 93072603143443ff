"""A sandboxed command watched against its workspace's disk quota, and stopped once it crosses it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from gaia_kit.core.quota_accounting import Quota, Usage, measure

TICK_S = 0.01
SCAN_EVERY_S = (0.25, 1.0)


def _disk_use(path: Path) -> tuple[int, int]:
    """Used bytes and inodes of the whole file system holding `path` (cheap: one statvfs)."""
    info = os.statvfs(path)
    return (info.f_blocks - info.f_bfree) * info.f_frsize, info.f_files - info.f_ffree


class CommandWatch:
    """Measures a workspace while a command runs in it; `crossed()` returns once it is over quota.

    A workspace already over its quota when the command starts may not grow past where it was, so
    a command that only deletes (rm) still runs. Counting the workspace costs time in proportion to
    its files, so it is not done on every tick: every TICK_S the disk's own counters (statvfs: used
    blocks and inodes of the whole file system) are read, and the workspace is counted as soon as
    the disk has grown by the room the session had left, and in any case every four scan durations
    (between SCAN_EVERY_S seconds), which also covers growth the disk's counters hide (another
    session deleting as much as this one writes, sparse files).
    """

    def __init__(self, quota: Quota, start: Usage):
        self.quota = quota
        self.start = start
        self.ceiling = Quota(
            quota.workspace,
            max(quota.max_bytes, start.bytes) if quota.max_bytes else 0,
            max(quota.max_files, start.files) if quota.max_files else 0,
        )

    @classmethod
    async def begin(cls, workspace: Path) -> CommandWatch | None:
        quota = Quota.of(workspace)
        if quota is None:
            return None
        return cls(quota, await asyncio.to_thread(quota.usage))

    @property
    def file_size_room(self) -> int | None:
        """RLIMIT_FSIZE for the command: no single file may outgrow what is left."""
        return self.quota.room(self.start)

    async def crossed(self) -> Usage:
        used, scanned_at, pause = self.start, time.monotonic(), SCAN_EVERY_S[0]
        disk = _disk_use(self.quota.workspace)
        while True:
            await asyncio.sleep(TICK_S)
            now_disk = _disk_use(self.quota.workspace)
            grown_bytes, grown_files = now_disk[0] - disk[0], now_disk[1] - disk[1]
            near = (self.ceiling.max_bytes and grown_bytes >= self.ceiling.max_bytes - used.bytes) or (
                self.ceiling.max_files and grown_files >= self.ceiling.max_files - used.files
            )
            if not near and time.monotonic() - scanned_at < pause:
                continue
            began = time.monotonic()
            used = await asyncio.to_thread(measure, self.quota.workspace, self.ceiling.max_files or None)
            if self.ceiling.over(used):
                return used
            scanned_at, disk = time.monotonic(), now_disk
            pause = min(SCAN_EVERY_S[1], max(SCAN_EVERY_S[0], 4 * (scanned_at - began)))

    def stopped_message(self, used: Usage) -> str:
        return (
            f"stopped: the session workspace went past its quota ({self.quota.describe(used)}) and every "
            "process was killed; delete files the session no longer needs (rm -r <path>), then run again"
        )

    async def note_after(self) -> str | None:
        """A line for the result when the workspace is over its quota once the command has ended."""
        used = await asyncio.to_thread(self.quota.usage)
        if not self.quota.over(used):
            return None
        return (
            f"The session workspace is over its quota: {self.quota.describe(used)}. Writes are refused "
            "until files are deleted (rm -r <path>)."
        )
