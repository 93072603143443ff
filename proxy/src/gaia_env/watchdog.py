"""The hung-replica watchdog: slow is not dead.

A replica is hung when it has answered nothing at all, not even a ping, for `hung_after_s` while
using no CPU (stopped, deadlocked, asleep in its event loop), or for BUSY_GRACE times that however
busy it is (a tool spinning in the protocol's loop). Pings are answered by the server's protocol
loop whatever its tools are doing, and a replica on a saturated machine still gets CPU, so slow
calls and a saturated machine never get it killed.
"""

from __future__ import annotations

import asyncio
import time

from .process import CallTimeout, RemoteError, ServerGone, ServerProcess

PING_EVERY_S = 5.0
BUSY_GRACE = 3
"""A silent replica that is using CPU gets this many times hung_after_s before it counts as hung."""
WORKING_CPU_S = 0.05
"""CPU seconds used while a ping went unanswered that count as working, not stuck."""


async def watch(process: ServerProcess, hung_after_s: float) -> str | None:
    """Ping `process` whenever it has gone quiet; kill it once it is hung and return why.

    Returns None when the process exits (or stops answering pings with errors) by itself.
    """
    every = min(PING_EVERY_S, hung_after_s / 3)
    while not process.exited.is_set():
        await asyncio.sleep(every)
        if time.monotonic() - process.last_heard < every:
            continue  # it is talking: replies and notifications prove the loop runs
        cpu_before = process.cpu_seconds()
        try:
            await process.request("ping", {}, hung_after_s)
        except CallTimeout:
            await asyncio.sleep(0.1)  # a reply may be waiting in the pipe behind a busy gateway loop
            silent = time.monotonic() - process.last_heard
            working = process.cpu_seconds() - cpu_before > WORKING_CPU_S
            if silent >= hung_after_s * (BUSY_GRACE if working else 1) and not process.exited.is_set():
                process.kill()
                return (
                    f"server answered nothing, not even a ping, for {silent:.0f} s "
                    f"({'busy in its protocol loop' if working else 'using no CPU'}: hung)"
                )
        except (ServerGone, RemoteError):
            return None
    return None
