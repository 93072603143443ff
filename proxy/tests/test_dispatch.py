"""Slot dispatch without processes: replicas are plain records, calls are slots taken and released."""

from __future__ import annotations

import pytest
from gaia_env.dispatch import QUICK_IN_FLIGHT, Dispatch
from gaia_env.replica import Replica, ReplicaState

pytestmark = pytest.mark.anyio


def ready(count: int) -> list[Replica]:
    return [Replica(i, ReplicaState.READY, generation=1) for i in range(count)]


async def test_calls_go_to_the_least_busy_ready_replica() -> None:
    replicas = ready(3)
    replicas[2].state = ReplicaState.RESTARTING
    dispatch = Dispatch(replicas, max_in_flight=2, stateful=False)
    taken = [dispatch.take(dispatch.pick(None), None).replica.index for _ in range(4)]
    assert sorted(taken) == [0, 0, 1, 1] and dispatch.pick(None) is None
    assert dispatch.slots(None) == 4


async def test_a_stateful_session_sticks_to_its_replica_and_waits_for_it() -> None:
    replicas = ready(2)
    dispatch = Dispatch(replicas, max_in_flight=1, stateful=True)
    held = dispatch.take(dispatch.pick("s"), "s")
    home = held.replica
    other = replicas[1 - home.index]
    assert dispatch.pick("s") is None  # its replica is full; the other one is not its home
    assert dispatch.pick("t") is other and dispatch.slots("s") == 1
    waiter = dispatch.wait("s", cost=0.5)
    dispatch.release(held)
    assert (await waiter.future).replica is home and waiter.future.result().lost is None


async def test_a_restart_moves_the_session_and_says_what_was_lost() -> None:
    replicas = ready(1)
    dispatch = Dispatch(replicas, max_in_flight=4, stateful=True)
    dispatch.release(dispatch.take(dispatch.pick("s"), "s"))
    replicas[0].generation += 1  # a new process: the old one's state is gone
    assert dispatch.owner("s") is None
    slot = dispatch.take(dispatch.pick("s"), "s")
    assert slot.lost is replicas[0]
    assert dispatch.take(dispatch.pick("s"), "s").lost is None  # told once


async def test_freed_slots_go_to_the_line_first_come_first_served() -> None:
    replicas = ready(1)
    dispatch = Dispatch(replicas, max_in_flight=1, stateful=False)
    first = dispatch.take(dispatch.pick(None), None)
    waiters = [dispatch.wait(None, cost=0.25) for _ in range(3)]
    assert dispatch.queued_s == 0.75 and dispatch.queued_for(None) == 0.75
    dispatch.release(first)
    assert [w.future.done() for w in waiters] == [True, False, False]
    assert dispatch.queued_s == 0.5


async def test_a_session_waiting_for_its_replica_does_not_hold_up_the_others() -> None:
    replicas = ready(2)
    dispatch = Dispatch(replicas, max_in_flight=1, stateful=True)
    dispatch.take(dispatch.pick("s"), "s")
    other = dispatch.take(dispatch.pick(None), None)
    mine, anyone = dispatch.wait("s", 1.0), dispatch.wait(None, 1.0)
    assert dispatch.queued_for("s") == 2.0  # its own replica's line and the line for any
    dispatch.release(other)
    assert not mine.future.done() and (await anyone.future).replica is other.replica


async def test_a_caller_that_gives_up_leaves_the_line_and_gives_back_a_slot_it_just_got() -> None:
    replicas = ready(1)
    dispatch = Dispatch(replicas, max_in_flight=1, stateful=False)
    busy = dispatch.take(dispatch.pick(None), None)
    gave_up, late = dispatch.wait(None, 1.0), dispatch.wait(None, 1.0)
    dispatch.leave(gave_up)
    assert list(dispatch.waiters) == [late] and dispatch.queued_s == 1.0
    dispatch.release(busy)
    assert late.future.done() and busy.replica.in_flight == 1
    dispatch.leave(late)  # the slot came just as its caller gave up
    assert busy.replica.in_flight == 0


async def test_a_cancelled_caller_still_in_line_is_skipped() -> None:
    replicas = ready(1)
    dispatch = Dispatch(replicas, max_in_flight=1, stateful=False)
    busy = dispatch.take(dispatch.pick(None), None)
    cancelled, next_one = dispatch.wait(None, 1.0), dispatch.wait(None, 1.0)
    cancelled.future.cancel()
    dispatch.release(busy)
    assert next_one.future.done() and not dispatch.waiters


async def test_fail_all_answers_every_waiter_with_the_error() -> None:
    dispatch = Dispatch(ready(1), max_in_flight=0, stateful=False)
    waiters = [dispatch.wait(None, 1.0) for _ in range(2)]
    dispatch.fail_all(RuntimeError("server x is unavailable"))
    for waiter in waiters:
        with pytest.raises(RuntimeError, match="unavailable"):
            await waiter.future
    assert dispatch.queued_s == 0 and not dispatch.waiters


async def test_ending_a_session_names_the_replica_that_holds_its_state() -> None:
    replicas = ready(2)
    dispatch = Dispatch(replicas, max_in_flight=2, stateful=True)
    home = dispatch.take(dispatch.pick("s"), "s").replica
    assert dispatch.holders() == {home.index}
    assert dispatch.forget("s") is home and dispatch.forget("s") is None
    dispatch.take(dispatch.pick("t"), "t")
    replicas[0].generation = replicas[1].generation = 5
    assert dispatch.forget("t") is None  # its process is gone: nothing to tell


async def test_quick_calls_do_not_wait_for_a_cpu_bound_servers_heavy_slots() -> None:
    replicas = ready(1)
    dispatch = Dispatch(replicas, max_in_flight=4, stateful=False)
    heavy = [dispatch.take(dispatch.pick(None), None) for _ in range(4)]
    assert dispatch.pick(None) is None and dispatch.slots(None) == 4
    quick = [
        dispatch.take(dispatch.pick(None, quick=True), None, quick=True) for _ in range(QUICK_IN_FLIGHT - 4)
    ]
    assert dispatch.pick(None, quick=True) is None and dispatch.slots(None, quick=True) == QUICK_IN_FLIGHT
    assert replicas[0].in_flight == QUICK_IN_FLIGHT and replicas[0].quick_in_flight == QUICK_IN_FLIGHT - 4
    for slot in quick:
        dispatch.release(slot)
    assert dispatch.pick(None) is None  # heavy work is still four calls
    dispatch.release(heavy[0])
    assert dispatch.pick(None) is replicas[0]


async def test_quick_calls_in_line_pass_heavy_ones_waiting_for_a_heavy_slot() -> None:
    replicas = ready(1)
    dispatch = Dispatch(replicas, max_in_flight=1, stateful=False)
    dispatch.quick_limit = 2  # one slot beside the heavy one, to fill it here
    dispatch.take(dispatch.pick(None), None)
    first_quick = dispatch.take(dispatch.pick(None, quick=True), None, quick=True)
    heavy, quick = dispatch.wait(None, 2.0), dispatch.wait(None, 0.01, quick=True)
    assert dispatch.queued_for(None, quick=True) == 0.01 and dispatch.queued_for(None) == 2.01
    dispatch.release(first_quick)
    assert quick.future.done() and not heavy.future.done()
    assert quick.future.result().quick and dispatch.quick_waiting == 0


async def test_a_server_that_allows_more_than_the_quick_limit_keeps_its_own() -> None:
    dispatch = Dispatch(ready(1), max_in_flight=64, stateful=False)
    assert dispatch.slots(None) == dispatch.slots(None, quick=True) == 64
