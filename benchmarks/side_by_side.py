"""gaia-env next to the projects its servers replace, on the same inputs, over MCP stdio.

    scripts/reference-tools.sh        # once: installs the references into .tools/reference
    uv run python -m benchmarks.side_by_side [--only formulas,files,browsing] [--rows 20000]

This script installs nothing. It runs each reference it finds in .tools/reference (or where
--reference-dir says) and skips, saying so, the ones it does not find:

- formulas: excel-mcp-server (PyPI) `read_range` against gaia-env excel `read_data_from_excel`,
  on the twenty common formulas of gaia_kit_testing.formula_cases saved by openpyxl without
  cached values (as scripts write them, and with the _xlfn. prefixes Excel writes), and on the
  total of a --rows table whose every row is a formula;
- files: @modelcontextprotocol/server-filesystem (npm) against filesystem-server: the same bytes
  for whole, head and tail reads, listings and search, the same path attacks refused, and a FIFO;
- browsing: @playwright/mcp (npm, on Debian's chromium) against ms-playwright on a local page
  with late-rendered content, an iframe click, a select, a form, a confirm dialog and a screenshot.

Each row says what was checked, what each side did, and whether gaia-env is at least equal. Both
sides run as stdio subprocesses on this machine; times are medians of the same steps.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from gaia_kit_testing import formula_cases
from gaia_kit_testing.loopback import free_port
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
STEP_TIMEOUT = 60.0
LEAK = "TOP-SECRET-4729"  # what a file outside the allowed roots holds


@dataclass
class Row:
    area: str
    check: str
    gaia: str
    reference: str
    at_least_equal: bool


@dataclass
class Answer:
    text: str
    is_error: bool
    seconds: float
    images: list[bytes] = field(default_factory=list)


class Side:
    """One MCP server over stdio; `meta` rides along on every call (gaia-env's session keys)."""

    def __init__(self, client: Client, meta: dict[str, Any] | None = None):
        self.client, self.meta = client, meta

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float = STEP_TIMEOUT) -> Answer:
        started = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                result = await self.client.call_tool(tool, arguments, meta=self.meta)
        except TimeoutError:
            return Answer(f"no answer within {timeout:.0f} s", True, time.perf_counter() - started)
        seconds = time.perf_counter() - started
        texts = [block.text for block in result.content if block.type == "text"]
        images = [base64.b64decode(block.data) for block in result.content if block.type == "image"]
        return Answer("\n".join(texts), bool(result.is_error), seconds, images)


@asynccontextmanager
async def stdio(
    command: str, args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=command, args=args, cwd=str(cwd), env={**os.environ, **(env or {})}
    )
    async with Client(params, read_timeout_seconds=STEP_TIMEOUT * 2) as client:
        yield client


@asynccontextmanager
async def gaia(module: str, workspace: Path) -> AsyncIterator[Side]:
    env = {
        "GAIA_WORKSPACE_ROOT": str(workspace.parent),
        "GAIA_DATASET_DIR": str(workspace.parent / "dataset"),
        "GAIA_HTTP_ALLOW": "127.0.0.1",
    }
    async with stdio(sys.executable, ["-m", module], workspace, env) as client:
        yield Side(client, {SESSION_ID_KEY: "side-by-side", WORKSPACE_KEY: str(workspace)})


# ----------------------------------------------------------------------------- formulas


