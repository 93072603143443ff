"""CPU milliseconds per call for every tool, measured through the gateway, and the calls per core it implies.

    uv run --no-sync python -m benchmarks.tool_cost [--reps 5] [--only server-id,...] [--json costs.json]

`gaia-env serve` runs every server, one replica each, with every external service replaced by the
loopback fakes the tests use (web pages, Google CSE and SearXNG, MediaWiki, arXiv, Wayback, an
OpenAI-compatible model that answers at once) and local backends for the rest (tesseract, the tiny.en
speech model, bubblewrap, Chromium). Each tool is called in one session, one call at a time, with
realistic small inputs generated here, after one untimed call per server: at least `--reps` times,
cheap tools more (up to 40, about 2 s of calls), since CPU time comes in 10 ms ticks. During each
call the CPU time of the server's whole process tree (its subprocesses and Chromium included) is
sampled every 0.2 s, and the gateway process's before and after; the table gives the mean per call,
the wall time p50, and 1000 / (server + gateway ms): how many such calls one core serves per second. The fakes run in this process and are not counted: a
model's or a website's own work is not the environment's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from gaia_kit_testing.gateway import RunningGateway

from benchmarks.attachments import make_attachments
from benchmarks.loadgen import cpu_seconds, start_gateway, tree

ROOT = Path(__file__).resolve().parents[1]
DATA = "/workspace/gaia_dataset"

Args = Callable[["Context", int], dict[str, Any]]


@dataclass
class Context:
    workspace: Path
    web: str
    site: str
    book: Path

    def copy_book(self, name: str) -> str:
        shutil.copyfile(self.book, self.workspace / name)
        return name

    def fresh(self, name: str, i: int) -> str:
        """A copy of a dataset file under a new name for each call: servers cache reports per file and
        session, and a rollout reads its attachment once, so a repeated read would measure the cache.
        Named relative to the workspace, as an agent names its files (it never learns the host's path)."""
        source = self.book.parent / name
        target = self.workspace / "fresh" / f"{i}-{name}"
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(source, target)
        return f"fresh/{i}-{name}"


@dataclass
class Case:
    server: str
    tool: str
    """As the gateway lists it with every server selected (qualified where names collide)."""
    args: Args


# -- fixtures -------------------------------------------------------------------------------------


def model_reply(body: dict[str, Any]) -> str:
    """The fake model's answer: a browser-use step, a code block, or a plain sentence."""
    text = json.dumps(body["messages"])
    if "evaluation_previous_goal" in text or "next_goal" in text:
        urls = re.findall(r"http://127\.0\.0\.1:\d+/[\w./?=-]*", text)
        if "Current url" in text or len(body["messages"]) > 3 or not urls:
            action = {"done": {"text": "The page says the museum opens at 9.", "success": True}}
        else:
            action = {"navigate": {"url": urls[0], "new_tab": False}}
        return json.dumps(
            {"evaluation_previous_goal": "", "memory": "", "next_goal": "go on", "action": [action]}
        )
    if "python" in text.lower() and ("code" in text.lower()):
        return "```python\nprint(sum(range(10)))\n```"
    return "The answer is 42: the steps check out, and the image shows lines of text."


# -- the cases ------------------------------------------------------------------------------------


def excel(tool: str, **fixed: Any) -> Case:
    def args(ctx: Context, i: int) -> dict[str, Any]:
        return {"filepath": ctx.copy_book(f"x-{tool}-{i}.xlsx"), **fixed}

    return Case("excel", tool, args)


def const(server: str, tool: str, **arguments: Any) -> Case:
    return Case(server, tool, lambda ctx, i: arguments)


CASES: list[Case] = [
    # filesystem-server
    const("filesystem-server", "list_allowed_directories"),
    Case(
        "filesystem-server",
        "filesystem-server__write_file",
        lambda c, i: {"path": f"fs/w{i}.txt", "content": "alpha beta\n" * 50},
    ),
    const("filesystem-server", "read_text_file", path="fs/w0.txt"),
    const("filesystem-server", "filesystem-server__read_file", path="fs/w0.txt"),
    Case("filesystem-server", "read_media_file", lambda c, i: {"path": c.fresh("scan.png", i)}),
    const("filesystem-server", "read_multiple_files", paths=["fs/w0.txt", "fs/w1.txt"]),
    Case(
        "filesystem-server",
        "edit_file",
        lambda c, i: {"path": f"fs/w{i}.txt", "edits": [{"oldText": "alpha", "newText": "gamma"}]},
    ),
    Case("filesystem-server", "create_directory", lambda c, i: {"path": f"fs/d{i}"}),
    const("filesystem-server", "filesystem-server__list_directory", path="fs"),
    const("filesystem-server", "list_directory_with_sizes", path="fs"),
    const("filesystem-server", "directory_tree", path="fs"),
    Case(
        "filesystem-server",
        "move_file",
        lambda c, i: {"source": f"fs/w{i}.txt", "destination": f"fs/moved{i}.txt"},
    ),
    const("filesystem-server", "search_files", path="fs", pattern="*.txt"),
    const("filesystem-server", "get_file_info", path="fs/moved0.txt"),
    # documents
    Case("documents-txt-server", "extract_text_content", lambda c, i: {"file_path": c.fresh("notes.txt", i)}),
    const("documents-txt-server", "documents-txt-server__list_supported_formats"),
    Case("documents-csv-server", "extract_csv_content", lambda c, i: {"file_path": c.fresh("sales.csv", i)}),
    const("documents-csv-server", "documents-csv-server__list_supported_formats"),
    Case(
        "documents-docx-server", "extract_docx_content", lambda c, i: {"file_path": c.fresh("report.docx", i)}
    ),
    const("documents-docx-server", "documents-docx-server__list_supported_formats"),
    Case(
        "documents-pptx-server", "extract_pptx_content", lambda c, i: {"file_path": c.fresh("deck.pptx", i)}
    ),
    const("documents-pptx-server", "documents-pptx-server__list_supported_formats"),
    Case(
        "documents-pdf-server",
        "convert_document_to_markdown",
        lambda c, i: {"file_path": c.fresh("paper.pdf", i)},
    ),
    # excel: each call on its own copy of a 300-row workbook
    excel("read_data_from_excel", sheet_name="Data", end_cell="E60"),
    excel("get_workbook_metadata", include_ranges=True),
    excel("get_merged_cells", sheet_name="Data"),
    excel("get_data_validation_info", sheet_name="Data"),
    excel("validate_excel_range", sheet_name="Data", start_cell="A1", end_cell="E10"),
    excel("apply_formula", sheet_name="Data", cell="G2", formula="=SUM(C2:C100)"),
    excel("validate_formula_syntax", sheet_name="Data", cell="G2", formula="=SUM(C2:C100)"),
    excel("write_data_to_excel", sheet_name="Data", data=[[1, 2], [3, 4]], start_cell="H1"),
    Case("excel", "create_workbook", lambda c, i: {"filepath": f"new-{i}.xlsx"}),
    excel("create_worksheet", sheet_name="Extra"),
    excel("copy_worksheet", source_sheet="Data", target_sheet="Copy"),
    excel("delete_worksheet", sheet_name="Spare"),
    excel("rename_worksheet", old_name="Spare", new_name="Renamed"),
    excel("format_range", sheet_name="Data", start_cell="A1", end_cell="E1", bold=True),
    excel("merge_cells", sheet_name="Data", start_cell="G1", end_cell="H1"),
    excel("unmerge_cells", sheet_name="Data", start_cell="J1", end_cell="K1"),
    excel("create_table", sheet_name="Data", data_range="A1:E50"),
    excel("create_chart", sheet_name="Data", data_range="C1:D20", chart_type="bar", target_cell="M1"),
    excel("create_pivot_table", sheet_name="Data", data_range="A1:E301", rows=["region"], values=["units"]),
    excel("copy_range", sheet_name="Data", source_start="A1", source_end="B5", target_start="N1"),
    excel("delete_range", sheet_name="Data", start_cell="A290", end_cell="E300"),
    excel("insert_rows", sheet_name="Data", start_row=5),
    excel("insert_columns", sheet_name="Data", start_col=2),
    excel("delete_sheet_rows", sheet_name="Data", start_row=5),
    excel("delete_sheet_columns", sheet_name="Data", start_col=6),
    # model-backed (the fake model answers at once)
    const(
        "intelligence-think-server", "complex_problem_reasoning", question="Which is larger, 2**10 or 10**3?"
    ),
    const("intelligence-think-server", "intelligence-think-server__get_reasoning_capabilities"),
    const(
        "intelligence-guard-server",
        "guarding_reasoning_process",
        question="Check: 2**10 = 1024, so it is larger.",
    ),
    const("intelligence-guard-server", "get_guarding_capabilities"),
    const(
        "intelligence-code-server",
        "generate_python_code",
        task_description="Print the sum of 0..9 with python code",
    ),
    const("intelligence-code-server", "intelligence-code-server__get_reasoning_capabilities"),
    # code and terminals (bubblewrap)
    Case("e2b-code-server", "e2b_upload_file", lambda c, i: {"path": c.fresh("sales.csv", i)}),
    const("e2b-code-server", "e2b_run_code", code_block="total = sum(range(100))\nprint(total)"),
    const("terminal-server", "terminal-server__execute_command", command="python3 -c 'print(6 * 7)' && ls"),
    const("terminal-server", "terminal-server__get_command_history"),
    const("terminal-server", "get_terminal_capabilities"),
    Case(
        "terminal-controller",
        "terminal-controller__write_file",
        lambda c, i: {"path": f"tc{i}.txt", "content": "one\ntwo\nthree\n"},
    ),
    const("terminal-controller", "terminal-controller__read_file", path="tc0.txt"),
    Case(
        "terminal-controller",
        "insert_file_content",
        lambda c, i: {"path": f"tc{i}.txt", "content": "zero", "row": 0},
    ),
    Case(
        "terminal-controller",
        "update_file_content",
        lambda c, i: {"path": f"tc{i}.txt", "content": "TWO", "row": 2},
    ),
    Case("terminal-controller", "delete_file_content", lambda c, i: {"path": f"tc{i}.txt", "row": 1}),
    const("terminal-controller", "terminal-controller__execute_command", command="echo hello && ls"),
    const("terminal-controller", "terminal-controller__get_command_history"),
    const("terminal-controller", "get_current_directory"),
    const("terminal-controller", "change_directory", path="."),
    const("terminal-controller", "terminal-controller__list_directory"),
    # images, audio, video
    Case("media-image-server", "extract_text_ocr", lambda c, i: {"file_path": c.fresh("scan.png", i)}),
    Case("media-image-server", "analyze_image_ai", lambda c, i: {"file_path": c.fresh("scan.png", i)}),
    Case("media-image-server", "get_image_metadata", lambda c, i: {"file_path": c.fresh("scan.png", i)}),
    Case(
        "image-server",
        "mcp_image_recognition",
        lambda c, i: {"image_urls": [c.fresh("scan.png", i)], "question": "What?"},
    ),
    Case("media-audio-server", "transcribe_audio", lambda c, i: {"file_path": c.fresh("speech.wav", i)}),
    Case(
        "media-audio-server", "extract_audio_metadata", lambda c, i: {"file_path": c.fresh("speech.wav", i)}
    ),
    Case(
        "media-audio-server",
        "trim_audio",
        lambda c, i: {"file_path": c.fresh("speech.wav", i), "start_time": 0.5},
    ),
    const("media-audio-server", "media-audio-server__list_supported_formats"),
    Case("audio-server", "mcp_transcribe_audio", lambda c, i: {"audio_urls": [c.fresh("speech.wav", i)]}),
    Case(
        "media-video-server",
        "extract_keyframes",
        lambda c, i: {"video_path": c.fresh("clip.mp4", i), "target_time": 2},
    ),
    Case(
        "media-video-server",
        "analyze_video",
        lambda c, i: {"video_url": c.fresh("clip.mp4", i), "question": "What is shown?"},
    ),
    Case("media-video-server", "summarize_video", lambda c, i: {"video_url": c.fresh("clip.mp4", i)}),
    # knowledge APIs (loopback fakes)
    const("wiki-server", "search_wikipedia", query="python language"),
    const("wiki-server", "get_article_content", title="Python (programming language)"),
    const("wiki-server", "get_article_summary", title="Python (programming language)"),
    const("wiki-server", "get_article_categories", title="Python (programming language)"),
    const("wiki-server", "get_article_links", title="Python (programming language)"),
    const("wiki-server", "get_article_history", title="Python (programming language)", date="2012-01-01"),
    const("wiki-server", "get_wikipedia_capabilities"),
    const("parxiv-server", "search_papers", query="agents"),
    const("parxiv-server", "get_paper_details", paper_id="2301.07041"),
    const("parxiv-server", "download_paper", paper_id="2301.07041"),
    const("parxiv-server", "get_arxiv_capabilities"),
    const("parxiv-server", "get_categories"),
    const("wayback-server", "list_archived_versions", url="example.com"),
    const("wayback-server", "get_archived_content", url="example.com", timestamp="20130919"),
    const("wayback-server", "get_wayback_capabilities"),
    # the web (the fake web serves /article.html and /doc.pdf)
    Case("readweb-server", "read_url", lambda c, i: {"url": f"{c.web}/article.html"}),
    Case(
        "download-server",
        "download_file",
        lambda c, i: {"url": f"{c.web}/doc.pdf", "output_file_path": f"dl-{i}.pdf"},
    ),
    const("download-server", "get_download_capabilities"),
    const("googlesearch-server", "search_google", query="moon landing"),
    const("googlesearch-server", "get_search_capabilities"),
    const("google-search", "search", query="moon landing"),
    Case("google-search", "read_webpage", lambda c, i: {"url": f"{c.web}/article.html"}),
    Case(
        "browser-server",
        "browser_use",
        lambda c, i: {"task": f"Open {c.web}/article.html and say when the museum opens.", "max_steps": 3},
    ),
    const("browser-server", "get_browser_capabilities"),
]


# ms-playwright: a browsing session per repetition, each step acting on refs of the latest snapshot.
def ref(snapshot: str, role_and_name: str) -> str:
    for line in snapshot.splitlines():
        if role_and_name in line and (found := re.search(r"\[ref=([a-z0-9]+)\]", line)):
            return found.group(1)
    raise RuntimeError(f"{role_and_name!r} not in the snapshot")


PLAYWRIGHT_STEPS: list[tuple[str, Callable[[Context, str], dict[str, Any]]]] = [
    ("browser_navigate", lambda c, s: {"url": f"{c.site}/form"}),
    ("browser_snapshot", lambda c, s: {}),
    ("browser_type", lambda c, s: {"element": "Name", "ref": ref(s, 'textbox "Name"'), "text": "Ada"}),
    (
        "browser_select_option",
        lambda c, s: {"element": "Colour", "ref": ref(s, 'combobox "Colour"'), "values": ["g"]},
    ),
    (
        "browser_fill_form",
        lambda c, s: {
            "fields": [
                {"name": "Agree", "type": "checkbox", "ref": ref(s, 'checkbox "Agree"'), "value": "true"}
            ]
        },
    ),
    ("browser_press_key", lambda c, s: {"key": "Tab"}),
    ("browser_click", lambda c, s: {"element": "Send", "ref": ref(s, 'button "Send"')}),
    ("browser_evaluate", lambda c, s: {"function": "() => document.title"}),
    ("browser_take_screenshot", lambda c, s: {}),
    ("browser_console_messages", lambda c, s: {}),
    ("browser_network_requests", lambda c, s: {}),
    ("browser_resize", lambda c, s: {"width": 1024, "height": 700}),
    ("browser_wait_for", lambda c, s: {"time": 0.1}),
    ("browser_tabs", lambda c, s: {"action": "list"}),
    ("browser_navigate", lambda c, s: {"url": f"{c.site}/hover"}),
    ("browser_hover", lambda c, s: {"element": "Products", "ref": ref(s, 'button "Products"')}),
    ("browser_navigate", lambda c, s: {"url": f"{c.site}/drag"}),
    (
        "browser_drag",
        lambda c, s: {
            "startElement": "card",
            "startRef": ref(s, 'button "Draggable card"'),
            "endElement": "zone",
            "endRef": ref(s, 'region "Drop zone"'),
        },
    ),
    ("browser_navigate", lambda c, s: {"url": f"{c.site}/upload"}),
    ("browser_click", lambda c, s: {"element": "Attachment", "ref": ref(s, 'button "Attachment"')}),
    ("browser_file_upload", lambda c, s: {"paths": [f"{DATA}/notes.txt"]}),
    ("browser_navigate", lambda c, s: {"url": f"{c.site}/dialogs"}),
    ("browser_click", lambda c, s: {"element": "Alert", "ref": ref(s, 'button "Alert"')}),
    ("browser_handle_dialog", lambda c, s: {"accept": True}),
    ("browser_navigate_back", lambda c, s: {}),
    ("browser_install", lambda c, s: {}),
    ("browser_close", lambda c, s: {}),
]


# -- measuring ------------------------------------------------------------------------------------


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


class TreeCpu:
    """CPU seconds a process tree used between `start()` and `stop()`: sampled every 0.2 s meanwhile, so
    processes that start and end within the call (a sandbox, a browser-use Chromium) count too."""

    EVERY_S = 0.2

    def __init__(self, root_pid: int, whole_tree: bool = True):
        self.root_pid, self.whole_tree = root_pid, whole_tree
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self, initial: bool = False) -> None:
        procs = tree(self.root_pid) if self.whole_tree else tree(self.root_pid)[:1]
        for proc in procs:
            used = cpu_seconds([proc])
            if initial:
                self.first[proc.pid] = used
            self.last[proc.pid] = max(used, self.last.get(proc.pid, 0.0))

    def _poll(self) -> None:
        while not self._done.wait(self.EVERY_S):
            self._sample()

    def start(self) -> None:
        self._sample(initial=True)
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._done.set()
        assert self._thread is not None
        self._thread.join()
        self._sample()
        return sum(used - self.first.get(pid, 0.0) for pid, used in self.last.items())


