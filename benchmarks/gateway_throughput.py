"""tools/call throughput and latency: direct to one server vs through the gateway (1 and 2 replicas).

All three are measured in one run, so the ratios hold on a noisy shared machine. Also: cold start
to /ready and idle memory (RSS) of the gateway with the shipped servers.

    uv run python benchmarks/gateway_throughput.py [--calls 3000] [--clients 1,32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from loadgen import free_port, latency_summary, read_response, tree_rss_mib

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "fixtures" / "probe_server.py"


def wait_http(url: str, timeout: float = 90) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        try:
            if httpx.get(url, timeout=1).status_code in (200, 405, 406):
                return time.perf_counter() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")


def start_direct(tmp: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "GAIA_WORKSPACE_ROOT": str(tmp / "direct")}
    proc = subprocess.Popen(
        [sys.executable, str(PROBE), "--transport", "http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    while True:
        try:
            httpx.post(
                url,
                json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
                headers={"Accept": "application/json, text/event-stream"},
                timeout=1,
            )
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)


def start_gateway(tmp: Path, registry: Path | None, servers: str | None = None, replicas: int = 1):
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "gaia_env",
        "serve",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--workspace-root",
        str(tmp / f"gw-{port}"),
        "--dataset-dir",
        str(tmp / "data"),
        "--replicas",
        str(replicas),
    ]
    if registry:
        args += ["--config", str(registry)]
    if servers:
        args += ["--servers", servers]
    started = time.perf_counter()
    proc = subprocess.Popen(args, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx.get(base + "/ready", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return proc, base + "/mcp", time.perf_counter() - started


async def load(url: str, clients: int, calls: int) -> dict[str, float]:
    """`clients` keep-alive connections, each sending tools/call back to back.

    A bare-socket HTTP/1.1 client: an httpx client spends about 2 ms of CPU per request, which on
    a 2-core machine would make the load generator, not the server, the thing measured.
    """
    parts = urlsplit(url)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "ping"}},
        }
    ).encode()
    latencies: list[float] = []
    per_client = max(1, calls // clients)

    async def client(index: int) -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        request = (
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nX-Session-Id: bench-{index}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        try:
            for _ in range(per_client):
                started = time.perf_counter()
                writer.write(request)
                status, payload = await read_response(reader)
                latencies.append(time.perf_counter() - started)
                assert status == 200, payload[:300]
                assert b'"ping"' in payload, payload[:300]
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    return latency_summary(latencies, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="calls per measurement")
    parser.add_argument("--clients", default="1,32", help="concurrency levels")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="gaia-bench-"))
    registry = tmp / "probe.toml"
    registry.write_text(f'[servers.probe]\ncommand = ["{{python}}", "{PROBE}"]\nmax_in_flight = 64\n')

    results: dict[str, dict] = {}
    procs = []
    try:
        direct, direct_url = start_direct(tmp)
        gw1, gw1_url, _ = start_gateway(tmp, registry)
        gw2, gw2_url, _ = start_gateway(tmp, registry, replicas=2)
        procs = [direct, gw1, gw2]
        for clients in levels:
            for label, url in (("direct", direct_url), ("gateway", gw1_url), ("gateway-2-replicas", gw2_url)):
                asyncio.run(load(url, clients, min(200, args.calls)))  # warm-up
                results.setdefault(label, {})[clients] = asyncio.run(load(url, clients, args.calls))
        for proc in procs:
            proc.terminate()
            proc.wait(30)

        gw, _, cold = start_gateway(
            tmp, None, servers="filesystem-server,documents-txt-server,documents-csv-server"
        )
        time.sleep(2)
        idle = tree_rss_mib(gw.pid)
        gw.terminate()
        gw.wait(30)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()

    print(f"{'path':22} {'clients':>7} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs direct':>9}")
    for label, by_clients in results.items():
        for clients, r in by_clients.items():
            ratio = r["calls_per_s"] / results["direct"][clients]["calls_per_s"]
            print(
                f"{label:22} {clients:>7} {r['calls_per_s']:>9.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {ratio:>8.2f}x"
            )
    print(f"\ncold start to /ready (filesystem, txt, csv servers): {cold:.2f} s")
    print(f"idle RSS, gateway + 3 servers: {idle:.0f} MiB")
    if args.json:
        args.json.write_text(
            json.dumps({"throughput": results, "cold_start_s": cold, "idle_rss_mib": idle}, indent=2)
        )


if __name__ == "__main__":
    main()
