"""The replicas of one server, and the path of a call through them.

The jobs live in their own modules: supervision (supervisor.py) keeps each replica's process
running, the watchdog (watchdog.py) kills a hung one, scaling (scaling.py) decides when to add or
retire a replica, dispatch (dispatch.py) picks the replica and keeps the line of waiting calls, and
admission (admission.py) decides whether a call may wait in that line or is refused at once with a
busy answer saying when to retry. This module ties them together and words what a call is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from gaia_contract import SESSION_ENDED

from . import scaling
from .admission import Admission
from .capacity import ReplicaPlan, available_cores, replica_plan, room_for_a_replica
from .dispatch import Dispatch, Slot
from .errors import Busy
from .process import CallTimeout, Progress, RemoteError, ServerGone
from .registry import ServerSpec
from .replica import PoolState, Replica, ReplicaState, pool_state
from .supervisor import start_slots, supervise

logger = logging.getLogger("gaia_env.pool")

HOST_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"`]+/)+(?=[^\s/'\"`]*)")
"""An absolute path's folders (not a URL's): a server's last words name the host's layout."""


class PoolError(Exception):
    """A call failed at the gateway (its server died, it timed out); the message says what to do."""


class ServerPool:
    def __init__(
        self,
        spec: ServerSpec,
        env: Mapping[str, str],
        on_restart: Callable[[str], None] | None = None,
        plan: ReplicaPlan | None = None,
        starts: asyncio.Semaphore | None = None,
    ):
        self.spec = spec
        self.env = dict(env)
        self.plan = plan or replica_plan(spec, available_cores())
        self.starts = starts or start_slots(available_cores())
        """Turns to start a process, shared with the gateway's other pools (supervisor.py)."""
        self.replicas = [Replica(i) for i in range(self.plan.initial)]
        self.tools: list[dict[str, Any]] = []
        self.tools_version = 0
        self.admission = Admission(spec.max_queue_s)
        self.dispatch = Dispatch(self.replicas, spec.max_in_flight, spec.stateful)
        self.busy_answers = 0
        self.served = 0
        """Calls that finished on a replica (answered, failed or timed out): scaling's rate."""
        self._changed = asyncio.Event()
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._scaler: asyncio.Task[None] | None = None
        self._closing = False
        self._on_restart = on_restart

    # -- state ---------------------------------------------------------------------------------

    @property
    def active(self) -> list[Replica]:
        return [r for r in self.replicas if r.wanted]

    @property
    def state(self) -> PoolState:
        return pool_state(r.state for r in self.active)

    @property
    def waiting(self) -> int:
        return len(self.dispatch.waiters)

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
                if r.wanted or r.state is not ReplicaState.STOPPED
            ],
            "plan": {"min": self.plan.minimum, "max": self.plan.maximum},
            "tools": len(self.tools),
            "restarts": sum(r.restarts for r in self.replicas),
            "in_flight": sum(r.in_flight for r in self.replicas),
            "waiting": self.waiting,
            "queued_s": round(self.dispatch.queued_s, 2),
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
        settled = (ReplicaState.READY, ReplicaState.FAILED)
        with contextlib.suppress(TimeoutError):
            await self.until(lambda: all(r.state in settled or r.restarts for r in self.active), timeout)

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
            r.state = ReplicaState.STOPPED
        self.dispatch.fail_all(PoolError(f"Server {self.spec.id} is shutting down."))

    # -- supervision (supervisor.Supervised) ---------------------------------------------------

    async def _supervise(self, replica: Replica) -> None:
        await supervise(self.spec, self.env, replica, self, self.starts)
        if not self._closing:
            self.moved(replica, ReplicaState.STOPPED)

    def keeps(self, replica: Replica) -> bool:
        return not self._closing and replica.wanted

    def came_up(self, replica: Replica, tools: list[dict[str, Any]]) -> None:
        if tools != self.tools:
            self.tools, self.tools_version = tools, self.tools_version + 1
        self.moved(replica, ReplicaState.READY)

    def moved(self, replica: Replica, state: ReplicaState) -> None:
        replica.state = state
        self._hand_out()
        self._bump()

    def went_down(self, replica: Replica) -> None:
        if self._on_restart:
            self._on_restart(self.spec.id)

    # -- scaling -------------------------------------------------------------------------------

    async def _autoscale(self) -> None:
        scaler = scaling.Scaler(self.plan, self.spec.max_in_flight)
        while not self._closing:
            await asyncio.sleep(scaling.SCALE_EVERY_S)
            active = self.active
            load = scaling.Load(
                active=len(active),
                starting=any(r.state is ReplicaState.STARTING for r in active),
                waiting=self.waiting,
                in_flight=sum(r.in_flight for r in active),
                served=self.served,
            )
            decision = scaler.decide(load, time.monotonic(), room_for_a_replica)
            if decision is scaling.Scaling.GROW:
                self._grow()
            elif decision is scaling.Scaling.SHRINK and self._shrink(
                f"quiet for {scaling.SCALE_DOWN_AFTER_S:.0f} s"
            ):
                scaler.retired_one(time.monotonic())
            elif decision is scaling.Scaling.UNDO:
                self._shrink(
                    "the last replica added did not raise the rate of finished calls (no free core?); "
                    f"adding none for {scaling.HOLD_S:.0f} s"
                )

    def _grow(self) -> None:
        spare = next((r for r in self.replicas if not r.wanted and r.state is ReplicaState.STOPPED), None)
        if spare is None:
            spare = Replica(len(self.replicas))
            self.replicas.append(spare)
        spare.wanted, spare.state, spare.crash_times = True, ReplicaState.STARTING, []
        logger.info("%s: %d calls waiting; starting replica #%d", self.spec.id, self.waiting, spare.index)
        self._launch(spare)

    def _shrink(self, why: str) -> bool:
        """Retire the newest replica that holds no session's state; it finishes its calls first."""
        holders = self.dispatch.holders()
        idle = [r for r in self.active if r.ready and r.index not in holders]
        if not idle:
            return False
        replica = max(idle, key=lambda r: r.index)
        replica.wanted, replica.state = False, ReplicaState.DRAINING
        logger.info("%s: %s; retiring replica #%d", self.spec.id, why, replica.index)
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
        slot = await self._acquire(tool, session, deadline, self.admission.quick(tool))
        process = slot.replica.process
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
            self.served += 1
            self.dispatch.release(slot)
            self._bump()
        return _with_note(result, self._lost_note(slot.lost)) if slot.lost else result

    async def _acquire(self, tool: str, session: str | None, deadline: float, quick: bool) -> Slot:
        # A free slot with calls waiting is one none of them may use (they wait for their own
        # replica, or for a heavy slot): hand_out gives every other one away as it frees up.
        if (replica := self.dispatch.pick(session, quick)) is not None:
            slot = self.dispatch.take(replica, session, quick)
            self._bump()
            return slot
        self._admit(tool, session, deadline, quick)
        waiter = self.dispatch.wait(session, self.admission.cost(tool), quick)
        self._bump()
        try:
            async with asyncio.timeout(max(0.001, deadline - time.monotonic())):
                slot = await waiter.future
        except BaseException as exc:  # timed out or cancelled: out of the line, and no slot kept
            self.dispatch.leave(waiter)
            self._bump()
            if isinstance(exc, TimeoutError):
                raise PoolError(
                    f"{tool} on server {self.spec.id} waited {self.spec.timeout:g} s for a free replica; "
                    "retry later."
                ) from None
            raise
        self._bump()
        return slot

    def _admit(self, tool: str, session: str | None, deadline: float, quick: bool) -> None:
        """Refuse at once a call that could not be served in time; raises Busy or PoolError."""
        if self.state is PoolState.FAILED:
            raise PoolError(self._unavailable_reason())
        slots = self.dispatch.slots(session, quick)
        if slots == 0:
            self.busy_answers += 1
            raise Busy(f"Server {self.spec.id} is {self.state}", 2, self.spec.id)
        queued = self.dispatch.queued_for(session, quick)
        retry = self.admission.refusal(tool, queued, slots, deadline - time.monotonic())
        if retry is not None:
            self.busy_answers += 1
            raise Busy(
                f"Server {self.spec.id} is busy: {queued:.1f} s of work is queued for its {slots} slots",
                retry,
                self.spec.id,
            )

    def _hand_out(self) -> None:
        if self.state is PoolState.FAILED:
            self.dispatch.fail_all(PoolError(self._unavailable_reason()))
        else:
            self.dispatch.hand_out()

    def _lost_note(self, gone: Replica) -> str:
        """What a stateful session's call is told when a restart lost the state it had."""
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
            self.dispatch.forget(session)  # told now: the next call starts afresh without a second note
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
        replica = self.dispatch.forget(session)
        serving = (ReplicaState.READY, ReplicaState.DRAINING)
        if replica is not None and replica.process is not None and replica.state in serving:
            replica.process.notify(SESSION_ENDED, {"sessionId": session})


def _with_note(result: dict[str, Any], note: str) -> dict[str, Any]:
    return {**result, "content": [{"type": "text", "text": note}, *result.get("content", [])]}


def _for_agents(detail: str) -> str:
    """A server's error as agents may read it: paths by their last name, never the host's folders
    (operators see the whole line in the log and on /ready)."""
    return HOST_PATH.sub("", detail)