class Meter:
    """Calls one tool through the gateway and charges the CPU of its server's tree and the gateway's."""

    def __init__(self, gateway: RunningGateway, session: str):
        self.gateway = gateway
        self.http = httpx.Client(headers={"X-Session-Id": session, "Accept": "application/json"}, timeout=600)
        status = gateway.status()["servers"]
        self.pids = {sid: info["replicas"][0]["pid"] for sid, info in status.items()}
        self.samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        self.failures: dict[tuple[str, str], str] = {}
        self.answers: list[tuple[str, str, dict[str, Any]]] = []
        """Each call's server, tool and whole JSON-RPC reply (tests/test_host_paths.py reads them)."""

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> str:
        server_cpu, gateway_cpu = TreeCpu(self.pids[server]), TreeCpu(self.gateway.proc.pid, whole_tree=False)
        server_cpu.start()
        gateway_cpu.start()
        started = time.perf_counter()
        reply = self.http.post(self.gateway.url, json=_call(tool, arguments)).json()
        wall = time.perf_counter() - started
        self.answers.append((server, tool, reply))
        self.samples.setdefault((server, tool), []).append((server_cpu.stop(), gateway_cpu.stop(), wall))
        text = ""
        if "error" in reply:
            self.failures[(server, tool)] = reply["error"]["message"][:200]
        else:
            text = "\n".join(b.get("text", "") for b in reply["result"]["content"] if b.get("type") == "text")
            if reply["result"].get("isError"):
                self.failures[(server, tool)] = text[:200]
        return text


