"""documents-pdf-server: time and peak memory to read the first window of a 500-page PDF.

    uv run --no-sync python -m benchmarks.documents_pdf [--pages 500]

The PDF is generated here (text pages with a heading, paragraphs and a ruled table on every page).
One MCP call converts the first window (up to the output cap) through the real server; the server
process's peak RSS and the conversion worker's peak RSS are reported separately.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from gaia_kit_testing import run_measured


def make_pdf(path: Path, pages: int) -> None:
    import pymupdf

    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((72, 72), f"Chapter {number}", fontsize=20)
        for line in range(30):
            page.insert_text(
                (72, 110 + line * 14), f"Line {line} of page {number}: lorem ipsum dolor sit amet."
            )
        for row in range(4):  # a ruled 4 x 3 table under the text
            for col in range(3):
                rect = pymupdf.Rect(72 + col * 120, 560 + row * 20, 192 + col * 120, 580 + row * 20)
                page.draw_rect(rect, color=(0, 0, 0), width=0.8)
                page.insert_text((rect.x0 + 4, rect.y1 - 6), f"r{row}c{col}", fontsize=10)
    doc.save(path)


SCRIPT = """
import asyncio, json, resource, time
from mcp import Client
from documents_pdf_server.server import server

async def main():
    async with Client(server) as client:
        start = time.perf_counter()
        result = await client.call_tool("convert_document_to_markdown", {"file_path": PATH})
        elapsed = time.perf_counter() - start
    text = result.content[0].text
    assert not result.is_error, text
    worker_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"seconds": round(elapsed, 2), "chars": len(text), "worker_peak_rss_kb": worker_kb,
                      "hint": text.rsplit("[", 1)[-1][:120]}))

asyncio.run(main())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        pdf = Path(scratch) / "big.pdf"
        make_pdf(pdf, args.pages)
        size = pdf.stat().st_size
        report = run_measured(
            f"PATH = {str(pdf)!r}\n" + SCRIPT, env={"GAIA_WORKSPACE": scratch, "GAIA_DATASET_DIR": scratch}
        )
    report |= {"pages": args.pages, "pdf_bytes": size, "server_peak_rss_kb": report.pop("peak_rss_kb")}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
