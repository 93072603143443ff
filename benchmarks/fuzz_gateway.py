"""The gateway fuzzer of tests/test_fuzz_gateway.py, for longer: random (not derandomized) rounds
against every shipped server until the time is up, with the gateway's memory after each round.

Each round sends --raw bodies to every front (bare, keyed, two MCP sessions) and --per-tool calls to
each registered tool (arguments from its schema, mutated), 8 at a time. Any broken property (a 5xx,
an answer past the deadline, a malformed answer) stops the run with the falsifying example.

    uv run python -m benchmarks.fuzz_gateway [--minutes 20] [--raw 500] [--per-tool 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psutil
from gaia_env.registry import DEFAULT_REGISTRY
from gaia_kit_testing import fuzz
from hypothesis import HealthCheck, given, settings


def loose(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )


def raw_round(gateway, fronts, examples: int) -> int:
    sent = 0

    @loose(examples)
    @given(body=fuzz.raw_bodies())
    def answered(body: bytes) -> None:
        nonlocal sent
        for front in fronts:
            fuzz.check_answer(fuzz.post(gateway, front, body, timeout=30), body)
            sent += 1

    answered()
    return sent


def tool_round(gateway, fronts, tools, per_tool: int) -> list[fuzz.Outcome]:
    cases = [case for tool in tools for case in fuzz.generated_calls(tool, fronts, loose(per_tool))]
    return fuzz.run_tool_cases(gateway, cases, workers=8)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--raw", type=int, default=500, help="raw bodies per round (each to every front)")
    parser.add_argument("--per-tool", type=int, default=10, help="calls per registered tool per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gaia-fuzz-") as tmp:
        started = time.monotonic()
        gateway = fuzz.start_fuzz_gateway(Path(tmp), DEFAULT_REGISTRY)
        print(f"gateway ready in {time.monotonic() - started:.0f} s", flush=True)
        try:
            fronts = fuzz.fronts(gateway)
            tools = fuzz.listed_tools(gateway)
            process = psutil.Process(gateway.proc.pid)
            memory = [process.memory_info().rss / 2**20]
            until = time.monotonic() + args.minutes * 60
            rounds = requests = 0
            while time.monotonic() < until:
                began = time.monotonic()
                requests += raw_round(gateway, fronts, args.raw)
                outcomes = tool_round(gateway, fronts, tools, args.per_tool)
                requests += len(outcomes)
                rounds += 1
                memory.append(process.memory_info().rss / 2**20)
                print(
                    f"round {rounds}: {time.monotonic() - began:.0f} s, gateway RSS {memory[-1]:.0f} MB; "
                    f"{fuzz.summary(outcomes)}",
                    flush=True,
                )
            print(
                f"\n{rounds} rounds, {requests} requests, no property broken; gateway RSS "
                f"{memory[0]:.0f} MB at start, {max(memory):.0f} MB at most, {memory[-1]:.0f} MB at the end; "
                f"ready: {gateway.status()['ready']}"
            )
        finally:
            gateway.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