def repetitions(wall_s: float, least: int) -> int:
    """Enough calls for about 2 s of work (CPU times come in 10 ms ticks), between `least` and 40."""
    return max(least, min(40, math.ceil(2.0 / max(wall_s, 0.001))))


def run_cases(meter: Meter, ctx: Context, cases: list[Case], least: int) -> None:
    for case in cases:
        meter.call(case.server, case.tool, case.args(ctx, 0))
        for i in range(1, repetitions(meter.samples[(case.server, case.tool)][0][2], least)):
            meter.call(case.server, case.tool, case.args(ctx, i))
        print(f"  {case.server:28} {case.tool}", file=sys.stderr, flush=True)


def run_playwright(meter: Meter, ctx: Context, least: int) -> None:
    for _ in range(least):
        snapshot = ""
        for tool, args in PLAYWRIGHT_STEPS:
            answer = meter.call("ms-playwright", tool, args(ctx, snapshot))
            if "[ref=" in answer:
                snapshot = answer
    print(f"  {'ms-playwright':28} {len(PLAYWRIGHT_STEPS)} steps", file=sys.stderr, flush=True)


def report(meter: Meter) -> list[dict[str, Any]]:
    rows = []
    for (server, tool), samples in meter.samples.items():
        server_ms = statistics.mean(s[0] for s in samples) * 1000
        gateway_ms = statistics.mean(s[1] for s in samples) * 1000
        rows.append(
            {
                "server": server,
                "tool": tool.split("__")[-1],
                "calls": len(samples),
                "server_cpu_ms": round(server_ms, 1),
                "gateway_cpu_ms": round(gateway_ms, 1),
                "wall_p50_ms": round(statistics.median(s[2] for s in samples) * 1000, 1),
                "calls_per_core_s": round(1000 / max(0.1, server_ms + gateway_ms), 1),
                "failed": meter.failures.get((server, tool)),
            }
        )
    return rows


