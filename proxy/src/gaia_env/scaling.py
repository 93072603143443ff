"""Autoscaling on queue depth: when to add a replica and when to retire one.

Calls waiting at SCALE_UP_AFTER_TICKS checks in a row add a replica (up to the plan's maximum, one
starting at a time, while the machine has memory to spare); SCALE_DOWN_AFTER_S without calls
waiting and with the work in flight fitting in one replica fewer retires one (down to the minimum).

A new replica is on trial: once it is up, the pool's rate of finished calls over TRIAL_TICKS must
beat the rate before it by MIN_GAIN, or it is retired at once and no replica is added for HOLD_S.
A replica only helps when there is a core for it; on a machine whose cores are taken (other work,
a trainer) it would split the same CPU among more processes and serve less, and the queue alone
cannot tell the two cases apart. The decision is here; the pool carries it out.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from .capacity import ReplicaPlan

SCALE_EVERY_S = 2.0
SCALE_UP_AFTER_TICKS = 2
"""Calls waiting at this many scaling ticks in a row add a replica."""
SCALE_DOWN_AFTER_S = 60.0
"""A replica beyond the minimum is retired after this long without calls waiting."""
TRIAL_TICKS = 3
"""Ticks a new replica, once up, has to raise the rate of finished calls."""
MIN_GAIN = 1.1
"""The rate with the new replica must be at least this many times the rate before it."""
HOLD_S = 60.0
"""After a replica that did not help, no replica is added for this long."""


class Scaling(Enum):
    HOLD = "hold"
    GROW = "grow"
    SHRINK = "shrink"
    UNDO = "undo"
    """Retire the replica just added: it did not raise the rate of finished calls."""


@dataclass(frozen=True)
class Load:
    """What the pool looks like at one scaling tick."""

    active: int
    """Wanted replicas (ready, starting or restarting)."""
    starting: bool
    """A replica is starting: wait for it before adding another."""
    waiting: int
    in_flight: int
    served: int = 0
    """Calls finished since the pool started (a counter: the rate is its growth per tick)."""


@dataclass
class Trial:
    """A replica just added, and the rate of finished calls (per second) it has to beat."""

    before: float
    rates: list[float] = field(default_factory=list)


@dataclass
class Scaler:
    plan: ReplicaPlan
    max_in_flight: int
    pressured: int = 0
    """Ticks in a row that found calls waiting."""
    calm_since: float = field(default_factory=time.monotonic)
    trial: Trial | None = None
    hold_until: float = 0.0
    rates: deque[float] = field(default_factory=lambda: deque(maxlen=SCALE_UP_AFTER_TICKS))
    """The rates of finished calls at the last ticks."""
    _last: tuple[float, int] | None = None

    def decide(self, load: Load, now: float, room: Callable[[], bool]) -> Scaling:
        """One tick; `room()` says whether the machine has memory for another replica."""
        rate = self._rate(load, now)
        spare = (load.active - 1) * self.max_in_flight / 2
        self.pressured = self.pressured + 1 if load.waiting else 0
        if load.waiting or load.in_flight > spare:
            self.calm_since = now
        if self.trial is not None:
            return self._judge(load, now, rate)
        if self.pressured >= SCALE_UP_AFTER_TICKS and self._can_grow(load, now) and room():
            self.pressured = 0
            self.trial = Trial(before=statistics.fmean(self.rates) if self.rates else 0.0)
            return Scaling.GROW
        if load.active > self.plan.minimum and now - self.calm_since > SCALE_DOWN_AFTER_S:
            return Scaling.SHRINK
        return Scaling.HOLD

    def retired_one(self, now: float) -> None:
        """A replica was retired: the next one waits another quiet period."""
        self.calm_since = now

    def _rate(self, load: Load, now: float) -> float | None:
        last, self._last = self._last, (now, load.served)
        if last is None or now <= last[0]:
            return None
        rate = (load.served - last[1]) / (now - last[0])
        self.rates.append(rate)
        return rate

    def _judge(self, load: Load, now: float, rate: float | None) -> Scaling:
        """The new replica's trial: counted once it is up; retired when it did not raise the rate."""
        assert self.trial is not None
        if load.starting or rate is None:
            return Scaling.HOLD
        self.trial.rates.append(rate)
        if len(self.trial.rates) < TRIAL_TICKS:
            return Scaling.HOLD
        trial, self.trial = self.trial, None
        if statistics.fmean(trial.rates) >= trial.before * MIN_GAIN or load.active <= self.plan.minimum:
            return Scaling.HOLD
        self.hold_until = now + HOLD_S
        return Scaling.UNDO

    def _can_grow(self, load: Load, now: float) -> bool:
        return load.active < self.plan.maximum and not load.starting and now >= self.hold_until
