"""External programs a tool hands a file to (ffmpeg, ffprobe, LibreOffice, tesseract, the PDF worker),
run so that they see only that file.

A decoder is told one path, but the file may name others: an HLS playlist or a concat list saved as
`innocent.mp3` lists other sessions' media by absolute path, a legacy .doc links to a URL that
LibreOffice fetches. So the program runs in bubblewrap, in its own mount namespace holding the
system (/usr, a few files of /etc), a fresh /tmp of GAIA_SANDBOX_TMP_MB, and only the paths the
caller names, each bound at its own path (so its arguments need no rewriting): `reads` read-only,
`writes` read-write. The network namespace is empty (no network at all, loopback included), and so
are the PID, IPC and UTS ones; every capability is dropped. Each path is opened here without
following a final symlink and bound by its file descriptor, so what the program sees is the file
that was checked.

GAIA_SANDBOX=unsandboxed (the execution sandbox's setting) runs the programs directly, as it runs
sandboxed code directly: an explicit, logged choice for hosts where bubblewrap cannot run.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.execution.process import run_in_group
from gaia_kit.execution.sandbox import (
    SandboxSettings,
    SandboxUnavailable,
    _bubblewrap_problem,
    system_mounts,
)

logger = logging.getLogger("gaia_kit.execution.confine")

BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}


def run_confined(
    args: list[str],
    *,
    reads: Sequence[Path] = (),
    writes: Sequence[Path] = (),
    timeout: float,
    env: dict[str, str] | None = None,
    merge_stderr: bool = False,
    input: bytes | None = None,
    tick: Callable[[], None] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.CompletedProcess[bytes]:
    """run_in_group(args, ...) with only `reads` (read-only) and `writes` (read-write) visible and no
    network. `env` is added to a minimal environment: nothing of the server's passes (API keys)."""
    environment = {**BASE_ENV, **(env or {})}
    if settings(SandboxSettings).backend == "unsandboxed":
        logger.warning("GAIA_SANDBOX=unsandboxed: running %s without confinement", Path(args[0]).name)
        return run_in_group(
            args,
            timeout=timeout,
            env=environment,
            merge_stderr=merge_stderr,
            input=input,
            tick=tick,
            pass_fds=pass_fds,
        )
    problem = _bubblewrap_problem()
    if problem:
        raise SandboxUnavailable(problem)
    program = Path(args[0]).name
    with _opened(reads, program) as read_fds, _opened(writes, program, first=len(reads)) as write_fds:
        # A file handed over as an open descriptor (/proc/<pid>/fd/N) cannot appear at that name
        # under the sandbox's own /proc: it is shown at its mount point instead.
        shown = {source: str(dest) for _, source, dest in [*read_fds, *write_fds] if source != str(dest)}
        args = [shown.get(arg, arg) for arg in args]
        command = _bwrap_command(args, read_fds, write_fds, environment)
        return run_in_group(
            command,
            timeout=timeout,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            merge_stderr=merge_stderr,
            input=input,
            tick=tick,
            pass_fds=(*pass_fds, *(fd for fd, _, _ in [*read_fds, *write_fds])),
        )


def python_roots() -> list[Path]:
    """What a child `python -m <this project's module>` reads: this Python, its virtual environment
    and the source folders of editable installs (sys.path, less the script's own folder)."""
    found = {Path(os.path.realpath(sys.base_prefix)), Path(os.path.realpath(sys.prefix))}
    found |= {Path(os.path.realpath(entry)) for entry in sys.path[1:] if entry and os.path.isdir(entry)}
    roots = sorted(root for root in found if not root.is_relative_to("/usr"))
    return [
        root for root in roots if not any(root != other and root.is_relative_to(other) for other in roots)
    ]


FD_MOUNTS = Path("/run/gaia-files")
"""Where files handed over as open descriptors are shown inside the sandbox."""


def confined_path(path: Path, index: int) -> Path:
    """Where the sandbox shows the `index`-th of run_confined's reads (then writes): the same path,
    or under FD_MOUNTS for a file handed over as an open descriptor. Arguments are rewritten
    already; a program told the path another way (its stdin) needs this."""
    absolute = Path(os.path.abspath(path))
    return FD_MOUNTS / str(index) if _descriptor_path(absolute) else absolute


def _descriptor_path(path: Path) -> bool:
    """/proc/<pid>/fd/N (gaia_kit.core.openat.shared_fd_path): a file already opened safely."""
    parts = path.parts
    return len(parts) == 5 and parts[1] == "proc" and parts[3] == "fd"


@contextlib.contextmanager
def _opened(paths: Sequence[Path], program: str, first: int = 0) -> Iterator[list[tuple[int, str, Path]]]:
    """(an O_PATH descriptor, the path as given, where the sandbox shows it) for each path; the last
    component is never a symlink followed, but for an open descriptor's own /proc entry."""
    opened: list[tuple[int, str, Path]] = []
    try:
        for index, path in enumerate(paths, start=first):
            absolute = Path(os.path.abspath(path))
            descriptor = _descriptor_path(absolute)
            flags = os.O_PATH | os.O_CLOEXEC | (0 if descriptor else os.O_NOFOLLOW)
            try:
                fd = os.open(absolute, flags)
            except OSError as exc:
                raise _moved(absolute, program, exc.strerror) from None
            opened.append((fd, str(path), confined_path(absolute, index)))
            # O_PATH with O_NOFOLLOW opens a link itself instead of failing: refuse it here.
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise _moved(absolute, program, "it is a symbolic link")
        yield opened
    finally:
        for fd, _, _ in opened:
            os.close(fd)


def _moved(path: Path, program: str, why: str | None) -> ToolFailure:
    if why == os.strerror(errno.ENOENT):
        return ToolFailure(f"{path.name} does not exist (it was removed or moved); check the path.")
    return ToolFailure(
        f"{path.name} could not be handed to {program} ({why}); it was moved or replaced by a link "
        "while the call ran: try again with the file itself."
    )


def _bwrap_command(
    args: list[str],
    reads: list[tuple[int, str, Path]],
    writes: list[tuple[int, str, Path]],
    env: dict[str, str],
) -> list[str]:
    command = ["bwrap", "--die-with-parent", "--new-session", "--hostname", "gaia-decoder"]
    command += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
    # As root the program stays uid 0 but with no capability (it can open only what root owns or
    # anyone may read, and change no mount); as anyone else a user namespace holds it.
    command += ([] if os.geteuid() == 0 else ["--unshare-user"]) + ["--cap-drop", "ALL"]
    # /tmp is memory: bounded as the code sandbox's is (GAIA_SANDBOX_TMP_MB).
    tmp_bytes = settings(SandboxSettings).tmp_mb * 1024 * 1024
    command += [*system_mounts(), "--size", str(tmp_bytes), "--perms", "1777", "--tmpfs", "/tmp"]
    for fd, _, path in reads:
        command += ["--ro-bind-fd", str(fd), str(path)]
    for fd, _, path in writes:
        command += ["--bind-fd", str(fd), str(path)]
    command += ["--chdir", "/tmp", "--clearenv"]
    for key, value in env.items():
        command += ["--setenv", key, value]
    return [*command, "--", *args]
