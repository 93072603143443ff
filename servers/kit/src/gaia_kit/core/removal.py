"""Removing a tree that hostile code may have built: any depth, never through a link.

`shutil.rmtree` on Python 3.11 recurses once per level, so a tree 1,500 folders deep (one
sandboxed command makes it) raised RecursionError and left the workspace on disk. This walk
is a loop: it holds one open folder at a time (a deep tree must not run out of file
descriptors either), opens each child relative to its parent with O_NOFOLLOW, and climbs back
through `..` only after checking that it reaches the folder it came from, so a folder moved or
swapped for a link meanwhile can never lead the removal out of the tree. A folder whose
permissions were taken away (`chmod 000`, by the same user) gets them back first, through the
descriptor of the folder itself, never through a name that could have become a link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeChanged(OSError):
    """The tree was moved while it was being removed; what is left stays for a later attempt."""


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it; a missing path is already removed. A link is removed,
    never followed. Raises OSError (TreeChanged when folders move under it) on what it cannot remove."""
    try:
        parent = os.open(path.parent, _DIR_FLAGS & ~os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        _remove_from(parent, path.name)
    finally:
        os.close(parent)


def _remove_from(parent: int, name: str) -> None:
    try:
        top = _open_folder(name, parent)
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        _unlink(name, parent)  # a file or a link: removed as itself
        return
    # The chain from the top folder down to the open one: each level's name and identity.
    chain: list[tuple[str, tuple[int, int]]] = [(name, _identity(top))]
    current = top
    try:
        while chain:
            child = _next_subfolder(current)
            if child is not None:
                current = _descend(current, child, chain)
                continue
            up = parent if len(chain) == 1 else _climb(current, chain[-2][1])
            os.close(current)
            current = up
            emptied, _ = chain.pop()
            _with_write_access(up, partial(os.rmdir, emptied, dir_fd=up))
    finally:
        if current != parent:
            os.close(current)


def _next_subfolder(folder: int) -> str | None:
    """Unlink the folder's files and links until a subfolder is found; its name, or None when empty."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            _unlink(entry.name, folder)
    return None


def _descend(current: int, name: str, chain: list[tuple[str, tuple[int, int]]]) -> int:
    try:
        child = _open_folder(name, current)
    except FileNotFoundError:
        return current
    except OSError as exc:
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        _unlink(name, current)  # replaced by a file or a link since it was listed
        return current
    chain.append((name, _identity(child)))
    os.close(current)
    return child


def _climb(current: int, expected: tuple[int, int]) -> int:
    up = os.open("..", _DIR_FLAGS, dir_fd=current)
    if _identity(up) != expected:
        os.close(up)
        raise TreeChanged(errno.ESTALE, "a folder was moved while its tree was being removed")
    return up


def _unlink(name: str, folder: int) -> None:
    _with_write_access(folder, partial(os.unlink, name, dir_fd=folder))


def _open_folder(name: str, parent: int) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            _grant(handle)
        finally:
            os.close(handle)
        return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _with_write_access(folder: int, change: Callable[[], None]) -> None:
    """Run `change` (an unlink or rmdir in `folder`); on EACCES give the folder back its write bit once."""
    try:
        with contextlib.suppress(FileNotFoundError):
            change()
    except PermissionError:
        _grant(folder)
        with contextlib.suppress(FileNotFoundError):
            change()


def _grant(folder: int) -> None:
    # chmod through /proc/self/fd acts on the open folder itself (an O_PATH descriptor takes no fchmod).
    os.chmod(f"/proc/self/fd/{folder}", 0o700)


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    assert stat.S_ISDIR(info.st_mode)
    return info.st_dev, info.st_ino