async def formulas(reference_dir: Path, folder: Path, rows: int) -> list[Row]:
    command = reference_dir / "excel-mcp" / "bin" / "excel-mcp-server"
    if not command.exists():
        return [Row("formulas", "excel-mcp-server", "-", f"skipped: {command} missing", True)]
    workspace = folder / "excel"
    workspace.mkdir()
    (folder / "dataset").mkdir(exist_ok=True)
    books = {
        "as scripts write them": formula_cases.build(workspace / "plain.xlsx"),
        "with Excel's _xlfn. prefixes": formula_cases.build(workspace / "prefixed.xlsx", prefixed=True),
    }
    total = big_table(workspace / "big.xlsx", rows)
    out = []
    last = f"B{len(formula_cases.CASES)}"
    async with gaia("excel_server", workspace) as ours:
        async with stdio(str(command), ["stdio", "--allow-dir", str(workspace)], workspace) as client:
            theirs = Side(client)
            for label, path in books.items():
                mine = await ours.call(
                    "read_data_from_excel",
                    {
                        "filepath": str(path),
                        "sheet_name": "Calc",
                        "end_cell": last,
                        "start_cell": "B1",
                        "layout": "rows",
                    },
                )
                other = await theirs.call(
                    "read_range", {"path": str(path), "sheet": "Calc", "range": f"B1:{last}"}
                )
                got = [row[0] if row else None for row in json.loads(mine.text)["rows"]]
                ref = [row[0] if row else None for row in json.loads(other.text)["values"]]
                a, b = _computed(got), _computed(ref)
                out.append(Row("formulas", f"20 common formulas, no cached values, {label}",
                               f"{a}/20 ({mine.seconds * 1000:.0f} ms)", f"{b}/20 ({other.seconds * 1000:.0f} ms)", a >= b))  # fmt: skip
            mine = await ours.call("read_data_from_excel", {"filepath": "big.xlsx", "sheet_name": "Data", "start_cell": "E2", "end_cell": "E2", "layout": "rows"}, 600)  # fmt: skip
            other = await theirs.call("read_range", {"path": str(workspace / "big.xlsx"), "sheet": "Data", "range": "E2"}, 600)  # fmt: skip
            a = not mine.is_error and formula_cases.matches(json.loads(mine.text)["rows"][0][0], total)
            b = not other.is_error and formula_cases.matches(json.loads(other.text)["values"][0][0], total)
            out.append(Row("formulas", f"SUMIFS over {rows:,} rows of =B*C (every row a formula)",
                           f"{'right' if a else 'wrong'} ({mine.seconds:.1f} s)", f"{'right' if b else 'wrong'} ({other.seconds:.1f} s)",
                           a >= b))  # fmt: skip
    return out


def _computed(values: list[Any]) -> int:
    return sum(
        formula_cases.matches(v, expected)
        for v, (_, _, expected) in zip(values, formula_cases.CASES, strict=False)
    )


def big_table(path: Path, rows: int) -> float:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet.append(["region", "qty", "price", "amount", "North total"])
    sheet["E2"] = '=SUMIFS(D2:D{0},A2:A{0},"North")'.format(rows + 1)
    for row in range(2, rows + 2):
        sheet.cell(row, 1, ["North", "South", "East", "West"][row % 4])
        (
            sheet.cell(row, 2, row % 13),
            sheet.cell(row, 3, (row % 7) * 1.5),
            sheet.cell(row, 4, f"=B{row}*C{row}"),
        )
    book.save(path)
    return sum((r % 13) * (r % 7) * 1.5 for r in range(2, rows + 2) if r % 4 == 0)


# ----------------------------------------------------------------------------- files


