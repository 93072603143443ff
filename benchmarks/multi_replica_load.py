"""Several gateways behind nginx (deploy/nginx/gaia-env.conf), as tests/test_multi_replica.py runs
them: how evenly sessions spread, and what the load balancer costs a call.

    uv run --no-sync python -m benchmarks.multi_replica_load [--replicas 3] [--sessions 300]
        [--calls 6] [--concurrency 300] [--lb-calls 400] [--json results.json]

Spread: `--sessions` sessions (each its own X-Session-Id), `--concurrency` at a time, each making
`--calls` terminal-controller calls through nginx. Per replica, from the replicas' own `GET /sessions`
and the clients' answers: sessions, calls, busy answers; and the spread, the largest replica's share
of the sessions against 1/N.

Load balancer cost: one session's same request, alternately straight to the replica that holds it
and through nginx, one at a time on kept-alive connections: `ping` (the gateway alone answers it)
and a tool call (get_current_directory). The difference of the medians is what nginx adds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from gaia_contract import BUSY
from gaia_kit_testing.replicas import Cluster

from benchmarks.loadgen import RawClient

NGINX_CONF = Path(__file__).resolve().parents[1] / "deploy" / "nginx" / "gaia-env.conf"
"""The shipped load balancer configuration the cluster runs."""
SERVERS = "terminal-controller"
HEADERS = {"MCP-Servers": SERVERS}


async def one_session(lb: str, calls: int, gate: asyncio.Semaphore) -> tuple[str, Counter[str]]:
    key = uuid.uuid4().hex
    client = RawClient(lb + "/mcp", {**HEADERS, "X-Session-Id": key})
    outcomes: Counter[str] = Counter()
    async with gate:
        try:
            for n in range(calls):
                tool, args = (
                    ("get_current_directory", {})
                    if n % 2
                    else ("write_file", {"path": "a.txt", "content": key})
                )
                try:
                    reply = await client.call(n, tool, args)
                except (ConnectionError, OSError) as exc:
                    outcomes[f"transport: {exc}"[:60]] += 1
                    continue
                error = reply.get("error")
                outcomes["busy" if error and error["code"] == BUSY else "error" if error else "ok"] += 1
        finally:
            await client.close()
    return key, outcomes


async def spread(cluster: Cluster, sessions: int, calls: int, concurrency: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(concurrency)
    started = time.perf_counter()
    results = await asyncio.gather(*(one_session(cluster.lb, calls, gate) for _ in range(sessions)))
    elapsed = time.perf_counter() - started
    outcomes = dict(results)
    per_replica: dict[str, dict[str, int]] = {}
    for replica in cluster.replicas:
        held = [s for s in replica.sessions() if s["key"] in outcomes]
        per_replica[replica.name] = {
            "sessions": len(held),
            "calls": sum(s["calls"] for s in held),
            "busy": sum(outcomes[s["key"]]["busy"] for s in held),
        }
    counted = sum(r["sessions"] for r in per_replica.values())
    largest = max(r["sessions"] for r in per_replica.values())
    totals: Counter[str] = Counter()
    for counts in outcomes.values():
        totals.update(counts)
    return {
        "sessions": sessions,
        "calls_per_session": calls,
        "seconds": round(elapsed, 1),
        "calls_per_s": round(sessions * calls / elapsed, 1),
        "outcomes": dict(totals),
        "per_replica": per_replica,
        "sessions_seen_by_replicas": counted,
        "largest_share": round(largest / counted, 3),
        "even_share": round(1 / len(cluster.replicas), 3),
    }


async def timed(client: RawClient, n: int, method: str) -> float:
    """One request's milliseconds: `ping` (answered by the gateway alone) or a tool call."""
    started = time.perf_counter()
    if method == "ping":
        status, _ = await client.request(
            "POST", json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode()
        )
        assert status == 200, status
    else:
        assert "result" in await client.call(n, method, {})
    return (time.perf_counter() - started) * 1000


async def lb_cost(cluster: Cluster, calls: int) -> dict[str, Any]:
    key = uuid.uuid4().hex
    through = RawClient(cluster.lb + "/mcp", {**HEADERS, "X-Session-Id": key})
    await through.call(0, "get_current_directory", {})
    [home] = [r for r in cluster.replicas if any(s["key"] == key for s in r.sessions())]
    direct = RawClient(home.base + "/mcp", {**HEADERS, "X-Session-Id": key})
    summary: dict[str, Any] = {"calls_each": calls}
    for method in ("ping", "get_current_directory"):
        times: dict[str, list[float]] = {"direct": [], "nginx": []}
        for n in range(calls):  # alternated, so a busy moment of the machine costs both alike
            order = (
                (("direct", direct), ("nginx", through))
                if n % 2
                else (("nginx", through), ("direct", direct))
            )
            for name, client in order:
                times[name].append(await timed(client, n, method))
        row = {
            name: {
                "p50_ms": round(statistics.median(v), 2),
                "p90_ms": round(statistics.quantiles(v, n=10)[-1], 2),
            }
            for name, v in times.items()
        }
        row["added_p50_ms"] = round(row["nginx"]["p50_ms"] - row["direct"]["p50_ms"], 2)
        summary[method] = row
    await through.close()
    await direct.close()
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=300)
    parser.add_argument("--lb-calls", type=int, default=400)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gaia-replicas-") as tmp:
        started = time.perf_counter()
        with Cluster.start(Path(tmp), NGINX_CONF, SERVERS, replicas=args.replicas) as cluster:
            print(
                f"{args.replicas} replicas and nginx up in {time.perf_counter() - started:.0f} s", flush=True
            )
            result = {
                "spread": asyncio.run(spread(cluster, args.sessions, args.calls, args.concurrency)),
                "lb_cost": asyncio.run(lb_cost(cluster, args.lb_calls)),
            }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
