"""Rollout collection throughput of the gaia-train episode loop: concurrency 64 vs 1, one run.

64 episodes, each 4 tool turns and a final answer, through `gaia-train eval`'s own code path
(run_episodes: an MCP session per episode, retries, JSONL trajectories). The model is a loopback
OpenAI-compatible fake in its own process that takes 200 ms per turn; the tools are the real
gateway (`gaia-env serve`, filesystem and csv servers, the demo data) unless --fake-mcp
selects an in-process MCP server with the same tool names.

    uv run python -m benchmarks.trainer_collection            # real gateway
    uv run python -m benchmarks.trainer_collection --fake-mcp # no gateway needed
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from gaia_kit_testing.fake_openai import chat_completions_app, tool_call
from gaia_kit_testing.gateway import RunningGateway
from gaia_kit_testing.loopback import LoopbackServer, free_port
from gaia_train.data import gaia as ds
from gaia_train.demo.snapshot import write_demo_snapshot
from gaia_train.episode.loop import EpisodeLimits
from gaia_train.episode.session import McpSettings
from gaia_train.eval.evaluate import TRAJECTORIES, run_episodes, summarize
from gaia_train.eval.openai_policy import EndpointSettings

from benchmarks.loadgen import start_gateway

SERVERS = "filesystem-server,documents-csv-server"
CSV_KEY = "csv-revenue"


def plan(attachment: str) -> list[tuple[str, dict[str, Any]]]:
    """The four tool turns every episode takes: look around, inspect, read, take a note."""
    folder = attachment.rsplit("/", 1)[0]
    return [
        ("list_directory", {"path": folder}),
        ("get_file_info", {"path": attachment}),
        ("extract_csv_content", {"file_path": attachment}),
        ("write_file", {"path": "notes.txt", "content": "North revenue computed from the CSV."}),
    ]


def reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    attachment = messages[1]["content"].split("Attached file: ", 1)[1].split()[0]
    done = sum(1 for m in messages if m["role"] == "assistant")
    steps = plan(attachment)
    if done < len(steps):
        name, arguments = steps[done]
        return {"content": "", "tool_calls": [tool_call(name, arguments)]}
    return {"content": "<answer>3070</answer>"}


def serve_model(port: int, delay_s: float) -> None:
    import uvicorn

    uvicorn.run(
        chat_completions_app(reply, delay_s=delay_s),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        backlog=1024,
        limit_concurrency=1000,
    )


def wait_ready(url: str, process: subprocess.Popen, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[:3]} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up within {timeout_s} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def fake_mcp_app():
    from mcp.server import MCPServer

    server = MCPServer("bench-fake")

    @server.tool()
    def list_directory(path: str) -> str:
        """List a directory."""
        return "[FILE] sales.csv"

    @server.tool()
    def get_file_info(path: str) -> str:
        """Describe a file."""
        return "size: 212\ntype: file"

    @server.tool()
    def extract_csv_content(file_path: str) -> str:
        """Read a CSV."""
        return "| region | units |\n| North | 40 |"

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        return f"Successfully wrote to {path}"

    return server.streamable_http_app(stateless_http=True, json_response=True)


async def collect(
    rows: list[dict[str, Any]], out: Path, endpoint: EndpointSettings, mcp: McpSettings, concurrency: int
) -> float:
    """Seconds to collect every episode (eval's summary and chart come after, untimed)."""
    started = time.perf_counter()
    report = await run_episodes(
        rows, out, endpoint, mcp, EpisodeLimits(max_turns=8), concurrency=concurrency, progress=False
    )
    elapsed = time.perf_counter() - started
    summary = summarize([json.loads(line) for line in (out / TRAJECTORIES).read_text().splitlines()])
    if (
        report.failed
        or summary["pass_at_1"] != 1.0
        or summary["mean_tool_calls"] != 4
        or summary["tool_error_rate"]
    ):
        raise RuntimeError(f"the benchmark episodes did not all succeed: {summary} {report.failed[:1]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--model-delay", type=float, default=0.2, help="seconds the fake model takes per turn"
    )
    parser.add_argument(
        "--fake-mcp", action="store_true", help="an in-process MCP server instead of the gateway"
    )
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--serve-model", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    # The MCP SDK and servers log every request at INFO; only the result belongs on the screen.
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if args.serve_model:
        serve_model(args.serve_model, args.model_delay)
        return 0

    work = Path(tempfile.mkdtemp(prefix="gaia-bench-"))
    write_demo_snapshot(work / "demo", skip_audio=True)
    [task] = [t for t in ds.load_split(work / "demo", "validation") if t.file_name.endswith(".csv")][:1]
    rows = [ds.to_row(task, i, ds.DEFAULT_MOUNT) for i in range(args.episodes)]
    for i, row in enumerate(rows):
        row["extra_info"]["task_id"] = f"bench-{i:03d}"

    processes: list[subprocess.Popen] = []
    gateways: list[RunningGateway] = []
    model_port = free_port()
    processes.append(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                __spec__.name,
                "--serve-model",
                str(model_port),
                "--model-delay",
                str(args.model_delay),
            ],
            # The checkout's root, where `benchmarks` is importable.
            cwd=Path(__file__).resolve().parents[1],
            start_new_session=True,
        )
    )
    fake = None
    try:
        wait_ready(f"http://127.0.0.1:{model_port}/", processes[0])
        if args.fake_mcp:
            fake = LoopbackServer(fake_mcp_app(), lifespan="on").__enter__()
            mcp_url, environment = fake.url("/mcp"), "in-process fake MCP server"
        else:
            gateway = start_gateway(work, work / "demo", "--servers", SERVERS)
            gateways.append(gateway)
            mcp_url, environment = gateway.url, f"real gateway ({SERVERS})"
        endpoint = EndpointSettings(base_url=f"http://127.0.0.1:{model_port}/v1", model="scripted", retries=0)
        mcp = McpSettings(url=mcp_url, servers=None if args.fake_mcp else SERVERS)

        # Warm-up, untimed: server processes, connections, protocol negotiation, the tool catalog.
        anyio.run(collect, rows[:4], work / "warm-up", endpoint, mcp, 4)
        parallel = anyio.run(collect, rows, work / "c64", endpoint, mcp, args.concurrency)
        serial = anyio.run(collect, rows, work / "c1", endpoint, mcp, 1)
    finally:
        if fake is not None:
            fake.__exit__(None, None, None)
        for process in processes:
            stop(process)
        for gateway in gateways:
            gateway.stop()

    ideal = args.episodes * 5 * args.model_delay
    result = {
        "episodes": args.episodes,
        "tool_turns_per_episode": 4,
        "model_delay_s": args.model_delay,
        "environment": environment,
        "cpus": os.cpu_count(),
        f"concurrency_{args.concurrency}_s": round(parallel, 2),
        "concurrency_1_s": round(serial, 2),
        f"episodes_per_s_c{args.concurrency}": round(args.episodes / parallel, 2),
        "episodes_per_s_c1": round(args.episodes / serial, 3),
        "speedup": round(serial / parallel, 1),
        "serial_overhead_vs_model_time": round(serial / ideal, 3),
    }
    width = max(map(len, result))
    print("\n".join(f"{k.ljust(width)}  {v}" for k, v in result.items()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
