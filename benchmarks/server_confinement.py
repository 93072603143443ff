"""What confining a server costs (issue 22): start-up and per-call time, confined against plain.

The probe server (gaia_kit_testing.probe) and terminal-server (its sandbox nests inside the
confinement) are started the way the gateway starts them (ServerProcess), confined
(GAIA_SERVER_CONFINE=1, the default) and plain (=0). Every start and every call is taken in turn in
both modes, so both meet the same moment's load; each ratio is confined / plain (medians), one run.

uv run python -m benchmarks.server_confinement [--starts 10] [--calls 300] [--commands 30]
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

from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from gaia_env.confine import Confinement
from gaia_env.process import ServerProcess
from gaia_kit_testing.probe import PROBE

SERVERS = {
    "probe": [sys.executable, str(PROBE)],
    "terminal-server": [sys.executable, "-m", "terminal_server"],
}
LABELS = {
    "start": "probe server: spawn to tools listed",
    "echo": "probe `echo` call",
    "command": "terminal-server `echo 1` (its sandbox nested inside)",
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


async def measure(envs: dict[str, dict[str, str]], args: argparse.Namespace, workspace: Path) -> dict:
    """Each measurement in turn in every mode."""
    meta = {SESSION_ID_KEY: "bench", WORKSPACE_KEY: str(workspace)}
    found: dict[str, dict[str, list[float]]] = {mode: {key: [] for key in LABELS} for mode in envs}
    for _ in range(args.starts):
        for mode, env in envs.items():
            process, took = await start("probe", env)
            found[mode]["start"].append(took)
            await process.stop()
    probes = {mode: (await start("probe", env))[0] for mode, env in envs.items()}
    terminals = {mode: (await start("terminal-server", env))[0] for mode, env in envs.items()}
    for _ in range(args.calls):
        for mode, process in probes.items():
            found[mode]["echo"].append(await call(process, "echo", {"text": "x"}, meta))
    command = {"command": "echo 1", "output_format": "text"}
    for _ in range(args.commands):
        for mode, process in terminals.items():
            found[mode]["command"].append(await call(process, "execute_command", command, meta))
    for process in [*probes.values(), *terminals.values()]:
        await process.stop()
    return found


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--commands", type=int, default=30)
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
        envs = {
            mode: {**base, "GAIA_SERVER_CONFINE": flag} for mode, flag in (("plain", "0"), ("confined", "1"))
        }
        results = await measure(envs, args, root / "s-bench")
    print(f"servers confined as uid {uid}; median (p90): {args.starts} starts, {args.calls} calls per mode")
    print("| what | plain | confined | confined / plain |")
    print("|---|---|---|---|")
    for key, label in LABELS.items():
        plain, confined = results["plain"][key], results["confined"][key]
        ratio = statistics.median(confined) / statistics.median(plain)
        print(f"| {label} | {_ms(plain)} | {_ms(confined)} | {ratio:.2f} |")


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(values) * 1000:.1f} ms ({p90 * 1000:.1f} ms)"


if __name__ == "__main__":
    asyncio.run(main())
