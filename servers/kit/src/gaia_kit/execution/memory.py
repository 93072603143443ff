"""The memory of one whole sandbox: every process it runs, plus its RAM-backed /tmp and /var/tmp.

RLIMIT_AS bounds each process alone: three processes of 1.2 GB under a 2 GB limit took 3.6 GB, and
files written to the sandbox's tmpfs mounts are memory too. A memory cgroup would be exact, but a
server rarely may create one (a container's cgroup is read-only, this kind of host offers only
cgroup v1, and the servers do not run as root everywhere), so `MemoryWatch` measures instead: every
POLL_S it adds the private resident memory (RssAnon + RssShmem) of each process in the sandbox's tree
and the bytes used on its tmpfs mounts, and reports when the sum passes the limit; the sandbox is
then killed. What a burst allocates between two looks can pass the limit for at most that long,
each process still bounded by its own RLIMIT_AS.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

POLL_S = 0.1
RAM_MOUNTS = ("/tmp", "/var/tmp", "/dev/shm")
"""The sandbox's tmpfs mounts: what is written there is held in memory."""


def tree(root: int) -> list[int]:
    """`root` and every process below it (orphans inside the sandbox's PID namespace stay below)."""
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as handle:
                    stack.extend(int(child) for child in handle.read().split())
    return found


def private_resident(pid: int) -> int:
    """Bytes the process holds in memory of its own (shared libraries and files not counted)."""
    total = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(("RssAnon:", "RssShmem:")):
                total += int(line.split()[1]) * 1024
    return total


def ram_mounts_used(pid: int) -> int:
    """Bytes used on the tmpfs mounts the process sees, if it lives in a mount namespace of its own."""
    root = Path(f"/proc/{pid}/root")
    total, seen = 0, set()
    for mount in RAM_MOUNTS:
        inside = root / mount.lstrip("/")
        with contextlib.suppress(OSError):
            device = os.stat(inside).st_dev
            if device in seen or device == os.stat(mount).st_dev:
                continue  # the same mount twice, or the host's own (the sandbox not set up yet)
            seen.add(device)
            usage = os.statvfs(inside)
            total += (usage.f_blocks - usage.f_bfree) * usage.f_frsize
    return total


def sandbox_memory(root: int) -> int:
    """Bytes the sandbox started as `root` holds: its processes' private memory and its tmpfs files."""
    pids = tree(root)
    used = sum(private_resident(pid) for pid in pids)
    inner = [pid for pid in pids if pid != root]
    return used + (ram_mounts_used(inner[0]) if inner else 0)


class MemoryWatch:
    """Watches one sandbox against a limit in bytes."""

    def __init__(self, root: int, limit_bytes: int):
        self.root = root
        self.limit = limit_bytes
        self.peak = 0

    async def crossed(self) -> int:
        """Returns the bytes in use once they pass the limit (never returns otherwise)."""
        while True:
            used = sandbox_memory(self.root)
            self.peak = max(self.peak, used)
            if used > self.limit:
                return used
            await asyncio.sleep(POLL_S)

    def stopped_message(self, used: int) -> str:
        return (
            f"stopped: the sandbox's processes and its /tmp, /var/tmp and /dev/shm files together held "
            f"{used / 2**20:,.0f} MB, over the {self.limit / 2**20:,.0f} MB limit for the whole sandbox "
            "(GAIA_SANDBOX_TOTAL_MEMORY_MB), and every process was killed; use less memory, fewer "
            "processes at once, or write large files into the workspace instead of /tmp"
        )
