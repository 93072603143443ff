"""Replicas of one server: supervision, routing, bounded in-flight calls, timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gaia_kit.session import SESSION_ENDED

from .process import CallTimeout, Progress, RemoteError, ServerGone, ServerProcess
from .registry import ServerSpec

logger = logging.getLogger("gaia_env.pool")

CRASH_WINDOW_S = 60.0
CRASHES_BEFORE_FAILED = 5
MAX_BACKOFF_S = 30.0
STUCK_AFTER_TIMEOUTS = 3
PING_TIMEOUT_S = 5.0


class PoolError(Exception):
    """A call could not be served; the message names the server and what to do."""


@dataclass
class Replica:
    index: int
    state: str = "starting"  # starting | ready | restarting | failed | stopped
    process: ServerProcess | None = None
    in_flight: int = 0
    restarts: int = 0
    timeouts: int = 0
    last_error: str | None = None
    crash_times: list[float] = field(default_factory=list)


class ServerPool:
    def __init__(self, spec: ServerSpec, env: Mapping[str, str], on_restart: Any = None):
        self.spec = spec
        self.env = dict(env)
        self.replicas = [Replica(i) for i in range(spec.replicas)]
        self.tools: list[dict[str, Any]] = []
        self.tools_version = 0
        self.changed = asyncio.Condition()
        self.waiting = 0
        self._affinity: dict[str, int] = {}
        self._supervisors: list[asyncio.Task[None]] = []
        self._closing = False
        self._on_restart = on_restart

    # -- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        states = {r.state for r in self.replicas}
        if "ready" in states:
            return "ready" if states == {"ready"} else "degraded"
        if states == {"failed"}:
            return "failed"
        return "starting" if "starting" in states else "restarting"

    @property
    def last_error(self) -> str | None:
        errors = [r.last_error for r in self.replicas if r.last_error]
        return errors[-1] if errors else None

    def describe(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "replicas": [
                {"state": r.state, "pid": r.process.pid if r.process else None, "in_flight": r.in_flight}
                for r in self.replicas
            ],
            "tools": len(self.tools),
            "restarts": sum(r.restarts for r in self.replicas),
            "in_flight": sum(r.in_flight for r in self.replicas),
            "waiting": self.waiting,
            "last_error": self.last_error,
        }

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._supervisors = [
            asyncio.create_task(self._supervise(r), name=f"supervise-{self.spec.id}-{r.index}")
            for r in self.replicas
        ]

    async def wait_started(self, timeout: float) -> None:
        """Wait until every replica is up or has given up starting."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                async with self.changed:
                    await self.changed.wait_for(
                        lambda: all(r.state in ("ready", "failed") or r.restarts for r in self.replicas)
                    )

    async def close(self) -> None:
        self._closing = True
        for task in self._supervisors:
            task.cancel()
        await asyncio.gather(*self._supervisors, return_exceptions=True)
        await asyncio.gather(*(r.process.stop() for r in self.replicas if r.process), return_exceptions=True)
        for r in self.replicas:
            r.state = "stopped"

    async def _supervise(self, replica: Replica) -> None:
        attempt = 0
        while not self._closing:
            process = ServerProcess(f"{self.spec.id}#{replica.index}", self.spec.argv(), self.env)
            replica.process = process
            try:
                tools = await process.start(self.spec.startup_timeout)
            except (ServerGone, CallTimeout, RemoteError, OSError) as exc:
                reason = self.spec.missing_program() or _reason(exc, process)
                replica.last_error = f"failed to start: {reason}"
                logger.error("%s #%d %s", self.spec.id, replica.index, replica.last_error)
                await process.stop(grace=1.0)
            else:
                if tools != self.tools:
                    self.tools, self.tools_version = tools, self.tools_version + 1
                replica.timeouts = 0
                await self._set_state(replica, "ready")
                attempt = 0
                await process.exited.wait()
                replica.last_error = f"server {process.last_words()}"
                logger.error("%s #%d %s", self.spec.id, replica.index, replica.last_error)
                await process.stop(grace=1.0)
            if self._closing:
                return
            replica.restarts += 1
            now = time.monotonic()
            replica.crash_times = [t for t in replica.crash_times if now - t < CRASH_WINDOW_S] + [now]
            failing = len(replica.crash_times) >= CRASHES_BEFORE_FAILED
            await self._set_state(replica, "failed" if failing else "restarting")
            if self._on_restart:
                self._on_restart(self.spec.id)
            delay = min(MAX_BACKOFF_S, 0.25 * 2**attempt)
            attempt += 1
            await asyncio.sleep(delay)

    async def _set_state(self, replica: Replica, state: str) -> None:
        replica.state = state
        async with self.changed:
            self.changed.notify_all()

    # -- calls ---------------------------------------------------------------------------------

    async def call(
        self, method: str, params: dict[str, Any], session: str | None, on_progress: Progress | None = None
    ) -> dict[str, Any]:
        """Forward one request to the right replica, within the server's timeout."""
        deadline = time.monotonic() + self.spec.timeout
        replica = await self._acquire(session, deadline)
        process = replica.process
        assert process is not None
        try:
            remaining = max(0.001, deadline - time.monotonic())
            return await process.request(method, params, remaining, on_progress)
        except ServerGone as exc:
            raise PoolError(
                f"Server {self.spec.id} stopped during the call ({exc}); it is being restarted, retry shortly."
            ) from None
        except CallTimeout:
            replica.timeouts += 1
            asyncio.create_task(self._check_alive(replica, process))
            raise PoolError(
                f"{params.get('name', method)} on server {self.spec.id} timed out after {self.spec.timeout:g} s "
                "and was cancelled; try a smaller input, or raise this server's timeout in servers.toml."
            ) from None
        finally:
            replica.in_flight -= 1
            async with self.changed:
                self.changed.notify_all()

    async def _acquire(self, session: str | None, deadline: float) -> Replica:
        async with self.changed:
            if self.waiting >= self.spec.max_queue and self._pick(session) is None:
                raise PoolError(f"Server {self.spec.id} is busy ({self.waiting} calls queued); retry later.")
            self.waiting += 1
            try:
                async with asyncio.timeout_at(_loop_time(deadline)):
                    await self.changed.wait_for(
                        lambda: self._pick(session) is not None or self.state == "failed"
                    )
            except TimeoutError:
                raise PoolError(self._unavailable_reason()) from None
            finally:
                self.waiting -= 1
            replica = self._pick(session)
            if replica is None:
                raise PoolError(self._unavailable_reason())
            replica.in_flight += 1
            if session is not None and self.spec.stateful:
                self._affinity[session] = replica.index
            return replica

    def _pick(self, session: str | None) -> Replica | None:
        if session is not None and self.spec.stateful and session in self._affinity:
            owner = self.replicas[self._affinity[session]]
            return owner if owner.state == "ready" and owner.in_flight < self.spec.max_in_flight else None
        ready = [r for r in self.replicas if r.state == "ready" and r.in_flight < self.spec.max_in_flight]
        return min(ready, key=lambda r: r.in_flight) if ready else None

    def _unavailable_reason(self) -> str:
        if self.state == "failed":
            return f"Server {self.spec.id} is unavailable: it keeps crashing ({self.last_error}). Check `gaia-env doctor`."
        if any(r.state == "ready" for r in self.replicas):
            return f"Server {self.spec.id} is busy: every replica is at its limit of in-flight calls; retry later."
        return f"Server {self.spec.id} is unavailable right now ({self.state}); retry shortly."

    def end_session(self, session: str) -> None:
        """A stateful server releases what it kept for the session (its cwd, tabs, sandboxes)."""
        self._affinity.pop(session, None)
        if self.spec.stateful:
            for replica in self.replicas:
                if replica.state == "ready" and replica.process is not None:
                    replica.process.notify(SESSION_ENDED, {"sessionId": session})

    async def _check_alive(self, replica: Replica, process: ServerProcess) -> None:
        """After a timeout: a server that no longer answers, or piles up stuck calls, is restarted."""
        if process.exited.is_set():
            return
        try:
            await process.request("ping", {}, PING_TIMEOUT_S)
            stuck = replica.timeouts >= STUCK_AFTER_TIMEOUTS
        except (CallTimeout, ServerGone, RemoteError):
            stuck = True
        if stuck and replica.process is process and not process.exited.is_set():
            logger.error("%s #%d stopped answering; restarting it", self.spec.id, replica.index)
            replica.last_error = "stopped answering after a timed-out call; restarted"
            process.kill()


def _reason(exc: BaseException, process: ServerProcess) -> str:
    if isinstance(exc, CallTimeout):
        return "no answer to initialize in time"
    if isinstance(exc, OSError):
        return f"could not run {process.argv[0]}: {exc.strerror or exc}"
    return str(exc) or process.last_words()


def _loop_time(deadline: float) -> float:
    """Convert a time.monotonic() deadline to the event loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - time.monotonic())