def file_tree(root: Path) -> dict[str, bytes]:
    files = {
        "notes.txt": "".join(f"line {n}: plain ASCII text\n" for n in range(1, 201)).encode(),
        "big.log": "".join(f"{n:08d} event=ok value={n * 7}\n" for n in range(60_000)).encode(),
        "unicode.txt": "Zoë café — naïve ☕ 東京\nsecond line\n".encode(),
        "deep/a/b/c/report.md": b"# Report\n\nFound it.\n",
        "crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    }
    for i in range(300):
        files[f"many/file_{i:03d}.dat"] = f"{i}\n".encode()
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def attacks(root: Path, outside: Path) -> list[str]:
    (outside / "secret.txt").write_text(LEAK)
    (root / "escape").symlink_to(outside)
    look_alike = Path(str(root) + "2")
    look_alike.mkdir()
    (look_alike / "x.txt").write_text(LEAK)
    return [
        "../secret.txt", f"{root}/../outside/secret.txt", str(outside / "secret.txt"), "/etc/passwd",
        f"{root}/escape/secret.txt", str(look_alike / "x.txt"), f"{root}/notes.txt\x00.png",
        f"{root}/deep/../../outside/secret.txt",
    ]  # fmt: skip


async def files(reference_dir: Path, folder: Path) -> list[Row]:
    command = reference_dir / "node" / "node_modules" / ".bin" / "mcp-server-filesystem"
    if not command.exists():
        return [
            Row("files", "@modelcontextprotocol/server-filesystem", "-", f"skipped: {command} missing", True)
        ]
    workspace = folder / "files" / "ws"
    workspace.mkdir(parents=True)
    (folder / "files" / "dataset").mkdir()
    outside = folder / "files" / "outside"
    outside.mkdir()
    content = file_tree(workspace)
    rows: list[Row] = []
    async with gaia("filesystem_server", workspace) as ours:
        async with stdio(str(command), [str(workspace)], workspace) as client:
            theirs = Side(client)
            reads = [
                ("whole small file", {"path": str(workspace / "notes.txt")}, content["notes.txt"].decode()),
                ("non-ASCII file", {"path": str(workspace / "unicode.txt")}, content["unicode.txt"].decode()),
                ("head=5", {"path": str(workspace / "big.log"), "head": 5}, "".join(content["big.log"].decode().splitlines(True)[:5])),
                ("tail=5", {"path": str(workspace / "big.log"), "tail": 5}, "".join(content["big.log"].decode().splitlines(True)[-5:])),
                ("nested file", {"path": str(workspace / "deep/a/b/c/report.md")}, content["deep/a/b/c/report.md"].decode()),
            ]  # fmt: skip
            times: dict[str, list[float]] = {"gaia": [], "ref": []}
            for label, arguments, expected in reads:
                mine, other = (
                    await ours.call("read_text_file", arguments),
                    await theirs.call("read_text_file", arguments),
                )
                times["gaia"].append(mine.seconds)
                times["ref"].append(other.seconds)
                a, b = _same_text(mine.text, expected), _same_text(other.text, expected)
                rows.append(Row("files", f"read_text_file, {label}", _verdict(a), _verdict(b), a >= b))
            listing = {"path": str(workspace / "many")}
            mine, other = (
                await ours.call("list_directory", listing),
                await theirs.call("list_directory", listing),
            )
            a, b = (
                _names(mine.text) >= {f"file_{i:03d}.dat" for i in range(300)},
                _names(other.text) >= {f"file_{i:03d}.dat" for i in range(300)},
            )
            rows.append(
                Row("files", "list_directory, 300 files", _verdict(a, mine), _verdict(b, other), a >= b)
            )
            search = {"path": str(workspace), "pattern": "**/report.md"}
            mine, other = await ours.call("search_files", search), await theirs.call("search_files", search)
            a, b = "report.md" in mine.text, "report.md" in other.text
            rows.append(
                Row("files", "search_files **/report.md", _verdict(a, mine), _verdict(b, other), a >= b)
            )
            refused_a = refused_b = 0
            hostile = attacks(workspace, outside)
            for path in hostile:
                mine, other = (
                    await ours.call("read_text_file", {"path": path}),
                    await theirs.call("read_text_file", {"path": path}),
                )
                refused_a += mine.is_error and LEAK not in mine.text
                refused_b += other.is_error and LEAK not in other.text
            rows.append(Row("files", f"{len(hostile)} path attacks refused", f"{refused_a}/{len(hostile)}",
                            f"{refused_b}/{len(hostile)}", refused_a >= refused_b))  # fmt: skip
            fifo = workspace / "pipe.txt"
            os.mkfifo(fifo)
            # Each side's read of the FIFO gets 5 s; a writer then frees whichever reader still waits.
            release = threading.Timer(6.0, _unblock, [fifo])
            release.start()
            mine = await ours.call("read_text_file", {"path": str(fifo)}, timeout=5)
            other = await theirs.call("read_text_file", {"path": str(fifo)}, timeout=5)
            release.cancel()
            _unblock(fifo)
            a, b = mine.is_error and mine.seconds < 1, other.is_error and other.seconds < 1
            rows.append(Row("files", "read_text_file on a FIFO: refused at once",
                            f"{'refused' if a else 'blocked'} in {mine.seconds * 1000:.0f} ms",
                            f"{'refused' if b else 'blocked or read'} ({other.seconds:.1f} s: {other.text[:60]!r})", a >= b))  # fmt: skip
            rows.append(Row("files", "median read_text_file latency", f"{statistics.median(times['gaia']) * 1000:.1f} ms",
                            f"{statistics.median(times['ref']) * 1000:.1f} ms", statistics.median(times["gaia"]) <= statistics.median(times["ref"]) * 1.5))  # fmt: skip
    return rows


def _unblock(fifo: Path) -> None:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def _same_text(answer: str, expected: str) -> bool:
    # Either side may add a paging or size note after the content; the content itself must be whole.
    return answer.replace("\r\n", "\n").startswith(expected.replace("\r\n", "\n").rstrip("\n"))


def _names(answer: str) -> set[str]:
    return set(re.findall(r"[\w.-]+\.\w+", answer))


def _verdict(ok: bool, answer: Answer | None = None) -> str:
    timing = f" ({answer.seconds * 1000:.0f} ms)" if answer is not None else ""
    return ("same content" if ok else "different or failed") + timing


# ----------------------------------------------------------------------------- browsing

PAGE = """<!doctype html><title>Side by side</title><h1>Shop</h1>
<p id="late">loading…</p>
<script>setTimeout(() => { document.getElementById('late').textContent = 'Late stock: 42 units'; }, 700);</script>
<iframe src="/frame" title="Offers" width="300" height="80"></iframe>
<form onsubmit="event.preventDefault(); document.getElementById('out').textContent =
  'Hello ' + document.getElementById('name').value + ' (' + document.getElementById('size').value + ')';">
<label>Size <select id="size"><option>small</option><option>large</option></select></label>
<label>Name <input id="name"></label><button>Send</button></form>
<p id="out"></p>
<button onclick="document.getElementById('answer').textContent = confirm('Proceed?') ? 'confirmed' : 'cancelled'">Ask</button>
<p id="answer"></p>"""
FRAME = """<!doctype html><button onclick="document.body.insertAdjacentHTML('beforeend', '<p>offer taken</p>')">Take offer</button>"""


def serve_pages() -> tuple[str, Any]:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            body = (FRAME if self.path.startswith("/frame") else PAGE).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), Pages)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{port}/", httpd


