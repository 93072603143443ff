"""Child processes with a deadline that never outlive it.

The child runs in its own process group, so at the deadline (or when the call is cancelled) the
whole group is killed: a converter or decoder that started helpers leaves none behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def run_in_group(
    args: list[str], *, timeout: float, env: dict[str, str] | None = None, merge_stderr: bool = False
) -> subprocess.CompletedProcess[bytes]:
    """Run `args` to completion within `timeout` seconds; raise subprocess.TimeoutExpired after
    killing the group. With `merge_stderr`, stderr is folded into stdout."""
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:  # the deadline, a cancellation or an interrupt: leave nothing running
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    return subprocess.CompletedProcess(args, process.returncode, out, err or b"")
