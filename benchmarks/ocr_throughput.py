"""media-image-server: OCR pages per second on generated text pages, through the real server.

    uv run --no-sync python -m benchmarks.ocr_throughput [--pages 12] [--concurrency 1 4]

Each page is a 1275 x 1650 image (US Letter at 150 dpi) with 30 lines of black text in Pillow's
font, written here. The pages go through extract_text_ocr over the MCP protocol (in-process client),
first one call at a time, then with that many calls in flight (sync tools run in worker threads and
tesseract in subprocesses, so calls overlap up to the machine's cores). Every page must come back
with its first and last line read correctly, so a fast wrong answer does not count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from mcp import Client
from PIL import Image, ImageDraw, ImageFont

WORDS = "the quick brown fox jumps over lazy dogs while seven wizards quietly judge boxing matches".split()


def make_page(path: Path, number: int) -> tuple[str, str]:
    font = ImageFont.load_default(size=26)
    image = Image.new("L", (1275, 1650), 255)
    draw = ImageDraw.Draw(image)
    lines = []
    for row in range(30):
        words = [WORDS[(number * 7 + row * 3 + k) % len(WORDS)] for k in range(9)]
        lines.append(f"Page {number} line {row + 1}: " + " ".join(words))
        draw.text((80, 80 + row * 48), lines[-1], fill=0, font=font)
    image.save(path)
    return lines[0], lines[-1]


async def run(paths: list[Path], expected: list[tuple[str, str]], concurrency: int) -> float:
    from media_image_server.server import server

    limit = asyncio.Semaphore(concurrency)
    async with Client(server) as client:

        async def one(path: Path, lines: tuple[str, str]) -> None:
            async with limit:
                result = await client.call_tool("extract_text_ocr", {"file_path": str(path)})
            text = result.content[0].text
            assert not result.is_error and all(line in text for line in lines), text[:500]

        start = time.perf_counter()
        await asyncio.gather(*(one(p, e) for p, e in zip(paths, expected, strict=True)))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.update(GAIA_WORKSPACE=scratch, GAIA_DATASET_DIR=scratch)
        paths = [Path(scratch) / f"page{n}.png" for n in range(args.pages)]
        expected = [make_page(path, n) for n, path in enumerate(paths)]
        report = {"pages": args.pages, "cpus": os.cpu_count()}
        for concurrency in dict.fromkeys(args.concurrency):
            seconds = asyncio.run(run(paths, expected, concurrency))
            report[f"pages_per_s_at_{concurrency}"] = round(args.pages / seconds, 2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
