"""Peak RSS and time of the excel server reading a preview of a ~200 MB xlsx.

    uv run python -m benchmarks.excel_read [--mb 200] [--keep DIR]

The workbook is generated with openpyxl's write_only mode (random numbers and short text, so it
compresses like real data, not like zeros). Each measured call runs in a fresh child process,
through the MCP protocol, and reports its own peak RSS (VmHWM): preview_only, one full page of
read_data_from_excel, and get_workbook_metadata.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from gaia_kit_testing import run_measured

COLUMNS = 10

CHILD = """
import json, time, anyio
from pathlib import Path
from excel_server.server import server
from gaia_kit_testing import session_call, text

async def main():
    async with session_call(server, Path({workspace!r})) as call:
        started = time.perf_counter()
        result = await call({tool!r}, **{arguments!r})
        elapsed = time.perf_counter() - started
    body = text(result)
    assert not result.is_error, body
    print(json.dumps({{"seconds": round(elapsed, 2), "chars": len(body)}}))

anyio.run(main)
"""


def generate(path: Path, megabytes: int) -> None:
    from openpyxl import Workbook

    rng = random.Random(7)
    book = Workbook(write_only=True)
    sheet = book.create_sheet("Data")
    sheet.append([f"col{i}" for i in range(COLUMNS)])
    # About 100 bytes of compressed xlsx per row of this shape; check the size as we go.
    rows = megabytes * 10_000
    for r in range(rows):
        sheet.append([r, rng.random() * 1000, rng.randint(0, 10**6), f"item-{rng.randint(0, 99999)}",
                      rng.random(), rng.gauss(0, 1), rng.randint(0, 255), f"c{r % 97}", rng.random() * 1e6, r * 0.5])  # fmt: skip
    book.save(path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=200, help="approximate size of the generated xlsx")
    parser.add_argument("--keep", type=Path, help="folder to keep (and reuse) the generated workbook in")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="excel-bench-"))
    root = folder / "workspaces"
    workspace = root / "bench"
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / f"big-{args.mb}mb.xlsx"
    if not path.exists():
        started = time.perf_counter()
        generate(path, args.mb)
        print(f"generated {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - started:.0f} s")
    env = {"GAIA_WORKSPACE_ROOT": str(root), "GAIA_DATASET_DIR": str(folder)}
    calls = [
        ("read_data_from_excel", {"filepath": path.name, "sheet_name": "Data", "preview_only": True}),
        ("read_data_from_excel", {"filepath": path.name, "sheet_name": "Data"}),
        ("read_data_from_excel", {"filepath": path.name, "sheet_name": "Data", "layout": "rows"}),
        ("get_workbook_metadata", {"filepath": path.name, "include_ranges": True}),
    ]
    size = path.stat().st_size / 1e6
    for tool, arguments in calls:
        report = run_measured(CHILD.format(workspace=str(workspace), tool=tool, arguments=arguments), env=env)
        label = tool + (" preview_only" if arguments.get("preview_only") else "")
        print(json.dumps({"file_mb": round(size), "call": label, "seconds": report["seconds"],
                          "peak_rss_mb": round(report["peak_rss_kb"] / 1024), "answer_chars": report["chars"]}))  # fmt: skip


if __name__ == "__main__":
    main()
