"""How many replicas each server runs: the plan at start, and the bounds scaling stays within.

A Python server does its CPU work on one core (the GIL), so a replica per core is the most that
helps; `replicas = "auto"` starts at `min_replicas` and lets queue depth, which is measured cost
times demand, add replicas up to that bound (docs/gateway.md, "Capacity").
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import psutil

from .registry import AUTO, ServerSpec

MEMORY_FLOOR_BYTES = 1 << 30
"""No replica is added while the machine has less memory than this available."""


@dataclass(frozen=True)
class ReplicaPlan:
    initial: int
    minimum: int
    maximum: int

    @property
    def fixed(self) -> bool:
        return self.minimum == self.maximum

    def describe(self) -> str:
        if self.fixed:
            return f"{self.initial} (fixed)"
        return f"{self.initial} (scales {self.minimum}-{self.maximum} on queue depth)"


def available_cores() -> int:
    """The cores this process may use: its CPU affinity, and a cgroup quota (containers) if lower."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def replica_plan(spec: ServerSpec, cores: int) -> ReplicaPlan:
    """Explicit numbers win; "auto" means from min_replicas (default 1) up to one per core."""
    fixed = spec.replicas if isinstance(spec.replicas, int) else None
    minimum = spec.min_replicas or fixed or 1
    if spec.max_replicas is None:
        maximum = fixed or max(cores, minimum)
    elif spec.max_replicas == AUTO:
        maximum = max(cores, minimum)
    else:
        maximum = int(spec.max_replicas)
    initial = min(max(fixed or minimum, minimum), maximum)
    return ReplicaPlan(initial, min(minimum, maximum), maximum)


def room_for_a_replica() -> bool:
    return psutil.virtual_memory().available > MEMORY_FLOOR_BYTES


def format_plan(plans: dict[str, ReplicaPlan], cores: int) -> str:
    width = max((len(sid) for sid in plans), default=0)
    lines = [f"replica plan on {cores} core(s):"]
    lines += [f"  {sid:<{width}}  {plan.describe()}" for sid, plan in plans.items()]
    return "\n".join(lines)
