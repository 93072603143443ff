"""Per-session disk quotas: a workspace holds at most GAIA_WORKSPACE_MAX_MB and GAIA_WORKSPACE_MAX_FILES.

Accounting, not a kernel limit: the image runs unprivileged (no CAP_SYS_ADMIN, so no mounts, no
loop devices, no quotactl for project quotas), a gateway on a cluster node runs as a plain user,
and the only size-limited mounts an unprivileged process can make (tmpfs in a user namespace) live
in memory. docs/gateway.md, "Disk quotas", has the whole comparison.

What makes the accounting hold:
- Every write the servers make themselves is prepared outside the workspace (in the staging folder
  beside the workspaces, on the same disk) and enters it with `place`, under the workspace's lock,
  only if the result fits. The lock is an flock on a file outside the workspace, so every server
  process and thread of a session take turns, and sandboxed code can neither see nor hold it.
- A sandboxed command starts with its file-size limit (RLIMIT_FSIZE) lowered to the room left, and
  `CommandWatch` measures the workspace while it runs: one that crosses the quota is stopped.

Every write into a session workspace (`place`, `make_dirs`) goes through directories opened beneath
the workspace (gaia_kit.core.openat): a link that sandboxed code swaps into the target's folders
cannot lead the write out of the workspace, into another session's or the dataset.

Usage is the sum of the regular files' sizes (hard links counted once) and the number of entries
(files, directories and links); symlinks are never followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.openat import make_dirs_beneath, parent_beneath
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


def _disk_use(path: Path) -> tuple[int, int]:
    """Used bytes and inodes of the whole file system holding `path` (cheap: one statvfs)."""
    info = os.statvfs(path)
    return (info.f_blocks - info.f_bfree) * info.f_frsize, info.f_files - info.f_ffree


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


# --- writes the servers make ------------------------------------------------------------------------


def room_for(target: Path) -> int | None:
    """Bytes a new file at `target` may hold now; None without a byte quota (a cap for streamed writes)."""
    quota = Quota.of(target)
    return quota.room(quota.usage()) if quota is not None else None


def ensure_room(target: Path, size: int) -> None:
    """Refuse early a file of `size` bytes that cannot fit; `place` still decides under the lock."""
    quota = Quota.of(target)
    if quota is not None:
        used = quota.usage()
        quota.check(
            used,
            size - _size(None, str(target)),
            0 if os.path.lexists(target) else 1,
            f"Writing {target.name}",
        )


def _staging_for(near: Path) -> Path:
    """Where temporary files for `near` go: the staging folder for a session workspace, else beside it."""
    workspace = session_workspace(near)
    if workspace is not None:
        return staging_folder(workspace)
    folder = near if near.is_dir() else near.parent
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def staged(target: Path, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path to write `target`'s new content to; `place` it when complete.

    In a session workspace it lies in the staging folder, outside the workspace, so a half-written
    or oversized file never counts as the session's; elsewhere it lies beside `target`. It is
    removed on the way out if it was not placed. `suffix` is for tools that pick a format by name.
    """
    fd, name = tempfile.mkstemp(dir=_staging_for(target), prefix=f".{target.name[:100]}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


@contextlib.contextmanager
def scratch(near: Path, prefix: str = ".scratch-") -> Iterator[Path]:
    """A temporary folder for work files (downloads to read, frames, conversions) that are not results.

    For a session workspace it lies outside the workspace, so the work files never count against
    the session's quota; it is removed on the way out.
    """
    with tempfile.TemporaryDirectory(prefix=prefix, dir=_staging_for(near)) as folder:
        yield Path(folder)


def make_dirs(path: Path) -> None:
    """mkdir -p within the session's file quota (each new folder is an entry), beneath the workspace."""
    quota = Quota.of(path)
    if quota is None:
        _make_dirs_confined(path)
        return
    with quota.locked():
        missing, folder = 0, path
        while not os.path.lexists(folder):
            missing, folder = missing + 1, folder.parent
        quota.check(quota.usage(), 0, missing, f"Creating {path.name}")
        _make_dirs_confined(path)


def _make_dirs_confined(path: Path) -> None:
    workspace = session_workspace(path)
    if workspace is None:
        path.mkdir(parents=True, exist_ok=True)
        return
    try:
        os.close(make_dirs_beneath(workspace, _below(path, workspace)))
    except OSError as exc:
        raise _way_out(path.name, exc) from None


def _below(path: Path, workspace: Path) -> str:
    absolute = Path(os.path.abspath(path))
    if not absolute.is_relative_to(workspace):
        absolute = Path(os.path.realpath(absolute.parent)) / absolute.name
    return absolute.relative_to(workspace).as_posix()


def place(temporary: Path, target: Path, *, replace: bool = True) -> None:
    """Move a complete `temporary` file to `target`, if the session's quota allows it.

    The mode of a replaced file is kept (a new one gets 0644). Without `replace`, an existing target
    raises FileExistsError, even one that appeared a moment ago. Missing parent folders are made.
    """
    quota = Quota.of(target)
    if quota is None:
        with _target_folder(target) as (folder, name):
            _move(temporary, folder, name, replace)
        return
    with quota.locked():
        used = quota.usage()
        missing = 0
        folder = target.parent
        while not os.path.lexists(folder):
            missing, folder = missing + 1, folder.parent
        # Counted by name (a link on the way only skews the count); the move itself is confined.
        existing = os.path.lexists(target)
        grows = temporary.stat().st_size - (_size(None, str(target)) if replace else 0)
        quota.check(used, grows, missing + (0 if existing else 1), f"Saving {target.name}")
        with _target_folder(target) as (folder_fd, name):
            _move(temporary, folder_fd, name, replace)


@contextlib.contextmanager
def _target_folder(target: Path) -> Iterator[tuple[int | None, str]]:
    """The folder `target` goes in, made if missing and open beneath its session workspace, and the
    name in it. Outside the session workspaces (a server's own files): the folder by path, None."""
    workspace = session_workspace(target)
    if workspace is None:
        target.parent.mkdir(parents=True, exist_ok=True)
        yield None, str(target)
        return
    try:
        with parent_beneath(workspace, _below(target, workspace)) as found:
            yield found
    except OSError as exc:
        raise _way_out(target.name, exc) from None


def _way_out(name: str, exc: OSError) -> OSError | ToolFailure:
    """A sentence for a folder on the way that leads out of the workspace; other errors as they are."""
    if exc.errno in (errno.EXDEV, errno.ELOOP, errno.ENOTDIR):
        return ToolFailure(
            f"{name} cannot be saved: a folder on its way is a link out of the session workspace, or a "
            "file; save it elsewhere in the workspace."
        )
    return exc


def _entry(folder: int | None, name: str) -> os.stat_result | None:
    """The entry itself (a link is not followed), or None."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _move(temporary: Path, folder: int | None, name: str, replace: bool) -> None:
    """Rename `temporary` to `name` in `folder`: a link already there is replaced, never followed."""
    info = _entry(folder, name)
    os.chmod(temporary, info.st_mode & 0o7777 if info is not None and stat.S_ISREG(info.st_mode) else 0o644)
    if not replace:
        try:
            os.link(temporary, name, dst_dir_fd=folder)  # unlike a rename, fails if the name is taken
            os.unlink(temporary)
            return
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: check, then rename
            if _entry(folder, name) is not None:
                raise FileExistsError(errno.EEXIST, "File exists", name) from None
    try:
        os.replace(temporary, name, dst_dir_fd=folder)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        with open(temporary, "rb") as source, open(os.open(name, flags, 0o644, dir_fd=folder), "wb") as copy:
            shutil.copyfileobj(source, copy)
        os.unlink(temporary)


def _size(folder: int | None, name: str) -> int:
    """The bytes replacing `name` frees: a regular file's size, unless other hard links keep it."""
    info = _entry(folder, name)
    return info.st_size if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink == 1 else 0


def copy_into(source: Path | BinaryIO, target: Path) -> None:
    """Copy a file (a path the server owns, or a file opened through the path guard) into a
    workspace within its quota (refused before copying when it cannot fit)."""
    if isinstance(source, Path):
        with open(source, "rb") as handle:
            copy_into(handle, target)
        return
    ensure_room(target, os.fstat(source.fileno()).st_size)
    with staged(target) as temporary:
        with open(temporary, "wb") as copy:
            shutil.copyfileobj(source, copy)
        place(temporary, target)


# --- sandboxed commands ------------------------------------------------------------------------------

TICK_S = 0.01
SCAN_EVERY_S = (0.25, 1.0)


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
