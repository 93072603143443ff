"""Replicas of one server: supervision, routing, admission, scaling, timeouts.

Calls go to the least busy ready replica, or for a stateful server to the replica that owns the
session. A call that finds every slot taken waits in a queue bounded in seconds of work
(admission.py); past that bound it is refused at once with a busy answer saying when to retry.

Slow is not dead: a replica is restarted when it exits, or when it is hung: it has answered
nothing at all, not even a ping, for `hung_after_s` while using no CPU (stopped, deadlocked, asleep
in its event loop), or for three times that however busy it is (a tool spinning in the protocol's
loop). Pings are answered by the server's protocol loop whatever its tools are doing, and a replica
on a saturated machine still gets CPU, so slow calls and a saturated machine never get it killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gaia_contract import SESSION_ENDED

from .admission import Admission
from .capacity import ReplicaPlan, available_cores, replica_plan, room_for_a_replica
from .errors import Busy
from .process import CallTimeout, Progress, RemoteError, ServerGone, ServerProcess
from .registry import ServerSpec

logger = logging.getLogger("gaia_env.pool")

CRASH_WINDOW_S = 60.0
CRASHES_BEFORE_FAILED = 5
MAX_BACKOFF_S = 30.0
PING_EVERY_S = 5.0
BUSY_GRACE = 3
"""A silent replica that is using CPU gets this many times hung_after_s before it counts as hung."""
SCALE_EVERY_S = 2.0
SCALE_UP_AFTER_TICKS = 2
"""Calls waiting at this many scaling ticks in a row add a replica."""
SCALE_DOWN_AFTER_S = 60.0
HOST_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"`]+/)+(?=[^\s/'\"`]*)")
"""An absolute path's folders (not a URL's): a server's last words name the host's layout."""
"""A replica beyond the minimum is retired after this long without calls waiting."""


class PoolError(Exception):
    """A call failed at the gateway (its server died, it timed out); the message says what to do."""


@dataclass
class Replica:
    index: int
    state: str = "starting"  # starting | ready | draining | restarting | failed | stopped
    process: ServerProcess | None = None
    in_flight: int = 0
    restarts: int = 0
    generation: int = 0
    """One more each time a process of this replica comes up: a session's state lives in one."""
    last_error: str | None = None
    crash_times: list[float] = field(default_factory=list)
    wanted: bool = True
    """False once scaling retires the replica."""
    hung: str | None = None


@dataclass
class Waiter:
    session: str | None
    cost: float
    future: asyncio.Future[tuple[Replica, str | None]]


