"""readweb-server: read_url latency on a loopback page, first read vs cached reads and the next part.

    uv run --no-sync python -m benchmarks.web_read [--repeats 20]

The page is gaia_kit_testing.fake_web's /long.html (about 100,000 characters of article text) and its
/article.html (a short article). Each read goes through the real tool over MCP, in one process, with
a fresh HTTP cache file: the first read fetches and extracts, later reads are answered by the HTTP
cache and extract again; reading the second part (start_index) is what paging a long page costs.
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


async def measure(repeats: int) -> dict[str, object]:
    from gaia_kit_testing import session_call
    from gaia_kit_testing.fake_web import FakeWeb
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
        async with session_call(server, workspace) as call:

            async def timed(**arguments: object) -> float:
                start = time.perf_counter()
                result = await call("read_url", **arguments)
                assert not result.is_error, result.content[0].text
                return (time.perf_counter() - start) * 1000

            for page in ("/article.html", "/long.html"):
                url = web.url(page)
                first = await timed(url=url)
                cached = [await timed(url=url) for _ in range(repeats)]
                second_part = [await timed(url=url, start_index=30000) for _ in range(repeats)]
                report[page] = {
                    "first_ms": round(first, 1),
                    "cached_p50_ms": round(statistics.median(cached), 1),
                    "next_part_p50_ms": round(statistics.median(second_part), 1),
                    "first_vs_cached": round(first / statistics.median(cached), 2),
                }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.repeats)), indent=2))


if __name__ == "__main__":
    main()
