"""tools/call through MCP sessions: a JSON session against a streaming (SSE) one, and the bare path.

A client that lists text/event-stream in its Accept header gets a streaming session, which carries
progress notifications during a call; any other client gets a JSON session. This measures what the
stream costs, all in one run against one gateway with the probe server, so the ratios hold on a
noisy machine.

    uv run python -m benchmarks.session_modes [--calls 2000] [--clients 16]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from gaia_kit_testing.probe import PROBE

from benchmarks.loadgen import latency_summary, start_gateway

JSON_ONLY = "application/json"
STREAMING = "application/json, text/event-stream"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def result_of(response: httpx.Response) -> dict:
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [
            line[5:] for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()
        ]
        return httpx.Response(200, content=data[-1]).json()
    return response.json()


async def client(url: str, accept: str | None, calls: int, latencies: list[float], index: int) -> None:
    headers = {"Content-Type": "application/json", "X-Session-Id": f"bench-{index}"}
    async with httpx.AsyncClient(timeout=60) as http:
        if accept is not None:
            headers["Accept"] = accept
            opened = await http.post(url, json=INIT, headers=headers)
            headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            headers["Mcp-Protocol-Version"] = "2025-11-25"
            await http.post(
                url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}},
        }
        for _ in range(calls):
            started = time.perf_counter()
            reply = result_of(await http.post(url, json=body, headers=headers))
            latencies.append(time.perf_counter() - started)
            assert reply["result"]["content"][0]["text"] == "x", reply


async def load(url: str, accept: str | None, clients: int, calls: int) -> dict[str, float]:
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(client(url, accept, calls // clients, latencies, i) for i in range(clients)))
    return latency_summary(latencies, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gaia-bench-"))
    registry = tmp / "probe.toml"
    registry.write_text(f'[servers.probe]\ncommand = ["{{python}}", "{PROBE}"]\nmax_in_flight = 64\n')
    gateway = start_gateway(tmp, tmp / "data", "--replicas", "1", "--config", str(registry))
    url = gateway.url
    results = {}
    try:
        modes = {"bare JSON POST": None, "JSON session": JSON_ONLY, "streaming (SSE) session": STREAMING}
        for accept in modes.values():
            asyncio.run(load(url, accept, args.clients, min(200, args.calls)))  # warm-up
        for _ in range(2):  # interleaved twice, so a noisy moment hits every mode
            for label, accept in modes.items():
                results.setdefault(label, []).append(asyncio.run(load(url, accept, args.clients, args.calls)))
    finally:
        gateway.stop()
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    base = max(r["calls_per_s"] for r in results["JSON session"])
    print(f"{'mode':26} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs JSON session':>16}")
    for label, runs in results.items():
        best = max(runs, key=lambda r: r["calls_per_s"])
        ratio = best["calls_per_s"] / base
        print(
            f"{label:26} {best['calls_per_s']:>9.0f} {best['p50_ms']:>8.2f} {best['p99_ms']:>8.2f} {ratio:>15.2f}x"
        )


if __name__ == "__main__":
    main()