@contextlib.contextmanager
def serving(tmp: Path, only: set[str] = frozenset()) -> Iterator[tuple[Meter, Context]]:
    """`gaia-env serve` with every server (or `only` these) and the fakes; a meter on one session."""
    from gaia_kit_testing.fake_arxiv import FakeArxiv
    from gaia_kit_testing.fake_openai import FakeOpenAI
    from gaia_kit_testing.fake_search import FakePage, FakeSearch
    from gaia_kit_testing.fake_site import app
    from gaia_kit_testing.fake_wayback import FakeWayback
    from gaia_kit_testing.fake_web import FakeWeb
    from gaia_kit_testing.fake_wiki import FakeWiki
    from gaia_kit_testing.loopback import LoopbackServer

    book = make_attachments(tmp / "dataset") / "sales.xlsx"
    fakes = [
        web := FakeWeb(),
        model := FakeOpenAI(model="fake-model", api_key="sk-bench"),
        search := FakeSearch(
            [FakePage("Moon landing facts", "http://127.0.0.1/article.html", "Apollo 11 landed on the Moon.")]
        ),
        wiki := FakeWiki(),
        arxiv := FakeArxiv(),
        wayback := FakeWayback(),
        site := LoopbackServer(app()),
    ]
    logging.getLogger().setLevel(logging.WARNING)  # the servers imported with the fakes log each request
    for fake in fakes:
        fake.start() if hasattr(fake, "start") else fake.__enter__()
    for _ in range(5000):
        model.reply_with(model_reply)
    env = {
        "GAIA_HTTP_ALLOW": "127.0.0.1",
        "GAIA_HTTP_CACHE_MODE": "off",
        **model.env("MCP"),
        "BROWSERUSE_USE_VISION": "false",
        "GOOGLE_API_KEY": search.key,
        "GOOGLE_CSE_ID": "engine-1",
        "GOOGLE_CSE_URL": search.google_url,
        "SEARXNG_URL": search.searxng_url,
        "WIKI_API_URL": wiki.api_url,
        "ARXIV_API_URL": f"{arxiv.base}/api/query",
        "WAYBACK_AVAILABILITY_URL": wayback.url("/wayback/available"),
        "WAYBACK_CDX_URL": wayback.url("/cdx/search/cdx"),
        "WAYBACK_SNAPSHOT_URL": wayback.url("/web"),
    }
    servers = ",".join(sorted({*only, FIRST_CALL[0]})) if only else ""
    try:
        gateway = start_gateway(
            tmp, tmp / "dataset", "--replicas", "1", *(["--servers", servers] if servers else []), env=env
        )
        try:
            meter = Meter(gateway, "cost")
            meter.call(*FIRST_CALL)
            # The session's workspace, the only one: answers never name it, so the file system does.
            (workspace,) = (p for p in gateway.workspace_root.iterdir() if not p.name.startswith("."))
            (workspace / "fs").mkdir(parents=True, exist_ok=True)
            # The folder belongs to whoever owns the workspace: the servers' uid when the gateway
            # runs as root and confines them (docs/gateway.md, "Servers see only what they serve").
            os.chown(workspace / "fs", workspace.stat().st_uid, workspace.stat().st_gid)
            yield meter, Context(workspace, web.url(""), site.url(""), book)
        finally:
            gateway.stop()
    finally:
        for fake in fakes:
            fake.stop() if hasattr(fake, "stop") else fake.__exit__(None, None, None)


