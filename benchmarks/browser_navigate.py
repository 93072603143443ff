"""ms-playwright: navigate + snapshot latency, 16 sessions browsing at once, memory per open context.

uv run python -m benchmarks.browser_navigate [--runs 20] [--sessions 16] [--seconds 20]

One replica (the server in this process, its one Chromium), called through MCP as the gateway
calls it, against a local page of 60 links, a form and 40 paragraphs served on 127.0.0.1.
Memory is the proportional set size (PSS) of this process's children: Playwright's driver and
the Chromium process tree; per context = (with N+1 sessions open - with 1 open) / N.
"""

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil

os.environ.setdefault("GAIA_HTTP_ALLOW", "127.0.0.1")

from gaia_kit_testing import session_call  # noqa: E402
from gaia_kit_testing.loopback import LoopbackServer  # noqa: E402
from ms_playwright.browser import host  # noqa: E402
from ms_playwright.server import server  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import HTMLResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

LINKS = "".join(f'<li><a href="/page/{n}">Article number {n}</a></li>' for n in range(60))
TEXT = "".join(f"<p>Paragraph {n}: some ordinary prose that a page would carry.</p>" for n in range(40))
FORM = '<form><label>Search <input name="q"></label><select><option>All</option></select><button>Go</button></form>'


async def article(request):
    n = request.path_params["n"]
    return HTMLResponse(f"<title>Article {n}</title><h1>Article {n}</h1>{FORM}<ul>{LINKS}</ul>{TEXT}")


def browser_pss_mb() -> float:
    total = 0
    for child in psutil.Process().children(recursive=True):
        try:
            total += child.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total / 2**20


def _children_cpu() -> dict[str, float]:
    """CPU seconds of the driver (node) and of Chromium's processes, this run's children."""
    total = {"driver": 0.0, "chromium": 0.0}
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
            total["driver" if child.name().startswith("node") else "chromium"] += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    app = Starlette(routes=[Route("/page/{n:int}", article)])
    with tempfile.TemporaryDirectory() as root, LoopbackServer(app) as site:
        os.environ["GAIA_WORKSPACE_ROOT"] = root
        spaces = [Path(root) / f"s{i}" for i in range(args.sessions + 1)]
        for space in spaces:
            space.mkdir()

        async with session_call(server, spaces[0], "bench-0") as call:
            assert not (await call("browser_navigate", url=site.url("/page/0"))).is_error  # launch + warm up
            latencies = []
            for n in range(args.runs):
                started = time.perf_counter()
                result = await call("browser_navigate", url=site.url(f"/page/{n}"))
                latencies.append((time.perf_counter() - started) * 1000)
                assert not result.is_error and f"Article number {n}" in result.content[0].text
            base_mb = browser_pss_mb()

        calls = 0
        deadline = time.monotonic() + args.seconds

        async def browse(i: int) -> None:
            nonlocal calls
            async with session_call(server, spaces[i + 1], f"bench-{i + 1}") as session:
                n = 0
                while time.monotonic() < deadline:
                    result = await session("browser_navigate", url=site.url(f"/page/{n % 60}"))
                    assert not result.is_error, result.content[0].text
                    calls += 1
                    n += 1

        me = psutil.Process()
        cpu_before = me.cpu_times()
        kids_before = _children_cpu()
        started = time.monotonic()
        await asyncio.gather(*(browse(i) for i in range(args.sessions)))
        elapsed = time.monotonic() - started
        cpu_after = me.cpu_times()
        own_cpu = cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system
        kids_after = _children_cpu()
        driver_cpu = kids_after["driver"] - kids_before["driver"]
        chromium_cpu = kids_after["chromium"] - kids_before["chromium"]
        open_mb = browser_pss_mb()
        for i in range(args.sessions + 1):
            await host.end_session(f"bench-{i}")
        print(
            f"navigate + snapshot, one session, {args.runs} runs: median {statistics.median(latencies):.0f} ms, "
            f"p90 {sorted(latencies)[int(len(latencies) * 0.9) - 1]:.0f} ms"
        )
        print(
            f"{args.sessions} sessions at once: {calls / elapsed:.1f} navigations/s "
            f"({elapsed / max(calls, 1) * args.sessions * 1000:.0f} ms per navigation per session)"
        )
        print(
            f"CPU per navigation: {own_cpu / calls * 1000:.0f} ms in this process (MCP, Playwright client, proxy), "
            f"{driver_cpu / calls * 1000:.0f} ms in Playwright's driver, {chromium_cpu / calls * 1000:.0f} ms in Chromium"
        )
        print(
            f"browser PSS: {base_mb:.0f} MB with 1 context, {open_mb:.0f} MB with {args.sessions + 1}: "
            f"{(open_mb - base_mb) / args.sessions:.1f} MB per open context"
        )


if __name__ == "__main__":
    asyncio.run(main())
