"""A training-shaped load on `gaia-env serve` with every server: many rollouts at once, each its own session.

    uv run --no-sync python -m benchmarks.rollout_load [--sessions 512] [--duration-s 300] [--runs 2]
        [--think-s 2] [--navigate 0.10] [--ocr 0.05] [--call-timeout-s 120] [--json results.json]

Each of `--sessions` lanes runs rollouts back to back. A rollout is a fresh `X-Session-Id` and the
calls of a GAIA-style episode, with an exponential think time (mean `--think-s`) before each: list the
dataset, read a CSV, an xlsx and a docx, run a sandboxed command, write a file and read it back, run
code E2B-style; `--navigate` of the rollouts also open a local page in the browser, `--ocr` of them
read a scanned image. Then `DELETE /mcp` ends the session. A busy answer is retried after the time it
gives, backing off, within the per-call deadline, as the trainer's client does.

The load runs `--runs` times back to back on the same gateway, so memory growth shows. Printed per
run: calls and outcomes per tool with p50/p99 latency, busy answers (and how fast they came),
timeouts, transport failures, replica restarts, RSS and process counts sampled over time, and what
was left behind (workspaces, Chromium renderers, sandboxes) once every session had ended.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import itertools
import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from gaia_contract import BUSY
from gaia_kit_testing.gateway import RunningGateway

from benchmarks.attachments import make_attachments
from benchmarks.loadgen import RawClient, start_gateway, tree, tree_rss_mib

DATASET_ALIAS = "/workspace/gaia_dataset"
SAMPLE_EVERY_S = 5.0


# -- fixtures -------------------------------------------------------------------------------------


class _Page(http.server.BaseHTTPRequestHandler):
    BODY = (
        "<!doctype html><html><head><title>Local page</title></head><body><h1>Opening hours</h1>"
        + "".join(f"<p>Item {n}: the museum opens at {9 + n % 3} am.</p>" for n in range(40))
        + '<a href="/page.html">Again</a></body></html>'
    ).encode()

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *args: Any) -> None:
        pass


def serve_page() -> tuple[http.server.ThreadingHTTPServer, str]:
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    return site, f"http://127.0.0.1:{site.server_address[1]}/page.html"


def rollout_calls(rng: random.Random, page_url: str, navigate: float, ocr: float) -> list[tuple[str, dict]]:
    data = DATASET_ALIAS
    calls = [
        ("filesystem-server__list_directory", {"path": data}),
        ("extract_csv_content", {"file_path": f"{data}/sales.csv"}),
        ("read_data_from_excel", {"filepath": f"{data}/sales.xlsx", "sheet_name": "Data", "end_cell": "E60"}),
        ("extract_docx_content", {"file_path": f"{data}/report.docx"}),
        ("terminal-server__execute_command", {"command": "python3 -c 'print(6 * 7)' && ls"}),
        ("filesystem-server__write_file", {"path": "notes.txt", "content": "units: 42\n"}),
        ("read_text_file", {"path": "notes.txt"}),
        ("e2b_run_code", {"code_block": "total = sum(range(100))\nprint(total)"}),
    ]
    if rng.random() < navigate:
        calls.insert(rng.randrange(len(calls) + 1), ("browser_navigate", {"url": page_url}))
    if rng.random() < ocr:
        calls.insert(rng.randrange(len(calls) + 1), ("extract_text_ocr", {"file_path": f"{data}/scan.png"}))
    return calls


# -- the load -------------------------------------------------------------------------------------


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    busy_latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    rollouts: int = 0
    sessions_ended: int = 0
    samples: list[dict[str, float]] = field(default_factory=list)


def classify(reply: dict[str, Any]) -> tuple[str, str]:
    if "error" in reply:
        return "rpc_error", reply["error"].get("message", "")[:160]
    result = reply["result"]
    text = " ".join(b.get("text", "") for b in result.get("content", []) if b.get("type") == "text")
    if (
        "timed out after" in text
        or "did not finish loading within" in text
        or "did not finish in time" in text
    ):
        return "timeout", text[:160]
    return ("tool_error", text[:160]) if result.get("isError") else ("ok", "")


async def one_call(
    client: RawClient, ids: itertools.count, tool: str, arguments: dict, deadline_s: float, tally: Tally
) -> None:
    started = time.monotonic()
    attempt = 0
    while True:
        sent = time.monotonic()
        try:
            async with asyncio.timeout(deadline_s + 60):
                reply = await client.call(next(ids), tool, arguments)
        except (OSError, ValueError, asyncio.IncompleteReadError, TimeoutError) as exc:
            await client.close()
            tally.outcomes[tool]["transport"] += 1
            tally.errors[f"{tool}: transport: {type(exc).__name__}: {exc}"[:200]] += 1
            return
        error = reply.get("error") or {}
        if error.get("code") == BUSY:
            tally.busy_latencies[tool].append(time.monotonic() - sent)
            tally.outcomes[tool]["busy_answer"] += 1
            wait = min(30.0, float(error["data"]["retryAfter"]) * 1.5**attempt) * random.uniform(1, 1.25)
            if time.monotonic() + wait - started >= deadline_s:
                tally.outcomes[tool]["busy_gave_up"] += 1
                return
            attempt += 1
            await asyncio.sleep(wait)
            continue
        outcome, detail = classify(reply)
        tally.outcomes[tool][outcome] += 1
        if outcome != "ok":
            tally.errors[f"{tool}: {outcome}: {detail}"] += 1
        tally.latencies[tool].append(time.monotonic() - started)
        return


async def lane(
    index: int, args: argparse.Namespace, url: str, page_url: str, until: float, tally: Tally
) -> None:
    rng = random.Random(index)
    ids = itertools.count(1)
    for number in itertools.count():
        if time.monotonic() >= until:
            return
        session = f"load-{index}-{number}-{os.getpid()}"
        client = RawClient(url, {"X-Session-Id": session})
        try:
            for tool, arguments in rollout_calls(rng, page_url, args.navigate, args.ocr):
                await asyncio.sleep(rng.expovariate(1 / args.think_s))
                if time.monotonic() >= until:
                    break
                await one_call(client, ids, tool, arguments, args.call_timeout_s, tally)
            status, body = await client.request("DELETE")
            if status == 200 and json.loads(body).get("ended"):
                tally.sessions_ended += 1
            tally.rollouts += 1
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
            tally.errors[f"DELETE: transport: {type(exc).__name__}"] += 1
        finally:
            await client.close()


def snapshot(gateway: RunningGateway) -> dict[str, Any]:
    """Memory and processes of the gateway's whole tree, by kind."""
    procs = tree(gateway.proc.pid)
    kinds: Counter[str] = Counter()
    for proc in procs:
        try:
            cmdline = " ".join(proc.cmdline())
            name = proc.name()
        except psutil.Error:
            continue
        if "--type=renderer" in cmdline:
            kinds["chromium_renderers"] += 1
        elif "chrom" in name:
            kinds["chromium_other"] += 1
        elif name in ("bwrap", "firejail") or "sandbox" in cmdline and "python" not in name:
            kinds["sandboxes"] += 1
    return {
        "t": time.monotonic(),
        "rss_mib": round(tree_rss_mib(gateway.proc.pid), 1),
        "processes": len(procs),
        **kinds,
        "load1": os.getloadavg()[0],
    }


