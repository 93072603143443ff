"""The conversion itself, run in a child process (`python -m documents_pdf_server.worker`).

Layout analysis and OCR are CPU-heavy and a damaged PDF can make a parser spin, so they run here,
in a process the server kills at its deadline, with GAIA_CALL_MEMORY_MB of new memory at most. The request arrives as JSON on stdin; the answer is
one JSON object on the real stdout. pymupdf4llm prints, so Python-level stdout goes to stderr.

Pages are converted one at a time and the loop stops as soon as the requested window of text is
complete: a 2,000-page PDF read a window at a time never holds more than that window in memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

# pymupdf4llm switches to its ONNX layout model when pymupdf.layout imports; the classic engine is
# several times lighter to start and to run, and is what page windows need.
sys.modules.setdefault("pymupdf.layout", None)

import pymupdf  # noqa: E402
import pymupdf4llm  # noqa: E402
from gaia_kit import stdout_to_stderr  # noqa: E402
from gaia_kit.core.bounded import call_memory_mb, cap_memory  # noqa: E402
from pymupdf4llm.helpers.pymupdf_rag import IdentifyHeaders  # noqa: E402

HEADER_SAMPLE_PAGES = 24
OCR_DPI = 300


class Refused(Exception):
    """A problem with the input, reported to the agent as one sentence."""


def convert(request: dict) -> dict:
    try:
        doc = pymupdf.open(request["path"], filetype="pdf")
    except Exception as exc:  # pymupdf raises FileDataError, RuntimeError, ValueError by version
        raise Refused(f"is not a readable PDF ({str(exc).strip() or type(exc).__name__})") from None
    if doc.needs_pass:
        password = request.get("password")
        if not password:
            raise Refused("is password-protected; pass its password with password=")
        if not doc.authenticate(password):
            raise Refused("is password-protected and the password given is wrong")
    total = doc.page_count
    if total == 0:
        raise Refused("has no pages")
    first, last = request["first"], min(request["last"] or total, total)
    if first > total:
        raise Refused(f"has {total} pages, so page {first} does not exist")
    # Heading levels come from font sizes; a sample spread over the whole document keeps them the
    # same in every window without reading every page.
    step = max(1, total // HEADER_SAMPLE_PAGES)
    headers = IdentifyHeaders(doc, pages=list(range(0, total, step))[:HEADER_SAMPLE_PAGES])
    wanted, budget = request["wanted_chars"], request["max_pages"]
    pages, produced = [], 0
    planned = min(last - first + 1, budget)
    for number in range(first, last + 1):
        if produced >= wanted or len(pages) >= budget:
            break
        _progress(len(pages), planned, f"converting page {number} of {total}")
        page = doc[number - 1]
        ocr = False
        if request["ocr"] and not page.get_text("text").strip() and _has_ink(page):
            text, ocr = _ocr(page, request["ocr_timeout"]), True
        else:
            text = pymupdf4llm.to_markdown(
                doc, pages=[number - 1], hdr_info=headers, show_progress=False, ignore_images=True
            ).strip()
        pages.append({"page": number, "text": text, "ocr": ocr})
        produced += len(text) + 40  # the separator between pages
    return {"total_pages": total, "first": first, "last": last, "pages": pages}


def _progress(done: int, planned: int, message: str) -> None:
    """One line on the server's progress pipe (PDF_PROGRESS_FD), when it gave one."""
    fd = os.environ.get("PDF_PROGRESS_FD")
    if fd:
        os.write(int(fd), json.dumps([done, planned, message]).encode() + b"\n")


def _has_ink(page: pymupdf.Page) -> bool:
    return bool(page.get_images(full=False)) or bool(page.get_drawings())


def _ocr(page: pymupdf.Page, timeout: float) -> str:
    """Read a page without a text layer with tesseract, from a 300 dpi rendering."""
    with tempfile.TemporaryDirectory(prefix="gaia-ocr-") as scratch:
        image = os.path.join(scratch, "page.png")
        page.get_pixmap(dpi=OCR_DPI, colorspace=pymupdf.csGRAY).save(image)
        try:
            done = subprocess.run(
                ["tesseract", image, "stdout", "-l", "eng"],
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError:
            raise Refused(
                "has pages without a text layer, and reading them needs tesseract "
                "(apt-get install tesseract-ocr tesseract-ocr-eng), or pass ocr=false"
            ) from None
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no details"]
        raise Refused(f"has a page tesseract could not read ({reason[0][:200]})")
    return done.stdout.decode("utf-8", "replace").strip()


def main() -> None:
    memory_mb = call_memory_mb()
    if memory_mb:
        cap_memory(memory_mb)  # a page that decodes to gigabytes fails here, not on the machine
    request = json.load(sys.stdin)
    with stdout_to_stderr():  # anything the libraries print stays off the answer channel
        try:
            answer = convert(request)
        except Refused as problem:
            answer = {"refused": str(problem)}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
