"""Prometheus metrics: calls, errors, latency, in-flight and restarts, per server and tool."""

from __future__ import annotations

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

    def render(self) -> bytes:
        return generate_latest(self.registry)
