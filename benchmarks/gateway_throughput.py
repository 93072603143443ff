"""tools/call throughput and latency: direct to one server vs through the gateway, from 1 to 256 clients.

All of it is measured in one run, so the ratios hold on a noisy shared machine:

- scaling: a trivial tool at each client count, direct to one server, through the gateway with one
  replica, and through the gateway as shipped (`replicas = "auto"`: it adds replicas, up to one per
  core, while calls wait); the bar is that the gateway serves at 256 clients at least 0.9x what it
  serves at 32;
- CPU-bound servers: a trivial tool on a server marked CPU-bound (`max_in_flight = 4`,
  documents-csv-server) against the same tool on one that is not (documents-txt-server), and a
  trivial tool on a 4-slot probe while heavy calls keep its slots busy;
- cold start to /ready and idle memory (RSS) of the gateway with three shipped servers.

`--hold-core` runs a busy loop on one core for the whole run (another process's work on a shared
machine). `--nice 0` runs the servers at the gateway's priority instead of the registry's (10): on
a machine crowded with other work a niced server gets almost no CPU, and the run then measures the
scheduler, not the gateway.

    uv run python -m benchmarks.gateway_throughput [--seconds 10] [--clients 1,32,256] [--hold-core] [--nice 0]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from gaia_contract import BUSY, RETRY_AFTER
from gaia_env.registry import DEFAULT_REGISTRY
from gaia_kit_testing.loopback import free_port
from gaia_kit_testing.probe import PROBE

from benchmarks.loadgen import latency_summary, read_response, start_gateway, tree_rss_mib

WARM_UP_S = 3.0
"""Calls before each measurement: connections open, the gateway's costs measured, replicas added."""
AUTO_SETTLE_S = 20.0
"""The gateway as shipped adds replicas under load, and may retire them: it gets this long under each
load before it is measured, so the measurement sees where it settles."""
CALL_TIMEOUT_S = 120.0
"""A call unanswered this long stops the run: a stall is a finding, not something to wait out."""
HEAVY_SPIN_S = 0.3
"""Wall time of each heavy call (`spin`, CPU in the server) in the CPU-bound measurement."""


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


def serve(
    tmp: Path, registry: Path | None, servers: str | None = None, replicas: int | None = 1
) -> tuple[subprocess.Popen, str, float]:
    """A gateway's process, its /mcp URL, and the seconds it took to get ready."""
    args = [*(["--replicas", str(replicas)] if replicas else [])]
    args += [*(["--config", str(registry)] if registry else []), *(["--servers", servers] if servers else [])]
    started = time.perf_counter()
    gateway = start_gateway(tmp, tmp / "data", *args)
    return gateway.proc, gateway.url, time.perf_counter() - started


