"""Slot dispatch: which replica serves a call, and the line of calls waiting for a slot.

Each ready replica serves up to `max_in_flight` calls at once, and quick calls (admission.py) beside
them up to QUICK_IN_FLIGHT in all: on a CPU-bound server (`max_in_flight = 4`) a call that takes a
few milliseconds does not wait for a heavy call to finish. A call of a stateful server's session
goes to the replica that holds the session's state (affinity), as long as that process lives;
any other call goes to the least busy ready replica. A call that finds no free slot waits in line,
first come first served, except that a call waiting for its session's replica lets the calls
behind it take the other replicas' slots.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from .replica import Replica

QUICK_IN_FLIGHT = 32
"""Calls a replica serves at once when those beyond its max_in_flight are quick."""


@dataclass
class Waiter:
    session: str | None
    quick: bool
    cost: float
    """Seconds of work the call is expected to take (admission.py), counted in the line's length."""
    future: asyncio.Future[Slot]


@dataclass(frozen=True)
class Slot:
    """A slot taken on `replica`; `lost` is the replica whose process held the session's state
    before a restart or a move, when the call must be told that state is gone."""

    replica: Replica
    quick: bool = False
    lost: Replica | None = None


class Dispatch:
    def __init__(self, replicas: list[Replica], max_in_flight: int, stateful: bool):
        self.replicas = replicas
        """The pool's own list: scaling appends to it."""
        self.max_in_flight = max_in_flight
        self.quick_limit = max(max_in_flight, QUICK_IN_FLIGHT)
        self.stateful = stateful
        self.waiters: deque[Waiter] = deque()
        self.queued_s = 0.0
        """Seconds of work waiting in line."""
        self.quick_waiting = 0
        self.affinity: dict[str, tuple[int, int]] = {}
        """session -> (replica index, generation) of the process that holds its state."""

    # -- where a call goes ---------------------------------------------------------------------

    def owner(self, session: str | None) -> Replica | None:
        """The live replica that holds a stateful session's state, if it still does."""
        if session is None or not self.stateful or session not in self.affinity:
            return None
        index, generation = self.affinity[session]
        owner = self.replicas[index]
        return owner if owner.ready and owner.generation == generation else None

    def pick(self, session: str | None, quick: bool = False) -> Replica | None:
        """The replica with a free slot for the session's next call, or None."""
        owner = self.owner(session)
        if owner is not None:
            return owner if self._free(owner, quick) else None
        ready = [r for r in self.replicas if r.ready and self._free(r, quick)]
        return min(ready, key=lambda r: r.in_flight) if ready else None

    def slots(self, session: str | None, quick: bool = False) -> int:
        """How many slots serve the session's calls: its replica's, or every ready replica's."""
        per_replica = self.quick_limit if quick else self.max_in_flight
        if self.owner(session) is not None:
            return per_replica
        return per_replica * sum(r.ready for r in self.replicas)

    def queued_for(self, session: str | None, quick: bool = False) -> float:
        """Seconds of work in line ahead of a call: all of it (for a quick call, the quick calls'),
        or for a session held by one replica, what waits for that replica (or for any)."""
        owner = self.owner(session)
        if owner is None and not quick:
            return self.queued_s
        return sum(
            w.cost
            for w in self.waiters
            if (w.quick or not quick) and (owner is None or self.owner(w.session) in (owner, None))
        )

    def take(self, replica: Replica, session: str | None, quick: bool = False) -> Slot:
        """Take a slot on `replica` for the session's call, and move the session's affinity there."""
        replica.in_flight += 1
        replica.quick_in_flight += quick
        if session is None or not self.stateful:
            return Slot(replica, quick)
        before = self.affinity.get(session)
        self.affinity[session] = (replica.index, replica.generation)
        if before is None or before == (replica.index, replica.generation):
            return Slot(replica, quick)
        return Slot(replica, quick, self.replicas[before[0]])

    def release(self, slot: Slot) -> None:
        slot.replica.in_flight -= 1
        slot.replica.quick_in_flight -= slot.quick
        self.hand_out()

    def forget(self, session: str) -> Replica | None:
        """Drop the session's affinity; the replica whose current process holds its state, if any."""
        entry = self.affinity.pop(session, None)
        if entry is None:
            return None
        replica = self.replicas[entry[0]]
        return replica if replica.generation == entry[1] else None

    def holders(self) -> set[int]:
        """Indexes of the replicas that hold some session's state."""
        return {index for index, _ in self.affinity.values()}

    # -- the line --------------------------------------------------------------------------------

    def wait(self, session: str | None, cost: float, quick: bool = False) -> Waiter:
        """Join the line; the waiter's future gets a Slot when one frees up."""
        waiter = Waiter(session, quick, cost, asyncio.get_running_loop().create_future())
        self.waiters.append(waiter)
        self.queued_s += cost
        self.quick_waiting += quick
        self.hand_out()
        return waiter

    def leave(self, waiter: Waiter) -> None:
        """A waiter gave up (timeout, cancel): out of the line, and a slot handed to it goes back."""
        if waiter in self.waiters:
            self._remove(waiter)
            return
        future = waiter.future
        if future.done() and not future.cancelled() and future.exception() is None:
            self.release(future.result())  # a slot came just as the caller gave up

    def hand_out(self) -> None:
        """Give free slots to waiting calls, first come first served (a session's own replica aside)."""
        if not self.waiters:
            return
        for waiter in list(self.waiters):
            if not self._room(quick=False) and not (self.quick_waiting and self._room(quick=True)):
                return
            if waiter.future.done():  # its caller was cancelled and has not left the line yet
                self._remove(waiter)
                continue
            replica = self.pick(waiter.session, waiter.quick)
            if replica is None:
                continue
            self._remove(waiter)
            waiter.future.set_result(self.take(replica, waiter.session, waiter.quick))

    def fail_all(self, error: Exception) -> None:
        while self.waiters:
            waiter = self.waiters[0]
            self._remove(waiter)
            if not waiter.future.done():
                waiter.future.set_exception(error)

    def _remove(self, waiter: Waiter) -> None:
        self.waiters.remove(waiter)
        self.queued_s = max(0.0, self.queued_s - waiter.cost)
        self.quick_waiting -= waiter.quick

    def _free(self, replica: Replica, quick: bool) -> bool:
        """A slot for a call of this kind: heavy calls count only heavy calls against max_in_flight."""
        if replica.in_flight >= self.quick_limit:
            return False
        return quick or replica.in_flight - replica.quick_in_flight < self.max_in_flight

    def _room(self, quick: bool) -> bool:
        return any(r.ready and self._free(r, quick) for r in self.replicas)