def ref_of(snapshot: str, role: str, name: str) -> str | None:
    for line in snapshot.splitlines():
        if f'{role} "{name}"' in line:
            found = re.search(r"\[ref=([\w-]+)\]", line)
            if found:
                return found.group(1)
    return None


async def browse(side: Side, url: str, target: str) -> tuple[dict[str, bool], list[float]]:
    """The scenario, the same calls on either side; `target` is the name of the ref argument."""
    done: dict[str, bool] = {}
    times: list[float] = []

    async def step(tool: str, arguments: dict[str, Any]) -> Answer:
        answer = await side.call(tool, arguments)
        times.append(answer.seconds)
        return answer

    async def snapshot() -> str:
        return (await step("browser_snapshot", {})).text

    nav = await step("browser_navigate", {"url": url})
    done["navigate"] = not nav.is_error
    await step("browser_wait_for", {"text": "Late stock: 42 units"})
    page = await snapshot()
    done["late-rendered content"] = "Late stock: 42 units" in page
    ref = ref_of(page, "button", "Take offer")
    if ref:
        await step("browser_click", {"element": "Take offer button in the iframe", target: ref})
    done["iframe click"] = "offer taken" in await snapshot()
    ref = ref_of(page, "combobox", "Size")
    if ref:
        await step("browser_select_option", {"element": "Size", target: ref, "values": ["large"]})
    ref = ref_of(page, "textbox", "Name")
    if ref:
        await step("browser_type", {"element": "Name", target: ref, "text": "Ada"})
    ref = ref_of(page, "button", "Send")
    if ref:
        await step("browser_click", {"element": "Send", target: ref})
    page = await snapshot()
    done["select + form"] = "Hello Ada (large)" in page
    ref = ref_of(page, "button", "Ask")
    if ref:
        await step("browser_click", {"element": "Ask", target: ref})
        await step("browser_handle_dialog", {"accept": True})
    done["confirm dialog"] = "confirmed" in await snapshot()
    shot = await step("browser_take_screenshot", {})
    done["screenshot"] = any(
        image.startswith(b"\x89PNG") or image.startswith(b"\xff\xd8") for image in shot.images
    )
    return done, times


