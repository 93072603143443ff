"""The gateway under a property-based fuzzer (gaia_kit_testing.fuzz), bounded for `make test`.

Every answer, on both fronts (bare POSTs and MCP sessions): never a 5xx, never later than the call's
deadline, always one well-formed JSON-RPC error or result; every registered tool gets arguments
generated from its schema and mutated; the gateway's memory stays bounded over the run. The
examples are derandomized, so a failure here reproduces; benchmarks/fuzz_gateway.py runs longer
and random.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import httpx
import psutil
import pytest
from gaia_env.registry import DEFAULT_REGISTRY
from gaia_kit_testing import fuzz
from gaia_kit_testing.gateway import RunningGateway
from hypothesis import HealthCheck, example, given, settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

RAW_EXAMPLES = int(os.environ.get("GAIA_FUZZ_RAW_EXAMPLES", "150"))
TOOL_EXAMPLES = int(os.environ.get("GAIA_FUZZ_TOOL_EXAMPLES", "4"))
"""Calls per registered tool, spread over the fronts."""
MEMORY_GROWTH_MB = 150


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    running = fuzz.start_fuzz_gateway(tmp_path_factory.mktemp("fuzz"), DEFAULT_REGISTRY)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def fronts(gateway: RunningGateway) -> list[fuzz.Front]:
    return fuzz.fronts(gateway)


def rss_mb(gateway: RunningGateway) -> float:
    return psutil.Process(gateway.proc.pid).memory_info().rss / 2**20


@pytest.fixture(scope="module")
def memory(gateway: RunningGateway) -> Iterator[list[float]]:
    """The gateway process's RSS after a warm-up, then after each test of this module."""
    samples = [rss_mb(gateway)]
    yield samples


def test_raw_bodies_on_both_fronts(gateway: RunningGateway, fronts: list[fuzz.Front], memory) -> None:
    @fuzz_settings(RAW_EXAMPLES)
    @given(body=fuzz.raw_bodies())
    @example(body=fuzz.nested(5000))  # issue 17: this was HTTP 500
    @example(body=fuzz.nested(5000, "{"))
    def answered(body: bytes) -> None:
        for front in fronts:
            fuzz.check_answer(fuzz.post(gateway, front, body, timeout=30), body)

    answered()
    memory.append(rss_mb(gateway))


def test_every_tool_with_generated_and_mutated_arguments(
    gateway: RunningGateway, fronts: list[fuzz.Front], memory
) -> None:
    tools = fuzz.listed_tools(gateway)
    assert len(tools) >= 126, [t["name"] for t in tools]
    cases: list[fuzz.ToolCase] = []
    for tool in tools:
        cases += fuzz.generated_calls(tool, fronts, fuzz_settings(TOOL_EXAMPLES))
    started = time.monotonic()
    outcomes = fuzz.run_tool_cases(gateway, cases, workers=8)
    print(f"{fuzz.summary(outcomes)}; {time.monotonic() - started:.1f} s in all")
    assert len(outcomes) == len(cases) >= len(tools)
    reached = {o.case.tool for o in outcomes if o.kind in ("ok", "tool error")}
    assert len(reached) > len(tools) / 2, "most tools should see arguments that pass the gateway's validation"
    assert gateway.status()["ready"], gateway.status()
    memory.append(rss_mb(gateway))


def test_oversized_slow_and_stalled_bodies(gateway: RunningGateway, memory) -> None:
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (3 * 2**20) + b'"}}'
    reply = fuzz.post(gateway, fuzz.Front("bare", {}), big, timeout=30)
    assert reply.status_code == 413 and reply.json()["error"]["code"] == -32600
    ping = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'
    status, body = fuzz.trickle(gateway, ping, pieces=8, pause=0.25)
    assert status == 200 and b'"id":7' in body.replace(b" ", b"")
    stalled = fuzz.stall(gateway, 50)
    try:
        started = time.monotonic()
        reply = fuzz.post(gateway, fuzz.Front("bare", {}), ping, timeout=10)
        assert reply.status_code == 200 and time.monotonic() - started < 5
    finally:
        for conn in stalled:
            conn.close()
    memory.append(rss_mb(gateway))


def test_the_gateway_stays_up_and_its_memory_bounded(gateway: RunningGateway, memory) -> None:
    assert httpx.get(gateway.base + "/health", timeout=10).status_code == 200
    assert gateway.proc.poll() is None
    growth = max(memory) - memory[0]
    print(f"gateway RSS over the run: {' -> '.join(f'{m:.0f}' for m in memory)} MB")
    assert growth < MEMORY_GROWTH_MB, memory