async def sample(gateway: RunningGateway, tally: Tally, stop: asyncio.Event) -> None:
    while not stop.is_set():
        tally.samples.append(await asyncio.to_thread(snapshot, gateway))
        try:
            await asyncio.wait_for(stop.wait(), SAMPLE_EVERY_S)
        except TimeoutError:
            pass


async def run_load(args: argparse.Namespace, gateway: RunningGateway, page_url: str) -> Tally:
    tally = Tally()
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample(gateway, tally, stop))
    until = time.monotonic() + args.duration_s
    await asyncio.gather(*(lane(i, args, gateway.url, page_url, until, tally) for i in range(args.sessions)))
    stop.set()
    await sampler
    return tally


# -- the report -----------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def restarts(status: dict[str, Any]) -> int:
    return sum(server["restarts"] for server in status["servers"].values())


def summarize(tally: Tally, before: dict, after: dict, left: dict, elapsed: float) -> dict[str, Any]:
    per_tool = {}
    for tool in sorted(tally.outcomes):
        lat = tally.latencies.get(tool, [])
        per_tool[tool] = {
            **dict(tally.outcomes[tool]),
            "p50_s": round(statistics.median(lat), 3) if lat else None,
            "p99_s": round(percentile(lat, 0.99), 3) if lat else None,
            "busy_max_s": round(max(busy), 3) if (busy := tally.busy_latencies.get(tool)) else None,
        }
    all_busy = [s for values in tally.busy_latencies.values() for s in values]
    totals: Counter[str] = Counter()
    for counts in tally.outcomes.values():
        totals.update(counts)
    served = sum(totals[k] for k in ("ok", "tool_error", "timeout", "rpc_error"))
    return {
        "elapsed_s": round(elapsed, 1),
        "rollouts": tally.rollouts,
        "sessions_ended": tally.sessions_ended,
        "calls_answered": served,
        "calls_per_s": round(served / elapsed, 1),
        "totals": dict(totals),
        "busy_answer_p50_ms": round(statistics.median(all_busy) * 1000, 1) if all_busy else None,
        "busy_answer_p99_ms": round(percentile(all_busy, 0.99) * 1000, 1) if all_busy else None,
        "busy_answer_max_ms": round(max(all_busy) * 1000, 1) if all_busy else None,
        "restarts": restarts(after) - restarts(before),
        "per_tool": per_tool,
        "errors": tally.errors.most_common(12),
        "rss_mib": {
            "start": tally.samples[0]["rss_mib"],
            "max": max(s["rss_mib"] for s in tally.samples),
            "end": tally.samples[-1]["rss_mib"],
            "after_sessions_ended": left["rss_mib"],
        },
        "processes": {
            "start": tally.samples[0]["processes"],
            "max": max(s["processes"] for s in tally.samples),
        },
        "left_behind": left,
        "load1_max": round(max(s["load1"] for s in tally.samples), 1),
        "replicas": {
            sid: len(s["replicas"]) for sid, s in after["servers"].items() if len(s["replicas"]) > 1
        },
    }


