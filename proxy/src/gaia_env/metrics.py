"""Prometheus metrics: calls, errors, latency, in-flight and restarts, per server and tool."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "gaia_env_tool_calls",
            "Tool calls by outcome (ok, tool_error, gateway_error).",
            ["server", "tool", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gaia_env_tool_call_seconds",
            "Tool call latency through the gateway.",
            ["server", "tool"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "gaia_env_tool_calls_in_flight",
            "Tool calls being served now.",
            ["server"],
            registry=self.registry,
        )
        self.restarts = Counter(
            "gaia_env_server_restarts", "Server process restarts.", ["server"], registry=self.registry
        )
        self.sessions = Gauge("gaia_env_sessions", "Sessions with a workspace.", registry=self.registry)
        self.max_sessions = Gauge(
            "gaia_env_sessions_max", "GAIA_MAX_SESSIONS (0: no limit).", registry=self.registry
        )
        self.free_disk = Gauge(
            "gaia_env_disk_free_bytes", "Free space on the workspace root's disk.", registry=self.registry
        )
        self.min_free_disk = Gauge(
            "gaia_env_disk_min_free_bytes",
            "GAIA_MIN_FREE_DISK_MB in bytes: below it new workspaces are refused.",
            registry=self.registry,
        )
        self.sessions_refused = Counter(
            "gaia_env_sessions_refused",
            "New sessions refused, by reason (max_sessions, per_client, max_unused, disk_floor).",
            ["reason"],
            registry=self.registry,
        )
        self.paid_calls = Counter(
            "gaia_env_paid_calls",
            "Requests sent to paid backends (costs.py).",
            ["backend"],
            registry=self.registry,
        )
        self.paid_tokens = Counter(
            "gaia_env_paid_tokens",
            "Tokens paid backends reported, by kind (input, output).",
            ["backend", "kind"],
            registry=self.registry,
        )
        self.paid_bytes = Counter(
            "gaia_env_paid_bytes",
            "Bytes sent to paid backends priced by size.",
            ["backend"],
            registry=self.registry,
        )
        self.cost = Counter(
            "gaia_env_cost_usd",
            "Spent on paid backends, priced by the price table.",
            ["backend"],
            registry=self.registry,
        )
        self.budget_refusals = Counter(
            "gaia_env_budget_refusals",
            "Paid calls refused because the session's budget was spent.",
            ["backend"],
            registry=self.registry,
        )
        self.withheld = Counter(
            "gaia_env_withheld",
            "Results the benchmark-copy guard withheld, by reason (quotes_task, mirror).",
            ["server", "tool", "reason"],
            registry=self.registry,
        )
        for reason in ("max_sessions", "per_client", "max_unused", "disk_floor"):
            self.sessions_refused.labels(reason)  # every series exists from the start, at 0

    def watch_sessions(
        self, count: Callable[[], int], free_disk: Callable[[], int], max_sessions: int, min_free_mb: int
    ) -> None:
        """The session count and free disk are read at each scrape, not only when a call ends."""
        self.sessions.set_function(count)
        self.free_disk.set_function(free_disk)
        self.max_sessions.set(max_sessions)
        self.min_free_disk.set(min_free_mb * 2**20)

    def render(self) -> bytes:
        return generate_latest(self.registry)
