"""Child processes with a deadline that never outlive it, nor the call that started them.

The child runs in its own process group, so at the deadline, when the tool call is cancelled (the
client sent notifications/cancelled or went away), or on any error, the whole group is killed: a
converter or decoder that started helpers leaves none behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable

from gaia_kit.core.calls import current_call

POLL_S = 0.2
"""How often a waiting call looks at its cancellation (and calls `tick`)."""


def run_in_group(
    args: list[str],
    *,
    timeout: float,
    env: dict[str, str] | None = None,
    merge_stderr: bool = False,
    input: bytes | None = None,
    tick: Callable[[], None] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run `args` to completion within `timeout` seconds; raise subprocess.TimeoutExpired after
    killing the group, CallCancelled when the call was cancelled. With `merge_stderr`, stderr is
    folded into stdout; `input` goes to its stdin; `tick()` runs every POLL_S while it works (to
    report progress)."""
    call = current_call()
    with tempfile.TemporaryFile() as stdin:
        # stdin from a file: communicate() cannot go on feeding input after one of its timeouts
        if input is not None:
            stdin.write(input)
            stdin.seek(0)
        process = subprocess.Popen(
            args,
            stdin=stdin if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            start_new_session=True,
            env=env,
            pass_fds=pass_fds,
        )
    deadline = time.monotonic() + timeout
    try:
        while True:
            call.check()
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(args, timeout)
            try:
                # communicate() may be called again after a timeout without losing output
                out, err = process.communicate(timeout=min(POLL_S, left))
                break
            except subprocess.TimeoutExpired:
                if tick is not None:
                    tick()
    except BaseException:  # the deadline, a cancellation or an interrupt: leave nothing running
        kill_group(process)
        raise
    return subprocess.CompletedProcess(args, process.returncode, out, err or b"")


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the process and its group, and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        process.communicate()