async def load(
    url: str, clients: int, seconds: float, tool: str = "echo", arguments: dict | None = None
) -> dict[str, float]:
    """`clients` keep-alive connections, each sending tools/call back to back for `seconds`. A busy
    answer is waited out as the trainer does (its retryAfter) and counted; any other error stops the
    measurement. Throughput and latency are of the calls served.

    A fixed time, not a fixed count: on a loaded machine a count takes as long as the machine is slow.
    A bare-socket HTTP/1.1 client: an httpx client spends about 2 ms of CPU per request, which on
    a 2-core machine would make the load generator, not the server, the thing measured.
    """
    parts = urlsplit(url)
    params = {"name": tool, "arguments": arguments if arguments is not None else {"text": "ping"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    latencies: list[float] = []
    busy = 0
    started = time.perf_counter()
    stop_at = started + seconds

    async def client(index: int) -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        request = (
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nX-Session-Id: bench-{index}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        try:
            while time.perf_counter() < stop_at:
                sent = time.perf_counter()
                writer.write(request)
                status, payload = await asyncio.wait_for(read_response(reader), CALL_TIMEOUT_S)
                if status == 200 and b'"error"' in payload and json.loads(payload)["error"]["code"] == BUSY:
                    nonlocal busy
                    busy += 1
                    wait = json.loads(payload)["error"]["data"][RETRY_AFTER]
                    await asyncio.sleep(max(0.0, min(wait, stop_at - time.perf_counter())))
                    continue
                latencies.append(time.perf_counter() - sent)
                assert status == 200 and b'"result"' in payload, payload[:300]
                assert b'"isError":true' not in payload, payload[:300]
        finally:
            writer.close()

    await asyncio.gather(*(client(i) for i in range(clients)))
    return {**latency_summary(latencies, time.perf_counter() - started), "busy": busy}


async def load_beside_heavy(url: str, clients: int, seconds: float, heavy_clients: int) -> dict[str, float]:
    """`load` of the trivial tool while `heavy_clients` more keep calling a CPU-heavy one."""
    stop = asyncio.Event()

    async def heavy(index: int) -> None:
        async with httpx.AsyncClient(timeout=120) as http:
            while not stop.is_set():
                body = {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "tools/call",
                    "params": {"name": "spin", "arguments": {"seconds": HEAVY_SPIN_S}},
                }
                reply = await http.post(
                    url, json=body, headers={"Accept": "application/json, text/event-stream"}
                )
                assert "result" in reply.json(), reply.text[:300]

    spinners = [asyncio.create_task(heavy(i)) for i in range(heavy_clients)]
    await asyncio.sleep(2 * HEAVY_SPIN_S)  # the heavy calls hold every slot before the trivial ones come
    try:
        return await load(url, clients, seconds)
    finally:
        stop.set()
        await asyncio.gather(*spinners)


@contextlib.contextmanager
def core_held(hold: bool) -> Iterator[None]:
    """A busy loop on one core while the block runs, when `hold`."""
    if not hold:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def probe_registry(path: Path, nice: int | None, *settings: str) -> Path:
    """A registry of the probe server alone, with the registry's defaults but for `settings`."""
    lines = ["[servers.probe]", f'command = ["{{python}}", "{PROBE}"]', *settings]
    path.write_text("\n".join([*lines, *([f"nice = {nice}"] if nice is not None else [])]) + "\n")
    return path


def shipped_registry(path: Path, nice: int | None) -> Path | None:
    """The shipped registry, with its servers' nice level replaced when `nice` is given."""
    if nice is None:
        return None
    text = DEFAULT_REGISTRY.read_text()
    path.write_text(re.sub(r"(?m)^nice = \d+", f"nice = {nice}", text))
    return path


def scaling(
    tmp: Path, levels: list[int], seconds: float, nice: int | None
) -> dict[str, dict[int, dict[str, float]]]:
    # The shipped defaults: replicas "auto" (up to one per core), max_in_flight 32.
    registry = probe_registry(tmp / "probe.toml", nice)
    results: dict[str, dict[int, dict[str, float]]] = {}
    procs = []
    try:
        direct, direct_url = start_direct(tmp)
        procs.append(direct)
        gw1, gw1_url, _ = serve(tmp, registry)
        procs.append(gw1)
        auto, auto_url, _ = serve(tmp, registry, replicas=None)
        procs.append(auto)
        for clients in levels:
            for label, url in (("direct", direct_url), ("gateway", gw1_url), ("gateway-auto", auto_url)):
                asyncio.run(load(url, clients, AUTO_SETTLE_S if label == "gateway-auto" else WARM_UP_S))
                results.setdefault(label, {})[clients] = asyncio.run(load(url, clients, seconds))
    finally:
        stop(procs)
    return results


def cpu_bound(tmp: Path, seconds: float, nice: int | None) -> dict[str, dict[str, float]]:
    """The trivial tool on a 4-slot server, against a 32-slot one, and beside heavy calls."""
    registry = probe_registry(tmp / "cpu-probe.toml", nice, "max_in_flight = 4")
    results: dict[str, dict[str, float]] = {}
    procs = []
    try:
        shipped, shipped_url, _ = serve(
            tmp,
            shipped_registry(tmp / "servers.toml", nice),
            servers="documents-txt-server,documents-csv-server",
            replicas=1,
        )
        procs.append(shipped)
        for server in ("documents-txt-server", "documents-csv-server"):
            tool = f"{server}__list_supported_formats"
            asyncio.run(load(shipped_url, 32, WARM_UP_S, tool, {}))  # the tool's cost gets measured
            results[f"{server} list_supported_formats"] = asyncio.run(
                load(shipped_url, 32, seconds, tool, {})
            )
        probe, probe_url, _ = serve(tmp, registry)
        procs.append(probe)
        asyncio.run(load(probe_url, 32, WARM_UP_S))
        results["4-slot probe echo"] = asyncio.run(load(probe_url, 32, seconds))
        results["4-slot probe echo, 4 heavy calls running"] = asyncio.run(
            load_beside_heavy(probe_url, 32, seconds, heavy_clients=4)
        )
    finally:
        stop(procs)
    return results


def cold_start(tmp: Path) -> tuple[float, float]:
    gw, _, cold = serve(tmp, None, servers="filesystem-server,documents-txt-server,documents-csv-server")
    time.sleep(2)
    idle = tree_rss_mib(gw.pid)
    stop([gw])
    return cold, idle


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def report(scaled: dict, cpu: dict, cold: float, idle: float) -> None:
    levels = sorted(next(iter(scaled.values())))
    knee = 32 if 32 in levels else levels[0]
    print(
        f"{'path':22} {'clients':>7} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs direct':>9}"
        f" {'vs ' + str(knee):>7} {'busy':>6}"
    )
    for label, by_clients in scaled.items():
        for clients, r in by_clients.items():
            ratio = r["calls_per_s"] / scaled["direct"][clients]["calls_per_s"]
            held = r["calls_per_s"] / by_clients[knee]["calls_per_s"]
            print(
                f"{label:22} {clients:>7} {r['calls_per_s']:>9.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}"
                f" {ratio:>8.2f}x {held:>6.2f}x {r['busy']:>6}"
            )
    print(f"\n{'CPU-bound servers (32 clients)':48} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for label, r in cpu.items():
        print(f"{label:48} {r['calls_per_s']:>9.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}")
    txt, csv = (cpu[f"documents-{k}-server list_supported_formats"]["calls_per_s"] for k in ("txt", "csv"))
    alone, beside = (
        cpu[k]["calls_per_s"] for k in ("4-slot probe echo", "4-slot probe echo, 4 heavy calls running")
    )
    print(f"csv vs txt: {csv / txt:.2f}x; beside heavy calls vs alone: {beside / alone:.2f}x")
    print(f"\ncold start to /ready (filesystem, txt, csv servers): {cold:.2f} s")
    print(f"idle RSS, gateway + 3 servers: {idle:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each measurement")
    parser.add_argument("--clients", default="1,32,256", help="concurrency levels")
    parser.add_argument("--hold-core", action="store_true", help="keep one core busy during the run")
    parser.add_argument("--nice", type=int, help="the servers' nice level (default: the registry's)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="gaia-bench-"))
    with core_held(args.hold_core):
        scaled = scaling(tmp, levels, args.seconds, args.nice)
        cpu = cpu_bound(tmp, args.seconds, args.nice)
        cold, idle = cold_start(tmp)
    report(scaled, cpu, cold, idle)
    if args.json:
        results = {"throughput": scaled, "cpu_bound": cpu, "cold_start_s": cold, "idle_rss_mib": idle}
        settings = {"hold_core": args.hold_core, "nice": args.nice, "seconds": args.seconds}
        args.json.write_text(json.dumps({**results, **settings}, indent=2))


if __name__ == "__main__":
    main()
