"""Web search latency through the gateway: uncached (a fake SearXNG with a realistic delay) vs cached.

`gaia-env serve` on 127.0.0.1 with googlesearch-server only; a loopback SearXNG (gaia_kit_testing.fake_search)
answering after --delay seconds, as a real instance does while it asks its engines. Each distinct
query is a cache miss the first time (the delay is paid) and a hit from the kit's record/replay
cache afterwards; both are measured in one run, so the ratio holds on a noisy machine.

    uv run python -m benchmarks.search_latency [--queries 40] [--delay 0.5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from gaia_kit_testing.fake_search import FakePage, FakeSearch
from gaia_kit_testing.gateway import RunningGateway, launch

PAGES = [
    FakePage(f"Result {n} about towers", f"https://example.org/{n}", f"Tower fact {n}.") for n in range(30)
]


def start_search_gateway(tmp: Path, searxng_url: str) -> RunningGateway:
    env: dict[str, str | None] = {
        # The keyless SearXNG backend, whatever keys this shell has.
        **dict.fromkeys(("GOOGLE_API_KEY", "GOOGLE_CSE_ID", "SEARCH_BACKEND")),
        "SEARXNG_URL": searxng_url,
        "GAIA_HTTP_ALLOW": "127.0.0.1",
        "GAIA_HTTP_CACHE_MODE": "read-write",
        "GAIA_HTTP_CACHE_PATH": str(tmp / "http-cache.sqlite"),
    }
    return launch(
        tmp, "--log-level", "warning", "--servers", "googlesearch-server", env=env, ready_timeout=120
    )


def search(client: httpx.Client, url: str, query: str) -> float:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_google", "arguments": {"query": query, "num_results": 10}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream", "X-Session-Id": "bench"}
    started = time.perf_counter()
    reply = client.post(url, json=body, headers=headers, timeout=60).json()
    elapsed = (time.perf_counter() - started) * 1000
    result = reply["result"]
    assert not result.get("isError"), result
    assert '"backend": "searxng"' in result["content"][0]["text"], result
    return elapsed


def summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds the fake SearXNG takes to answer")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gaia-search-bench-"))
    queries = [f"tower fact {n}" for n in range(args.queries)]
    with FakeSearch(PAGES, delay_s=args.delay) as fake:
        gateway = start_search_gateway(tmp, fake.searxng_url)
        url = gateway.url
        try:
            with httpx.Client() as client:
                search(client, url, "warm up the server")
                uncached = [search(client, url, q) for q in queries]
                upstream = len(fake.requests)
                cached = [search(client, url, q) for q in queries]
                assert len(fake.requests) == upstream, "a cached query reached the upstream"
        finally:
            gateway.stop()
    first, again = summary(uncached), summary(cached)
    print(json.dumps({"upstream_delay_ms": args.delay * 1000, "queries": args.queries, "uncached": first,
                      "cached": again, "speedup_p50": round(first["p50_ms"] / again["p50_ms"], 1)}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
