"""Admission control: queue a call only when it will be served in time, else say when to retry.

The queue is measured in seconds of work, not in calls: each tool's cost is the moving average of
how long its calls took on a replica, and the wait a new call faces is the queued work divided by
the slots that serve it. Past `max_queue_s` (or past the call's own deadline) the call is refused
at once with a busy answer that says when the queue will have room again.

A tool whose measured cost is at most QUICK_CALL_S is quick: its calls do not wait for the slots a
CPU-bound server keeps for heavy work (dispatch.py gives them slots of their own), since a few
milliseconds beside four heavy calls take nothing from them. A tool is slow until its first call
has been measured, so a burst of calls to a new tool never floods a server.
"""

from __future__ import annotations

import math

SMOOTHING = 0.2
"""Weight of the newest call in a tool's moving average."""
DEFAULT_COST_S = 0.05
"""A tool's cost before its first call finishes."""
MAX_RETRY_AFTER_S = 30
QUICK_CALL_S = 0.05
"""A tool whose calls take this long or less on average is quick (see the module docstring)."""


class Admission:
    def __init__(self, max_queue_s: float):
        self.max_queue_s = max_queue_s
        self.costs: dict[str, float] = {}

    def cost(self, tool: str) -> float:
        known = self.costs.get(tool)
        if known is not None:
            return known
        return sum(self.costs.values()) / len(self.costs) if self.costs else DEFAULT_COST_S

    def quick(self, tool: str) -> bool:
        known = self.costs.get(tool)
        return known is not None and known <= QUICK_CALL_S

    def record(self, tool: str, seconds: float) -> None:
        previous = self.costs.get(tool)
        self.costs[tool] = seconds if previous is None else previous + SMOOTHING * (seconds - previous)

    def refusal(self, tool: str, queued_s: float, slots: int, time_left_s: float) -> int | None:
        """Seconds after which to retry, when a call queued behind `queued_s` seconds of work for
        `slots` slots would wait too long; else None."""
        wait = queued_s / max(1, slots)
        if slots > 0 and wait <= self.max_queue_s and wait + self.cost(tool) <= time_left_s:
            return None
        # By then the queue has drained to half its limit: room for this call and its peers.
        drained_by = wait - self.max_queue_s / 2 if slots > 0 else 1.0
        return max(1, min(MAX_RETRY_AFTER_S, math.ceil(drained_by)))
