"""What confining a server costs (issue 22): start-up and per-call time, confined against plain.

The probe server (tests/fixtures/probe_server.py) and terminal-server (its sandbox nests inside the
confinement) are started the way the gateway starts them (ServerProcess), alternately confined
(GAIA_SERVER_CONFINE=1, the default) and plain (=0), so both see the same machine load; each
ratio is confined / plain from one run.

uv run python benchmarks/server_confinement.py [--starts 5] [--calls 200] [--commands 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gaia_env.confine import Confinement
from gaia_env.process import ServerProcess
from gaia_kit.core.contract import SESSION_ID_KEY, WORKSPACE_KEY

ROOT = Path(__file__).resolve().parents[1]
SERVERS = {
    "probe": [sys.executable, str(ROOT / "tests" / "fixtures" / "probe_server.py")],
    "terminal-server": [sys.executable, "-m", "terminal_server"],
}


async def start(name: str, env: dict[str, str]) -> tuple[ServerProcess, float]:
    process = ServerProcess(f"{name}#0", SERVERS[name], env)
    began = time.perf_counter()
    await process.start(timeout=120)
    return process, time.perf_counter() - began


async def call(process: ServerProcess, tool: str, arguments: dict, meta: dict) -> float:
    began = time.perf_counter()
    result = await process.request("tools/call", {"name": tool, "arguments": arguments, "_meta": meta}, 120)
    assert not result.get("isError"), result
    return time.perf_counter() - began


async def measure(env: dict[str, str], args: argparse.Namespace, workspace: Path) -> dict[str, list[float]]:
    meta = {SESSION_ID_KEY: "bench", WORKSPACE_KEY: str(workspace)}
    found: dict[str, list[float]] = {"start": [], "echo": [], "command": []}
    for _ in range(args.starts):
        process, took = await start("probe", env)
        found["start"].append(took)
        await process.stop()
    process, _ = await start("probe", env)
    for _ in range(args.calls):
        found["echo"].append(await call(process, "echo", {"text": "x"}, meta))
    await process.stop()
    terminal, _ = await start("terminal-server", env)
    for _ in range(args.commands):
        took = await call(terminal, "execute_command", {"command": "echo 1", "output_format": "text"}, meta)
        found["command"].append(took)
    await terminal.stop()
    return found


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--commands", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, dataset = Path(tmp) / "workspaces", Path(tmp) / "dataset"
        (root / "s-bench").mkdir(parents=True)
        dataset.mkdir()
        base = {**os.environ, "GAIA_WORKSPACE_ROOT": str(root), "GAIA_DATASET_DIR": str(dataset)}
        confinement = Confinement.from_env(base)
        assert confinement is not None, "unset GAIA_SERVER_CONFINE=0 to measure confinement"
        confinement.prepare_host(base)
        confinement.hand_over(root / "s-bench")
        uid = confinement.check(base)
        results = {"confined": [], "plain": []}
        for _ in range(2):  # alternate, so both meet the same load
            for mode, flag in (("confined", "1"), ("plain", "0")):
                results[mode].append(
                    await measure({**base, "GAIA_SERVER_CONFINE": flag}, args, root / "s-bench")
                )
    print(
        f"servers confined as uid {uid}; median (p90) over {args.starts * 2} starts, {args.calls * 2} calls"
    )
    print("| what | plain | confined | confined / plain |")
    print("|---|---|---|---|")
    labels = {
        "start": "probe server: spawn to tools listed",
        "echo": "probe `echo` call",
        "command": "terminal-server `echo 1` (sandbox nested)",
    }
    for key, label in labels.items():
        plain = [v for run in results["plain"] for v in run[key]]
        confined = [v for run in results["confined"] for v in run[key]]
        ratio = statistics.median(confined) / statistics.median(plain)
        print(f"| {label} | {_ms(plain)} | {_ms(confined)} | {ratio:.2f} |")


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(values) * 1000:.1f} ms ({p90 * 1000:.1f} ms)"


if __name__ == "__main__":
    asyncio.run(main())
