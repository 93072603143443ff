"""Open a path beneath a directory with no symbolic link followed out of it.

A path that is checked and then opened by name can be swapped for a link in between, and sandboxed
code owns the workspace: it may do that at any moment. Here nothing is opened by its full host path.
The walk starts at a directory that is already open and every step is relative to an open
descriptor, so what was checked is what is opened.

Fast path: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS (Linux 5.6 and later), which is
one system call. That call refuses every absolute link, but agents make such links inside their own
workspace (ln -s "$PWD/a" b, where the sandbox shows the workspace at its host path). Those links
take the slow path. So do kernels without openat2, and seccomp filters that refuse it. The slow path
opens one component at a time with O_PATH | O_NOFOLLOW relative to the previous directory's
descriptor. It reads each link with readlinkat and follows it by hand. `..` drops back to a
descriptor already held, so a directory moved out of the root meanwhile leads nowhere. An absolute
link is followed only when it points into one of the allowed roots.

Escapes raise OSError(EXDEV); anything else is the system's own error (ENOENT, ENOTDIR, ...).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
SYS_OPENAT2 = 437  # the same number on every architecture (syscalls added after 5.1 share one table)
MAX_LINKS = 40  # what the kernel allows in one lookup
DIRECTORY = os.O_PATH | os.O_DIRECTORY


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_openat2_works: bool | None = None  # unknown until first tried


def open_beneath(
    root: Path | str,
    relative: str,
    flags: int = os.O_RDONLY,
    mode: int = 0o644,
    *,
    roots: Sequence[Path] = (),
) -> int:
    """A descriptor for `relative` opened under the directory `root`, no link followed out of it.

    `roots` are other directories that an absolute link may lead into (the read-only dataset, for a
    read). The descriptor is close-on-exec. The caller closes it.
    """
    root_fd = os.open(root, DIRECTORY | os.O_CLOEXEC)
    try:
        return open_at(root_fd, Path(root), relative, flags, mode, roots=roots)
    finally:
        os.close(root_fd)


def open_at(
    root_fd: int,
    root: Path | None,
    relative: str,
    flags: int,
    mode: int = 0o644,
    *,
    roots: Sequence[Path] = (),
) -> int:
    """`open_beneath` from a root that is already open. `root` is its host path, so that absolute
    links into it can be followed; None refuses them."""
    global _openat2_works
    flags |= os.O_CLOEXEC
    if _openat2_works is not False:
        try:
            fd = _openat2(root_fd, relative or ".", flags, mode)
            _openat2_works = True
            return fd
        except OSError as exc:
            if exc.errno in (errno.ENOSYS, errno.EPERM) and not _openat2_works:
                _openat2_works = False  # no openat2 here (old kernel, seccomp): walk from now on
            elif exc.errno not in (errno.EXDEV, errno.ELOOP, errno.EAGAIN):
                raise
    return _walk(root_fd, root, relative, flags, mode, roots)


def _openat2(dir_fd: int, relative: str, flags: int, mode: int) -> int:
    tmpfile = getattr(os, "O_TMPFILE", 0)  # includes O_DIRECTORY's bit: test it whole
    creating = flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile)
    how = _OpenHow(flags, mode if creating else 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(relative)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), relative)
    return fd


def _walk(
    root_fd: int, root: Path | None, relative: str, flags: int, mode: int, roots: Sequence[Path]
) -> int:
    """Component by component: each step relative to the descriptor of the directory before it."""
    held = [os.dup(root_fd)]  # the directories walked through; held[0] is the current root
    pending = _parts(relative)
    links = 0
    try:
        while pending:
            name = pending.pop()
            if name == "..":
                if len(held) == 1:
                    raise OSError(errno.EXDEV, "the path leads out of its root", relative)
                os.close(held.pop())
                continue
            last = not pending
            try:
                fd = os.open(
                    name, (flags if last else DIRECTORY) | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=held[-1]
                )
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or (last and flags & os.O_NOFOLLOW):
                    raise  # the caller's own O_NOFOLLOW: a link in last place is not followed
                target = _link_target(name, held[-1], exc)
            else:
                if not stat.S_ISLNK(os.fstat(fd).st_mode) or (last and flags & os.O_NOFOLLOW):
                    if last:
                        return fd
                    held.append(fd)
                    continue
                os.close(fd)  # O_PATH | O_NOFOLLOW opens the link itself
                target = _link_target(name, held[-1], None)
            links += 1
            if links > MAX_LINKS:
                raise OSError(errno.ELOOP, "too many levels of symbolic links", relative)
            if target.startswith("/"):
                new_root, rest = _into_root(target, [root, *roots] if root else roots, relative)
                for fd in held:
                    os.close(fd)
                held = [os.open(new_root, DIRECTORY | os.O_CLOEXEC)]
                target = rest
            pending += _parts(target)
        return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=held[-1])
    finally:
        for fd in held:
            os.close(fd)


def _parts(relative: str) -> list[str]:
    """Components to walk, last first (a stack)."""
    return [part for part in reversed(relative.split("/")) if part not in ("", ".")]


def _link_target(name: str, dir_fd: int, error: OSError | None) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL and error is not None:
            raise error from None  # not a link: the open's own error stands
        raise


def _into_root(target: str, roots: Sequence[Path], relative: str) -> tuple[Path, str]:
    """The root an absolute link points into, and the rest of the target below it."""
    path = PurePosixPath(target)
    for root in roots:
        if path.is_relative_to(root):
            return root, str(path.relative_to(root))
    raise OSError(errno.EXDEV, "a symbolic link leads out of the allowed directories", relative)


def make_dirs_beneath(root: Path | str, relative: str) -> int:
    """`mkdir -p relative` under `root` with no link followed out of it; an O_PATH descriptor of the
    last directory, which the caller closes (use it as `dir_fd=`)."""
    root_fd = os.open(root, DIRECTORY | os.O_CLOEXEC)
    try:
        current = os.dup(root_fd)
        walked: list[str] = []
        for name in reversed(_parts(relative)):
            walked.append(name)
            path = "/".join(walked)
            try:
                following = open_at(root_fd, Path(root), path, DIRECTORY)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=current)
                following = open_at(root_fd, Path(root), path, DIRECTORY)
            os.close(current)
            current = following
        return current
    finally:
        os.close(root_fd)


@contextlib.contextmanager
def parent_beneath(root: Path, relative: str, *, create: bool = True) -> Iterator[tuple[int, str]]:
    """The directory holding `relative` (made if missing and `create`), open, and the last name in
    it: create, rename or unlink with `dir_fd=` and that name, and no link on the way is followed out."""
    parts = _parts(relative)
    if not parts or parts[0] == "..":
        raise OSError(errno.EINVAL, "the path names no entry of its own", relative)
    parent = "/".join(reversed(parts[1:]))
    fd = make_dirs_beneath(root, parent) if create else open_beneath(root, parent, DIRECTORY)
    try:
        yield fd, parts[0]
    finally:
        os.close(fd)


def fd_path(fd: int) -> Path:
    """A path naming the open file `fd` for this process and the programs it starts with the
    descriptor inherited (pass_fds): opening it reaches that very file, whatever happens to its name."""
    return Path(f"/proc/self/fd/{fd}")


def shared_fd_path(fd: int) -> Path:
    """/proc/<this pid>/fd/N: the open file `fd` for programs this process starts (they run as the
    same user), with no descriptor to pass, and for bind mounts (bwrap --ro-bind follows it to the
    file). Valid while this process holds `fd` open."""
    return Path(f"/proc/{os.getpid()}/fd/{fd}")
