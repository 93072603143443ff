"""The scaling decision on its own: ticks of a made-up load, with the clock given."""

from __future__ import annotations

from gaia_env.capacity import ReplicaPlan
from gaia_env.scaling import SCALE_DOWN_AFTER_S, TRIAL_TICKS, Load, Scaler, Scaling


def scaler() -> Scaler:
    return Scaler(ReplicaPlan(initial=1, minimum=1, maximum=3), max_in_flight=4, calm_since=0.0)


def test_calls_waiting_at_two_ticks_in_a_row_add_a_replica() -> None:
    s = scaler()
    pressed = Load(active=1, starting=False, waiting=3, in_flight=4)
    assert s.decide(pressed, 1.0, lambda: True) is Scaling.HOLD
    assert s.decide(Load(1, False, 0, 4), 2.0, lambda: True) is Scaling.HOLD  # the line emptied: count anew
    assert s.decide(pressed, 3.0, lambda: True) is Scaling.HOLD
    assert s.decide(pressed, 4.0, lambda: True) is Scaling.GROW
    assert s.decide(pressed, 5.0, lambda: True) is Scaling.HOLD  # counted anew after growing


def test_no_replica_is_added_past_the_maximum_while_one_starts_or_without_memory() -> None:
    for load, room in (
        (Load(active=3, starting=False, waiting=9, in_flight=12), True),
        (Load(active=2, starting=True, waiting=9, in_flight=8), True),
        (Load(active=1, starting=False, waiting=9, in_flight=4), False),
    ):
        s = scaler()
        assert [s.decide(load, t, lambda room=room: room) for t in (1.0, 2.0, 3.0)] == [Scaling.HOLD] * 3


def test_a_quiet_period_retires_one_replica_at_a_time_down_to_the_minimum() -> None:
    s = scaler()
    quiet = Load(active=2, starting=False, waiting=0, in_flight=1)
    assert s.decide(quiet, SCALE_DOWN_AFTER_S - 1, lambda: True) is Scaling.HOLD
    assert s.decide(quiet, SCALE_DOWN_AFTER_S + 1, lambda: True) is Scaling.SHRINK
    s.retired_one(SCALE_DOWN_AFTER_S + 1)
    assert s.decide(quiet, SCALE_DOWN_AFTER_S + 2, lambda: True) is Scaling.HOLD
    at_minimum = Load(active=1, starting=False, waiting=0, in_flight=0)
    assert s.decide(at_minimum, 10 * SCALE_DOWN_AFTER_S, lambda: True) is Scaling.HOLD


def test_work_that_needs_every_replica_is_not_quiet() -> None:
    s = scaler()
    # 2 replicas x 4 slots: more than half a replica's slots in flight beyond the first keeps both.
    busy = Load(active=2, starting=False, waiting=0, in_flight=3)
    assert s.decide(busy, SCALE_DOWN_AFTER_S + 1, lambda: True) is Scaling.HOLD


def grown(s: Scaler, rate: float) -> float:
    """Ticks at `rate` calls/s with calls waiting until the scaler adds a replica; the clock after."""
    served, now = 0, 0.0
    for _ in range(5):
        now += 2.0
        served += int(rate * 2)
        if (
            s.decide(Load(1, False, waiting=10, in_flight=4, served=served), now, lambda: True)
            is Scaling.GROW
        ):
            s._last = (now, served)
            return now
    raise AssertionError("no replica was added")


def trial(s: Scaler, now: float, rate: float, ticks: int) -> list[Scaling]:
    served = s._last[1]
    decisions = [s.decide(Load(2, True, waiting=10, in_flight=8, served=served), now + 1, lambda: True)]
    now += 1
    for _ in range(ticks):
        now += 2.0
        served += int(rate * 2)
        decisions.append(s.decide(Load(2, False, waiting=10, in_flight=8, served=served), now, lambda: True))
    return decisions


def test_a_replica_that_raises_the_rate_of_finished_calls_stays() -> None:
    s = scaler()
    now = grown(s, rate=100)
    assert trial(s, now, rate=180, ticks=TRIAL_TICKS) == [Scaling.HOLD] * (TRIAL_TICKS + 1)
    assert s.trial is None and s.hold_until == 0.0


def test_a_replica_that_does_not_raise_it_is_undone_and_none_is_added_for_a_while() -> None:
    s = scaler()
    now = grown(s, rate=100)
    decisions = trial(s, now, rate=95, ticks=TRIAL_TICKS)  # no free core: the same CPU, split
    assert decisions[-1] is Scaling.UNDO and set(decisions[:-1]) == {Scaling.HOLD}
    pressed = Load(1, False, waiting=10, in_flight=4, served=10**6)
    assert s.decide(pressed, s.hold_until - 1, lambda: True) is Scaling.HOLD
    assert s.decide(pressed, s.hold_until + 1, lambda: True) is Scaling.GROW
