"""Writes into a session workspace that keep to its disk quota (gaia_kit.core.quota_accounting).

What makes the accounting hold:
- Every write the servers make themselves is prepared outside the workspace (in the staging folder
  beside the workspaces, on the same disk) and enters it with `place`, under the workspace's lock,
  only if the result fits. The lock is an flock on a file outside the workspace, so every server
  process and thread of a session take turns, and sandboxed code can neither see nor hold it.
- A sandboxed command starts with its file-size limit (RLIMIT_FSIZE) lowered to the room left, and
  `CommandWatch` (gaia_kit.core.quota_watch) measures the workspace while it runs: one that crosses
  the quota is stopped.

Every write into a session workspace (`place`, `make_dirs`) goes through directories opened beneath
the workspace (gaia_kit.core.openat): a link that sandboxed code swaps into the target's folders
cannot lead the write out of the workspace, into another session's or the dataset.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.openat import make_dirs_beneath, parent_beneath
from gaia_kit.core.quota_accounting import Quota, QuotaExceeded, measure, session_workspace, staging_folder

# The door servers use: the writes, the refusal they raise, and the measure a benchmark takes.
__all__ = [
    "QuotaExceeded",
    "copy_into",
    "ensure_room",
    "make_dirs",
    "measure",
    "place",
    "room_for",
    "scratch",
    "staged",
]


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