FIRST_CALL = ("filesystem-server", "list_allowed_directories", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reps", type=int, default=5, help="the fewest calls per tool (cheap tools get more)"
    )
    parser.add_argument("--only", default="", help="comma-separated server ids (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}

    with serving(Path(tempfile.mkdtemp(prefix="gaia-cost-")), only) as (meter, ctx):
        chosen = [c for c in CASES if not only or c.server in only]
        # One untimed call per server first: imports and caches warm, Chromium launched, as in a running gateway.
        for sid in dict.fromkeys(c.server for c in chosen):
            warm = next(c for c in chosen if c.server == sid)
            meter.call(warm.server, warm.tool, warm.args(ctx, 99))
        if not only or "ms-playwright" in only:
            meter.call("ms-playwright", "browser_navigate", {"url": f"{ctx.site}/"})
        meter.samples.clear()
        meter.failures.clear()
        run_cases(meter, ctx, chosen, args.reps)
        if not only or "ms-playwright" in only:
            run_playwright(meter, ctx, args.reps)
    rows = report(meter)
    print(f"{'server':27} {'tool':30} {'server ms':>9} {'gw ms':>6} {'wall p50':>9} {'calls/core/s':>12}")
    for row in rows:
        flag = f"   FAILED: {row['failed']}" if row["failed"] else ""
        print(
            f"{row['server']:27} {row['tool']:30} {row['server_cpu_ms']:>9} {row['gateway_cpu_ms']:>6} "
            f"{row['wall_p50_ms']:>9} {row['calls_per_core_s']:>12}{flag}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
