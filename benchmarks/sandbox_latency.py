"""Sandbox latency: start to first output of `python -c "print(1)"`, and executions/s with 8 sessions.

uv run python -m benchmarks.sandbox_latency [--runs 30] [--sessions 8] [--seconds 5]
"""

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from gaia_kit.execution.sandbox import Limits, run_sandboxed, sandbox_status

COMMAND = ["python", "-c", "print(1)"]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        spaces = [Path(root) / f"s{i}" for i in range(args.sessions)]
        for space in spaces:
            space.mkdir()
        limits = Limits(wall_s=30)
        latencies = []
        for _ in range(args.runs):
            result = await run_sandboxed(COMMAND, workspace=spaces[0], limits=limits)
            assert result.stdout == "1\n", result.describe()
            latencies.append(result.duration_s * 1000)
        done = 0
        deadline = time.monotonic() + args.seconds

        async def session(space: Path) -> None:
            nonlocal done
            while time.monotonic() < deadline:
                await run_sandboxed(COMMAND, workspace=space, limits=limits)
                done += 1

        started = time.monotonic()
        await asyncio.gather(*(session(space) for space in spaces))
        elapsed = time.monotonic() - started
    print(f"backend: {sandbox_status()['backend']}")
    print(
        f"latency ms over {args.runs} runs: median {statistics.median(latencies):.1f}, "
        f"p90 {sorted(latencies)[int(len(latencies) * 0.9) - 1]:.1f}"
    )
    print(f"{args.sessions} sessions at once: {done / elapsed:.1f} executions/s")


if __name__ == "__main__":
    asyncio.run(main())
