"""What the benchmark-copy guard costs a read: read_url with and without a task in the session.

    uv run --no-sync python -m benchmarks.benchmark_guard [--repeats 20]

readweb-server over MCP in one process, as the gateway calls it, against gaia_kit_testing.fake_web's
/long.html (about 100,000 characters) and /article.html, every read answered by the HTTP cache (the
first one records it): the median read with no task against the median read whose `_meta` carries a
task question (the page is screened whole, then paged). The ratio is the guard's share of a read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

QUESTION = (
    "The printed guide of the 1987 lighthouse exhibition in Bergen names the keeper who served longest at "
    "the Hellisoy light. How many years did that keeper serve there before the station was automated?"
)


async def measure(repeats: int) -> dict[str, object]:
    from gaia_contract import SESSION_ID_KEY, TASK_KEY, WORKSPACE_KEY
    from gaia_kit_testing.fake_web import FakeWeb
    from mcp import Client
    from readweb_server.server import server

    report: dict[str, object] = {}
    with FakeWeb() as web, tempfile.TemporaryDirectory() as folder:
        os.environ.update(
            GAIA_HTTP_ALLOW="127.0.0.1",
            GAIA_HTTP_CACHE_PATH=str(Path(folder) / "cache.sqlite"),
            GAIA_WORKSPACE_ROOT=folder,
        )
        for name in ("READWEB_BACKEND", "JINA_API_KEY", "TAVILY_API_KEY"):
            os.environ.pop(name, None)
        workspace = Path(folder) / "s1"
        workspace.mkdir()
        plain = {SESSION_ID_KEY: "s1", WORKSPACE_KEY: str(workspace)}
        tasked = {**plain, TASK_KEY: {"question": QUESTION}}
        async with Client(server) as client:

            async def timed(url: str, meta: dict) -> float:
                start = time.perf_counter()
                result = await client.call_tool("read_url", {"url": url}, meta=meta)
                assert not result.is_error, result.content[0].text
                return (time.perf_counter() - start) * 1000

            for page in ("/article.html", "/long.html"):
                url = web.url(page)
                await timed(url, plain)  # fetch and record
                without, screened = [], []
                for _ in range(repeats):  # interleaved, so both see the same machine
                    without.append(await timed(url, plain))
                    screened.append(await timed(url, tasked))
                report[page] = {
                    "no_task_p50_ms": round(statistics.median(without), 1),
                    "with_task_p50_ms": round(statistics.median(screened), 1),
                    "with_vs_without": round(statistics.median(screened) / statistics.median(without), 2),
                }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.repeats)), indent=2))


if __name__ == "__main__":
    main()
