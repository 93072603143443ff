"""Per-session disk quotas: a workspace holds at most GAIA_WORKSPACE_MAX_MB and GAIA_WORKSPACE_MAX_FILES.

Accounting, not a kernel limit: the image runs unprivileged (no CAP_SYS_ADMIN, so no mounts, no
loop devices, no quotactl for project quotas), a gateway on a cluster node runs as a plain user,
and the only size-limited mounts an unprivileged process can make (tmpfs in a user namespace) live
in memory. docs/gateway.md, "Disk quotas", has the whole comparison. The writes that keep to it are
gaia_kit.core.quota's; a sandboxed command is watched by gaia_kit.core.quota_watch.

Usage is the sum of the regular files' sizes (hard links counted once) and the number of entries
(files, directories and links); symlinks are never followed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import get_settings

QUOTA_DIR = ".gaia-quota"
"""Beside the session workspaces under GAIA_WORKSPACE_ROOT: the locks and the staging folder."""
MB = 1024 * 1024
FREE_SPACE_HINT = (
    "Delete files the session no longer needs (for example with a terminal command: rm -r <path>), "
    "then try again."
)


@dataclass(frozen=True)
class Usage:
    bytes: int
    files: int


class QuotaExceeded(ToolFailure):
    """A write or a command would take the workspace past its quota; the message says how much is used."""


@dataclass(frozen=True)
class Quota:
    workspace: Path
    max_bytes: int
    """0: no byte limit."""
    max_files: int
    """0: no limit on entries."""

    @classmethod
    def of(cls, path: Path) -> Quota | None:
        """The quota of the session workspace that holds `path`; None outside the workspaces, or when off."""
        settings = get_settings()
        if settings.workspace_max_mb <= 0 and settings.workspace_max_files <= 0:
            return None
        workspace = session_workspace(path)
        if workspace is None:
            return None
        return cls(workspace, max(0, settings.workspace_max_mb) * MB, max(0, settings.workspace_max_files))

    @property
    def _control(self) -> Path:
        return self.workspace.parent / QUOTA_DIR

    @property
    def staging(self) -> Path:
        return staging_folder(self.workspace)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the workspace's lock: across threads and processes alike (flock is per open file)."""
        folder = self._control / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{self.workspace.name}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def usage(self) -> Usage:
        """What the workspace holds now. Stops counting files a little past the limit."""
        stop = self.max_files * 2 if self.max_files else None
        return measure(self.workspace, stop_after=stop)

    def room(self, used: Usage) -> int | None:
        """Bytes that still fit; None without a byte limit."""
        return max(0, self.max_bytes - used.bytes) if self.max_bytes else None

    def over(self, used: Usage) -> bool:
        return bool(self.max_bytes and used.bytes > self.max_bytes) or bool(
            self.max_files and used.files > self.max_files
        )

    def describe(self, used: Usage) -> str:
        """'3.2 MB of 4096 MB and 12 of 50000 files': the workspace's use against its limits."""
        parts = []
        if self.max_bytes:
            parts.append(f"{size_text(used.bytes)} of {self.max_bytes // MB:,} MB (GAIA_WORKSPACE_MAX_MB)")
        if self.max_files:
            parts.append(f"{used.files:,} of {self.max_files:,} files (GAIA_WORKSPACE_MAX_FILES)")
        return " and ".join(parts)

    def check(self, used: Usage, add_bytes: int, add_files: int, what: str) -> None:
        """Raise QuotaExceeded if adding `add_bytes` and `add_files` to `used` crosses a limit."""
        after = Usage(used.bytes + add_bytes, used.files + add_files)
        grows = add_bytes > 0 or add_files > 0
        if grows and self.over(after):
            raise QuotaExceeded(
                f"{what} would take the session workspace past its quota: it holds {self.describe(used)}, "
                f"and this adds {size_text(max(add_bytes, 0))} and {max(add_files, 0)} file(s). "
                + FREE_SPACE_HINT
            )


def session_workspace(path: Path) -> Path | None:
    """The session workspace under GAIA_WORKSPACE_ROOT that `path` names a place in, by name alone
    (no link on the way is followed: what a link points to is the openat walk's business)."""
    root = Path(os.path.realpath(get_settings().workspace_root))
    absolute = Path(os.path.abspath(path))
    if not absolute.is_relative_to(root):
        absolute = Path(os.path.realpath(path))  # a workspace named through a link to the root
    if absolute == root or not absolute.is_relative_to(root):
        return None
    name = absolute.relative_to(root).parts[0]
    return None if name == QUOTA_DIR else root / name


def staging_folder(workspace: Path) -> Path:
    """Where temporary files for `workspace` are made: beside the workspaces, out of the session's
    reach, on the same disk (so a finished file is renamed in, not copied)."""
    folder = workspace.parent / QUOTA_DIR / "staging"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def size_text(size: int) -> str:
    """1,234 bytes, 12.3 KB, 4.5 MB, 6.7 GB."""
    if size < 10_000:
        return f"{size:,} bytes"
    for unit, scale in (("GB", 2**30), ("MB", 2**20)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size / 2**10:,.1f} KB"


def release(workspace: Path) -> None:
    """Forget a removed workspace's lock file (the gateway calls this when a session ends)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(workspace.parent / QUOTA_DIR / "locks" / f"{workspace.name}.lock")


def prepare_root(root: Path) -> None:
    """Make the locks and staging folders beside the workspaces, the staging one emptied of what
    crashed writers left (the gateway calls this before it starts any server)."""
    shutil.rmtree(root / QUOTA_DIR / "staging", ignore_errors=True)
    for folder in ("locks", "staging"):
        (root / QUOTA_DIR / folder).mkdir(parents=True, exist_ok=True)


def measure(folder: Path, stop_after: int | None = None) -> Usage:
    """Bytes of regular files (hard links once) and entries under `folder`, without following links."""
    total = files = 0
    seen: set[tuple[int, int]] = set()
    pending = [str(folder)]
    while pending and not (stop_after and files > stop_after):
        for entry in _entries(pending.pop()):
            files += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    if info.st_nlink > 1:
                        if (info.st_dev, info.st_ino) in seen:
                            continue
                        seen.add((info.st_dev, info.st_ino))
                    total += info.st_size
            except FileNotFoundError:
                continue  # removed while counting
    return Usage(total, files)


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            return list(found)
    except PermissionError:
        # Sandboxed code runs as the workspace's owner where the server is not root, and may chmod a
        # folder to 000; the owner can always open it again, so nothing escapes the count.
        with contextlib.suppress(OSError):
            os.chmod(folder, os.stat(folder, follow_symlinks=False).st_mode | 0o700)
            with os.scandir(folder) as found:
                return list(found)
    except (FileNotFoundError, NotADirectoryError):
        pass
    return []