async def browsing(reference_dir: Path, folder: Path) -> list[Row]:
    command = reference_dir / "node" / "node_modules" / ".bin" / "playwright-mcp"
    chromium = shutil.which("chromium")
    if not command.exists() or chromium is None:
        missing = command if not command.exists() else "chromium (apt-get install chromium)"
        return [Row("browsing", "@playwright/mcp", "-", f"skipped: {missing} missing", True)]
    workspace = folder / "browse" / "ws"
    workspace.mkdir(parents=True)
    (folder / "browse" / "dataset").mkdir()
    url, httpd = serve_pages()
    try:
        async with gaia("ms_playwright", workspace) as ours:
            mine, my_times = await browse(ours, url, "ref")
        args = [
            "--headless",
            "--isolated",
            "--no-sandbox",
            "--executable-path",
            chromium,
            "--output-dir",
            str(folder / "pw-out"),
        ]
        async with stdio(str(command), args, folder) as client:
            theirs = Side(client)
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            target = (
                "target" if "target" in tools["browser_click"].input_schema.get("properties", {}) else "ref"
            )
            other, other_times = await browse(theirs, url, target)
    finally:
        httpd.shutdown()
    rows = [
        Row("browsing", check, _done(mine[check]), _done(other[check]), mine[check] >= other[check])
        for check in mine
    ]
    a, b = statistics.median(my_times), statistics.median(other_times)
    rows.append(
        Row(
            "browsing",
            f"median step ({len(my_times)} steps)",
            f"{a * 1000:.0f} ms",
            f"{b * 1000:.0f} ms",
            a <= b * 1.5,
        )
    )
    return rows


def _done(ok: bool) -> str:
    return "done" if ok else "failed"


# ----------------------------------------------------------------------------- main


async def run(areas: list[str], reference_dir: Path, rows: int) -> list[Row]:
    folder = Path(tempfile.mkdtemp(prefix="side-by-side-"))
    out: list[Row] = []
    try:
        if "formulas" in areas:
            out += await formulas(reference_dir, folder, rows)
        if "files" in areas:
            out += await files(reference_dir, folder)
        if "browsing" in areas:
            out += await browsing(reference_dir, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="formulas,files,browsing", help="comma-separated areas to run")
    parser.add_argument("--rows", type=int, default=20_000, help="rows of the all-formulas table")
    parser.add_argument("--reference-dir", type=Path, default=ROOT / ".tools" / "reference")
    args = parser.parse_args()
    rows = anyio.run(run, args.only.split(","), args.reference_dir, args.rows)
    print("| area | check | gaia-env | reference | at least equal |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row.area} | {row.check} | {row.gaia} | {row.reference} | {'yes' if row.at_least_equal else 'NO'} |"
        )
    sys.exit(0 if all(row.at_least_equal for row in rows) else 1)


if __name__ == "__main__":
    main()
