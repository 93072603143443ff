"""Autoscaling on queue depth: when to add a replica and when to retire one.

Calls waiting at SCALE_UP_AFTER_TICKS checks in a row add a replica (up to the plan's maximum, one
starting at a time, while the machine has memory to spare); SCALE_DOWN_AFTER_S without calls
waiting and with the work in flight fitting in one replica fewer retires one (down to the minimum).
The decision is here; the pool carries it out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from .capacity import ReplicaPlan

SCALE_EVERY_S = 2.0
SCALE_UP_AFTER_TICKS = 2
"""Calls waiting at this many scaling ticks in a row add a replica."""
SCALE_DOWN_AFTER_S = 60.0
"""A replica beyond the minimum is retired after this long without calls waiting."""


class Scaling(Enum):
    HOLD = "hold"
    GROW = "grow"
    SHRINK = "shrink"


@dataclass(frozen=True)
class Load:
    """What the pool looks like at one scaling tick."""

    active: int
    """Wanted replicas (ready, starting or restarting)."""
    starting: bool
    """A replica is starting: wait for it before adding another."""
    waiting: int
    in_flight: int


@dataclass
class Scaler:
    plan: ReplicaPlan
    max_in_flight: int
    pressured: int = 0
    """Ticks in a row that found calls waiting."""
    calm_since: float = field(default_factory=time.monotonic)

    def decide(self, load: Load, now: float, room: Callable[[], bool]) -> Scaling:
        """One tick; `room()` says whether the machine has memory for another replica."""
        spare = (load.active - 1) * self.max_in_flight / 2
        self.pressured = self.pressured + 1 if load.waiting else 0
        if load.waiting or load.in_flight > spare:
            self.calm_since = now
        if self.pressured >= SCALE_UP_AFTER_TICKS and self._can_grow(load) and room():
            self.pressured = 0
            return Scaling.GROW
        if load.active > self.plan.minimum and now - self.calm_since > SCALE_DOWN_AFTER_S:
            return Scaling.SHRINK
        return Scaling.HOLD

    def retired_one(self, now: float) -> None:
        """A replica was retired: the next one waits another quiet period."""
        self.calm_since = now

    def _can_grow(self, load: Load) -> bool:
        return load.active < self.plan.maximum and not load.starting
