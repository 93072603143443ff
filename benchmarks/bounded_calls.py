"""What bounding a call costs, and what a bomb costs now: excel and docx in-process, through MCP.

    uv run python -m benchmarks.bounded_calls [--runs 20]

1. The same small read with the per-call worker (GAIA_CALL_MEMORY_MB=512, a fork per call) and
   without it (0): the ratio is what the memory bound costs an ordinary call. The CSV reads run
   forked first, as a server runs them: a library the tool imports on first use is then imported in
   the children, and only run_bounded's adoption of their imports saves the next children the time.
2. Each bomb of issue 22 (finding 13): seconds to its answer, and how much the server (this process)
   grew. One machine, one run: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import docx
from documents_csv_server.server import server as csv_server
from documents_docx_server.server import server as docx_server
from excel_server.server import server as excel_server
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import session_call
from gaia_kit_testing.bombs import (
    WORD_BODY_HEAD,
    WORD_BODY_TAIL,
    forge_sizes,
    inflate_part,
    resident_mb,
)
from openpyxl import Workbook

CSV_FILES = 100


def make_files(workspace: Path) -> None:
    book = Workbook()
    book.active.title = "Sheet"
    for row in range(1, 51):
        book.active.append([row, f"name {row}", row * 1.5])
    book.save(workspace / "small.xlsx")
    table = "city,people,area\n" + "".join(f"town {n},{n * 1000},{n * 2.5}\n" for n in range(200))
    for n in range(CSV_FILES):
        (workspace / f"small_{n}.csv").write_text(table)
    book = Workbook()
    book.active.title = "Sheet"
    book.active["A1"], book.active["XFD1048576"] = "first", "last"
    book.save(workspace / "far.xlsx")
    book = Workbook()
    book.active.title = "Sheet"
    book.save(workspace / "strings.xlsx")
    inflate_part(
        workspace / "strings.xlsx", "xl/sharedStrings.xml", b"<sst>", b"<si><t>a</t></si>", 2**20, b"</sst>"
    )
    forge_sizes(workspace / "strings.xlsx", {"xl/sharedStrings.xml": 300 * 2**20})
    docx.Document().save(workspace / "body.docx")
    forge_sizes(workspace / "body.docx", {"word/document.xml": 2**30})
    docx.Document().save(workspace / "long.docx")
    paragraph = b"<w:p><w:r><w:t>" + b"x" * 2**20 + b"</w:t></w:r></w:p>"
    inflate_part(
        workspace / "long.docx",
        "word/document.xml",
        WORD_BODY_HEAD,
        paragraph,
        300 * len(paragraph),
        WORD_BODY_TAIL,
    )


def configure(**values: str) -> None:
    """Set what the servers read; they read their settings once per process, so read them again."""
    os.environ.update(values)
    forget_settings()


async def small_reads(workspace: Path, runs: int, memory_mb: str) -> float:
    configure(GAIA_CALL_MEMORY_MB=memory_mb)
    async with session_call(excel_server, workspace) as call:
        await call("read_data_from_excel", filepath="small.xlsx", sheet_name="Sheet")  # warm
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            result = await call("read_data_from_excel", filepath="small.xlsx", sheet_name="Sheet")
            times.append(time.perf_counter() - started)
            assert not result.is_error
    return statistics.median(times)


async def csv_reads(workspace: Path, runs: int, memory_mb: str, first: int) -> float:
    """A fresh file each call: the server keeps each session's answers, so a repeat would be cached."""
    configure(GAIA_CALL_MEMORY_MB=memory_mb)
    async with session_call(csv_server, workspace) as call:
        times = []
        for n in range(first, first + runs):
            started = time.perf_counter()
            result = await call("extract_csv_content", file_path=f"small_{n}.csv")
            times.append(time.perf_counter() - started)
            assert not result.is_error, result.content[0].text
    return statistics.median(times[1:])


async def bombs(workspace: Path) -> list[tuple[str, float, float, str]]:
    configure(GAIA_CALL_MEMORY_MB="512")
    rows = []
    cases = [
        (
            excel_server,
            "insert_rows",
            {"filepath": "far.xlsx", "sheet_name": "Sheet", "start_row": 2, "count": 1},
        ),
        (excel_server, "read_data_from_excel", {"filepath": "strings.xlsx", "sheet_name": "Sheet"}),
        (docx_server, "extract_docx_content", {"file_path": "body.docx"}),
        (docx_server, "extract_docx_content", {"file_path": "long.docx"}),
    ]
    for server, tool, arguments in cases:
        if arguments.get("file_path") == "long.docx":  # past the declared-size checks, to the memory limit
            configure(GAIA_DOC_MAX_RATIO="100000", GAIA_DOC_MAX_PART_MB="1024")
        async with session_call(server, workspace) as call:
            before = resident_mb()
            started = time.perf_counter()
            result = await call(tool, **arguments)
            elapsed = time.perf_counter() - started
            text = result.content[0].text
            rows.append((f"{tool} {next(iter(arguments.values()))}", elapsed, resident_mb() - before, text))
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20, help=f"calls per case (at most {CSV_FILES // 2})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        workspace = Path(root) / "s1"
        workspace.mkdir()
        os.environ["GAIA_WORKSPACE_ROOT"] = root
        forget_settings()
        make_files(workspace)
        forked = await csv_reads(workspace, args.runs, "512", 0)
        threaded = await csv_reads(workspace, args.runs, "0", args.runs)
        print(
            f"CSV read, median of {args.runs - 1} after the first: {forked * 1000:.1f} ms in a forked "
            f"worker, then {threaded * 1000:.1f} ms in a thread: ratio {forked / threaded:.2f}"
        )
        unbounded = await small_reads(workspace, args.runs, "0")
        bounded = await small_reads(workspace, args.runs, "512")
        print(
            f"small read, median of {args.runs}: {unbounded * 1000:.1f} ms in a thread, {bounded * 1000:.1f} ms"
        )
        print(f"in a forked worker: ratio {bounded / unbounded:.2f}")
        for name, elapsed, grown, text in await bombs(workspace):
            print(f"{name}: answered in {elapsed:.2f} s, server grew {grown:+.0f} MB: {text[:140]}")


if __name__ == "__main__":
    asyncio.run(main())