def print_report(number: int, report: dict[str, Any]) -> None:
    print(
        f"\n=== run {number}: {report['elapsed_s']} s, {report['rollouts']} rollouts, {report['calls_answered']} calls answered ({report['calls_per_s']}/s)"
    )
    totals = report["totals"]
    print(
        f"transport failures {totals.get('transport', 0)}, timeouts {totals.get('timeout', 0)}, "
        f"busy answers {totals.get('busy_answer', 0)} (p50 {report['busy_answer_p50_ms']} ms, p99 {report['busy_answer_p99_ms']} ms, max {report['busy_answer_max_ms']} ms), "
        f"gave up busy {totals.get('busy_gave_up', 0)}, replica restarts {report['restarts']}"
    )
    print(
        f"{'tool':36} {'ok':>6} {'error':>6} {'busy':>6} {'gave up':>7} {'timeout':>7} {'p50 s':>7} {'p99 s':>7} {'busy max s':>10}"
    )
    for tool, row in report["per_tool"].items():
        print(
            f"{tool:36} {row.get('ok', 0):>6} {row.get('tool_error', 0) + row.get('rpc_error', 0):>6} "
            f"{row.get('busy_answer', 0):>6} {row.get('busy_gave_up', 0):>7} {row.get('timeout', 0):>7} "
            f"{row['p50_s'] if row['p50_s'] is not None else '-':>7} {row['p99_s'] if row['p99_s'] is not None else '-':>7} {row['busy_max_s'] or '-':>10}"
        )
    print(f"RSS MiB (gateway tree): {report['rss_mib']}; processes: {report['processes']}")
    print(f"left behind once every session ended: {report['left_behind']}")
    print(f"replicas scaled up: {report['replicas']}; machine load (1 min) max {report['load1_max']}")
    for error, count in report["errors"]:
        print(f"  {count:>5} x {error}")


def left_behind(gateway: RunningGateway, baseline: dict[str, Any]) -> dict[str, Any]:
    """What outlived the sessions: workspaces, and Chromium renderers or sandboxes beyond the idle count."""
    now = snapshot(gateway)
    root = gateway.workspace_root
    # Dot entries are the gateway's own bookkeeping (.gaia-quota), not a session's workspace.
    workspaces = [p.name for p in root.iterdir() if not p.name.startswith(".")] if root.exists() else []
    return {
        "workspaces": len(workspaces),
        "chromium_renderers": now.get("chromium_renderers", 0),
        "chromium_renderers_idle": baseline.get("chromium_renderers", 0),
        "sandboxes": now.get("sandboxes", 0),
        "processes": now["processes"],
        "rss_mib": now["rss_mib"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=512, help="rollouts at once")
    parser.add_argument("--duration-s", type=float, default=300, help="seconds each run starts new calls")
    parser.add_argument("--runs", type=int, default=2, help="runs back to back on the same gateway")
    parser.add_argument("--think-s", type=float, default=2.0, help="mean of the exponential think time")
    parser.add_argument("--navigate", type=float, default=0.10, help="share of rollouts that open a page")
    parser.add_argument("--ocr", type=float, default=0.05, help="share of rollouts that OCR an image")
    parser.add_argument(
        "--call-timeout-s", type=float, default=120, help="per-call deadline, busy retries included"
    )
    parser.add_argument("--servers", default="", help="server ids to run (default: every enabled one)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gaia-load-"))
    make_attachments(tmp / "dataset")
    site, page_url = serve_page()
    extra = ["--servers", args.servers] if args.servers else []
    print(
        f"machine: {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; load {os.getloadavg()}"
    )
    started = time.monotonic()
    gateway = start_gateway(tmp, tmp / "dataset", *extra, env={"GAIA_HTTP_ALLOW": "127.0.0.1"})
    print(f"gateway ready in {time.monotonic() - started:.1f} s; log: {gateway.log_path}")
    reports = []
    try:
        time.sleep(5)
        baseline = snapshot(gateway)
        print(f"idle: {baseline}")
        for number in range(1, args.runs + 1):
            before = gateway.status()
            began = time.monotonic()
            tally = asyncio.run(run_load(args, gateway, page_url))
            elapsed = time.monotonic() - began
            time.sleep(3)  # the last DELETEs' releases (contexts, sandboxes) finish
            report = summarize(tally, before, gateway.status(), left_behind(gateway, baseline), elapsed)
            reports.append(report)
            print_report(number, report)
    finally:
        family = tree(gateway.proc.pid)
        gateway.stop()
        site.shutdown()
        _, alive = psutil.wait_procs(family, timeout=10)
        print(f"\nafter gaia-env serve stopped: {len(alive)} of its {len(family)} processes still alive")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "runs": reports}, indent=2, default=str
            )
        )


if __name__ == "__main__":
    main()