class ServerPool:
    def __init__(
        self,
        spec: ServerSpec,
        env: Mapping[str, str],
        on_restart: Callable[[str], None] | None = None,
        plan: ReplicaPlan | None = None,
    ):
        self.spec = spec
        self.env = dict(env)
        self.plan = plan or replica_plan(spec, available_cores())
        self.replicas = [Replica(i) for i in range(self.plan.initial)]
        self.tools: list[dict[str, Any]] = []
        self.tools_version = 0
        self._changed = asyncio.Event()
        self.admission = Admission(spec.max_queue_s)
        self.busy_answers = 0
        self._waiters: deque[Waiter] = deque()
        self._affinity: dict[str, tuple[int, int]] = {}
        """session -> (replica index, generation) of the process that holds its state."""
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._scaler: asyncio.Task[None] | None = None
        self._closing = False
        self._on_restart = on_restart

    # -- state ---------------------------------------------------------------------------------

    @property
    def active(self) -> list[Replica]:
        return [r for r in self.replicas if r.wanted]

    @property
    def state(self) -> str:
        states = {r.state for r in self.active}
        if "ready" in states:
            return "ready" if states <= {"ready", "draining"} else "degraded"
        if states == {"failed"}:
            return "failed"
        return "starting" if "starting" in states else "restarting"

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def last_error(self) -> str | None:
        errors = [r.last_error for r in self.replicas if r.last_error]
        return errors[-1] if errors else None

    def describe(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "replicas": [
                {
                    "state": r.state,
                    "pid": r.process.pid if r.process else None,
                    "in_flight": r.in_flight,
                    "restarts": r.restarts,
                }
                for r in self.replicas
                if r.wanted or r.state != "stopped"
            ],
            "plan": {"min": self.plan.minimum, "max": self.plan.maximum},
            "tools": len(self.tools),
            "restarts": sum(r.restarts for r in self.replicas),
            "in_flight": sum(r.in_flight for r in self.replicas),
            "waiting": self.waiting,
            "queued_s": round(self.admission.queued_s, 2),
            "busy_answers": self.busy_answers,
            "last_error": self.last_error,
        }

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        for replica in self.replicas:
            self._launch(replica)
        if not self.plan.fixed:
            self._scaler = asyncio.create_task(self._autoscale(), name=f"scale-{self.spec.id}")

    def _launch(self, replica: Replica) -> None:
        name = f"supervise-{self.spec.id}-{replica.index}"
        self._tasks[replica.index] = asyncio.create_task(self._supervise(replica), name=name)

    async def wait_started(self, timeout: float) -> None:
        """Wait until every replica is up or has given up starting."""
        with contextlib.suppress(TimeoutError):
            await self.until(
                lambda: all(r.state in ("ready", "failed") or r.restarts for r in self.active), timeout
            )

    async def until(self, condition: Callable[[], bool], timeout: float | None = None) -> None:
        """Wait until `condition()` holds, checking it after each change of the pool's state."""
        async with asyncio.timeout(timeout):
            while not condition():
                await self._changed.wait()

    def _bump(self) -> None:
        """Wake everyone waiting in `until`: slots, queue or replica states changed."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def close(self) -> None:
        self._closing = True
        tasks = [*self._tasks.values(), *([self._scaler] if self._scaler else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(r.process.stop() for r in self.replicas if r.process), return_exceptions=True)
        for r in self.replicas:
            r.state = "stopped"
        self._fail_waiters(f"Server {self.spec.id} is shutting down.")

    async def _supervise(self, replica: Replica) -> None:
        attempt = 0
        while not self._closing and replica.wanted:
            process = ServerProcess(
                f"{self.spec.id}#{replica.index}", self.spec.argv(), self.env, self.spec.nice
            )
            replica.process, replica.hung = process, None
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
                replica.generation += 1
                await self._set_state(replica, "ready")
                attempt = 0
                watchdog = asyncio.create_task(self._watch(replica, process))
                await process.exited.wait()
                watchdog.cancel()
                if self._closing or not replica.wanted:
                    break
                replica.last_error = replica.hung or f"server {process.last_words()}"
                logger.error("%s #%d %s; restarting it", self.spec.id, replica.index, replica.last_error)
                await self._set_state(replica, "restarting")
                await process.stop(grace=1.0)
            if self._closing or not replica.wanted:
                break
            replica.restarts += 1
            now = time.monotonic()
            replica.crash_times = [t for t in replica.crash_times if now - t < CRASH_WINDOW_S] + [now]
            failing = len(replica.crash_times) >= CRASHES_BEFORE_FAILED
            await self._set_state(replica, "failed" if failing else "restarting")
            if self._on_restart:
                self._on_restart(self.spec.id)
            await asyncio.sleep(min(MAX_BACKOFF_S, 0.25 * 2**attempt))
            attempt += 1
        if not self._closing:
            await self._set_state(replica, "stopped")

    async def _set_state(self, replica: Replica, state: str) -> None:
        replica.state = state
        self._dispatch()
        self._bump()

    async def _watch(self, replica: Replica, process: ServerProcess) -> None:
        """Ping a replica that has gone quiet; kill it once it is hung (see the module docstring)."""
        limit = self.spec.hung_after_s
        every = min(PING_EVERY_S, limit / 3)
        while not process.exited.is_set():
            await asyncio.sleep(every)
            if time.monotonic() - process.last_heard < every:
                continue  # it is talking: replies and notifications prove the loop runs
            cpu_before = process.cpu_seconds()
            try:
                await process.request("ping", {}, limit)
            except CallTimeout:
                await asyncio.sleep(0.1)  # a reply may be waiting in the pipe behind a busy gateway loop
                silent = time.monotonic() - process.last_heard
                working = process.cpu_seconds() - cpu_before > 0.05
                if silent >= limit * (BUSY_GRACE if working else 1) and not process.exited.is_set():
                    replica.hung = (
                        f"server answered nothing, not even a ping, for {silent:.0f} s "
                        f"({'busy in its protocol loop' if working else 'using no CPU'}: hung)"
                    )
                    logger.error("%s #%d %s; killing it", self.spec.id, replica.index, replica.hung)
                    process.kill()
                    return
            except (ServerGone, RemoteError):
                return

    # -- scaling -------------------------------------------------------------------------------

    async def _autoscale(self) -> None:
        pressured, calm_since = 0, time.monotonic()
        while not self._closing:
            await asyncio.sleep(SCALE_EVERY_S)
            active = self.active
            in_flight = sum(r.in_flight for r in active)
            spare = (len(active) - 1) * self.spec.max_in_flight / 2
            pressured = pressured + 1 if self._waiters else 0
            if self._waiters or in_flight > spare:
                calm_since = time.monotonic()
            if pressured >= SCALE_UP_AFTER_TICKS and self._can_grow(active):
                self._grow()
                pressured = 0
            elif len(active) > self.plan.minimum and time.monotonic() - calm_since > SCALE_DOWN_AFTER_S:
                if self._shrink():
                    calm_since = time.monotonic()

    def _can_grow(self, active: list[Replica]) -> bool:
        return (
            len(active) < self.plan.maximum
            and not any(r.state == "starting" for r in active)
            and room_for_a_replica()
        )

    def _grow(self) -> None:
        spare = next((r for r in self.replicas if not r.wanted and r.state == "stopped"), None)
        if spare is None:
            spare = Replica(len(self.replicas))
            self.replicas.append(spare)
        spare.wanted, spare.state, spare.crash_times = True, "starting", []
        logger.info(
            "%s: %d calls waiting; starting replica #%d", self.spec.id, len(self._waiters), spare.index
        )
        self._launch(spare)

    def _shrink(self) -> bool:
        """Retire the newest replica that holds no session's state; it finishes its calls first."""
        owners = {index for index, _ in self._affinity.values()}
        ready = [r for r in self.active if r.state == "ready" and r.index not in owners]
        if not ready:
            return False
        replica = max(ready, key=lambda r: r.index)
        replica.wanted, replica.state = False, "draining"
        logger.info(
            "%s: quiet for %.0f s; retiring replica #%d", self.spec.id, SCALE_DOWN_AFTER_S, replica.index
        )
        asyncio.create_task(self._drain(replica))
        return True

    async def _drain(self, replica: Replica) -> None:
        await self.until(lambda: replica.in_flight == 0)
        if replica.process is not None and not replica.wanted:
            await replica.process.stop()

    # -- calls ---------------------------------------------------------------------------------

    async def call(
        self, method: str, params: dict[str, Any], session: str | None, on_progress: Progress | None = None
    ) -> dict[str, Any]:
        """Forward one request to the right replica, within the server's timeout."""
        tool = str(params.get("name", method))
        deadline = time.monotonic() + self.spec.timeout
        replica, lost = await self._acquire(tool, session, deadline)
        process = replica.process
        assert process is not None
        started = time.monotonic()
        try:
            result = await process.request(method, params, max(0.001, deadline - started), on_progress)
            self.admission.record(tool, time.monotonic() - started)
        except RemoteError:
            self.admission.record(tool, time.monotonic() - started)
            raise
        except ServerGone as exc:
            raise PoolError(self._died_during_call(exc, session)) from None
        except CallTimeout:
            self.admission.record(tool, time.monotonic() - started)
            raise PoolError(
                f"{tool} on server {self.spec.id} timed out after {self.spec.timeout:g} s "
                "and was cancelled; try a smaller input, or raise this server's timeout in servers.toml."
            ) from None
        finally:
            replica.in_flight -= 1
            self._dispatch()
            self._bump()
        return _with_note(result, lost) if lost else result

    async def _acquire(self, tool: str, session: str | None, deadline: float) -> tuple[Replica, str | None]:
        # A free slot with calls waiting is one none of them may use (they wait for their own
        # replica): _dispatch hands out every other one as it frees up, so taking it is fair.
        if (replica := self._pick(session)) is not None:
            return replica, self._assign(replica, session)
        self._admit(tool, session, deadline)
        loop = asyncio.get_running_loop()
        waiter = Waiter(session, self.admission.enqueue(tool), loop.create_future())
        self._waiters.append(waiter)
        self._dispatch()
        self._bump()
        try:
            async with asyncio.timeout(max(0.001, deadline - time.monotonic())):
                return await waiter.future
        except (TimeoutError, asyncio.CancelledError) as exc:
            future = waiter.future
            if future.done() and not future.cancelled() and future.exception() is None:
                future.result()[0].in_flight -= 1  # a slot came just as the caller gave up: free it
                self._dispatch()
            if isinstance(exc, TimeoutError):
                raise PoolError(
                    f"{tool} on server {self.spec.id} waited {self.spec.timeout:g} s for a free replica; "
                    "retry later."
                ) from None
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
                self.admission.dequeue(waiter.cost)

    def _admit(self, tool: str, session: str | None, deadline: float) -> None:
        """Refuse at once a call that could not be served in time; raises Busy or PoolError."""
        if self.state == "failed":
            raise PoolError(self._unavailable_reason())
        slots = self._slots(session)
        if slots == 0:
            self.busy_answers += 1
            raise Busy(f"Server {self.spec.id} is {self.state}", 2, self.spec.id)
        queued = self._queued_for(session)
        retry = self.admission.refusal(tool, queued, slots, deadline - time.monotonic())
        if retry is not None:
            self.busy_answers += 1
            raise Busy(
                f"Server {self.spec.id} is busy: {queued:.1f} s of work is queued for its {slots} slots",
                retry,
                self.spec.id,
            )

    def _dispatch(self) -> None:
        """Hand free slots to waiting calls, first come first served (a session's own replica aside)."""
        if self.state == "failed":
            self._fail_waiters(self._unavailable_reason())
            return
        for waiter in list(self._waiters):
            if not any(r.state == "ready" and r.in_flight < self.spec.max_in_flight for r in self.replicas):
                return
            if waiter.future.done():
                continue
            replica = self._pick(waiter.session)
            if replica is None:
                continue
            self._waiters.remove(waiter)
            self.admission.dequeue(waiter.cost)
            waiter.future.set_result((replica, self._assign(replica, waiter.session)))

    def _fail_waiters(self, reason: str) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            self.admission.dequeue(waiter.cost)
            if not waiter.future.done():
                waiter.future.set_exception(PoolError(reason))

    def _owner(self, session: str | None) -> Replica | None:
        """The live replica that holds a stateful session's state, if it still does."""
        if session is None or not self.spec.stateful or session not in self._affinity:
            return None
        index, generation = self._affinity[session]
        owner = self.replicas[index]
        return owner if owner.state == "ready" and owner.generation == generation else None

    def _pick(self, session: str | None) -> Replica | None:
        owner = self._owner(session)
        if owner is not None:
            return owner if owner.in_flight < self.spec.max_in_flight else None
        ready = [r for r in self.replicas if r.state == "ready" and r.in_flight < self.spec.max_in_flight]
        return min(ready, key=lambda r: r.in_flight) if ready else None

    def _queued_for(self, session: str | None) -> float:
        """Seconds of queued work ahead of a call: all of it, or for a session held by one replica,
        what waits for that replica (or for any)."""
        owner = self._owner(session)
        if owner is None:
            return self.admission.queued_s
        return sum(w.cost for w in self._waiters if self._owner(w.session) in (owner, None))

    def _slots(self, session: str | None) -> int:
        owner = self._owner(session)
        if owner is not None:
            return self.spec.max_in_flight
        return self.spec.max_in_flight * sum(r.state == "ready" for r in self.replicas)

    def _assign(self, replica: Replica, session: str | None) -> str | None:
        """Take a slot; for a stateful session whose state a restart lost, the sentence that says so."""
        replica.in_flight += 1
        self._bump()
        if session is None or not self.spec.stateful:
            return None
        before = self._affinity.get(session)
        self._affinity[session] = (replica.index, replica.generation)
        if before is None or before == (replica.index, replica.generation):
            return None
        gone = self.replicas[before[0]]
        why = f" ({_for_agents(gone.last_error)})" if gone.last_error else ""
        return (
            f"[gaia-env] Server {self.spec.id} was restarted since this session's last call{why}: "
            f"the {self.spec.state} this session had there was lost and starts afresh."
        )

    def _died_during_call(self, exc: ServerGone, session: str | None) -> str:
        message = (
            f"Server {self.spec.id} stopped during the call ({_for_agents(str(exc))}); it is being restarted"
        )
        if session is not None and self.spec.stateful:
            self._affinity.pop(session, None)  # told now: the next call starts afresh without a second note
            return (
                f"{message}, and the {self.spec.state} this session had there was lost: retry, starting over."
            )
        return f"{message}; retry shortly."

    def _unavailable_reason(self) -> str:
        return (
            f"Server {self.spec.id} is unavailable: it keeps crashing ({_for_agents(self.last_error or '')}). "
            "Check `gaia-env doctor`."
        )

    def end_session(self, session: str) -> None:
        """Tell the one replica that holds the session's state (if any) to release it."""
        entry = self._affinity.pop(session, None)
        if entry is None:
            return
        replica = self.replicas[entry[0]]
        if (
            replica.generation == entry[1]
            and replica.process is not None
            and replica.state in ("ready", "draining")
        ):
            replica.process.notify(SESSION_ENDED, {"sessionId": session})


def _with_note(result: dict[str, Any], note: str) -> dict[str, Any]:
    return {**result, "content": [{"type": "text", "text": note}, *result.get("content", [])]}


def _reason(exc: BaseException, process: ServerProcess) -> str:
    if isinstance(exc, CallTimeout):
        return "no answer to initialize in time"
    if isinstance(exc, OSError):
        return f"could not run {process.argv[0]}: {exc.strerror or exc}"
    return str(exc) or process.last_words()


def _for_agents(detail: str) -> str:
    """A server's error as agents may read it: paths by their last name, never the host's folders
    (operators see the whole line in the log and on /ready)."""
    return HOST_PATH.sub("", detail)
