"""documents-pdf-server: a PDF as Markdown, locally, one window of pages at a time.

The conversion (pymupdf4llm for text, headings and tables; tesseract for pages without a text
layer) runs in a child process with a deadline (worker.py), so layout and OCR never hold the event
loop or a worker thread hostage, and a PDF that makes the parser spin is killed, not waited for.
"""

import json
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Annotated

from gaia_kit import KitServer, ToolFailure, get_settings, serve, session_of
from gaia_kit.core.args import MaxLength
from gaia_kit.core.bounded import call_memory_mb, out_of_memory
from gaia_kit.core.calls import current_call
from gaia_kit.core.hints import hints
from gaia_kit.core.settings import settings
from gaia_kit.execution.confine import confined_path, python_roots, run_confined
from mcp.server.mcpserver import Context
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

OCR_PAGE_TIMEOUT_S = 60
MAX_PAGES_PER_CALL = 100


class PdfSettings(BaseSettings):
    """PDF_CONVERT_TIMEOUT; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="PDF_", extra="ignore", env_ignore_empty=True)

    convert_timeout: float = Field(240, gt=0)
    """Seconds one conversion (its child process, OCR included) may take before it is stopped."""


server = KitServer(
    "documents-pdf-server",
    instructions=(
        "Converts PDF documents to Markdown locally (headings, paragraphs, tables; OCR for scanned "
        "pages). Long documents come a window of pages at a time: follow the hint at the end of a "
        "result, which names the pages= (and start_index=) that read on."
    ),
)


@server.tool(annotations=hints("Convert PDF to Markdown", read_only=True, open_world=False))
def convert_document_to_markdown(
    file_path: Annotated[str, Field(description="Path to the document file")],
    ctx: Context,
    paginate: Annotated[bool, Field(description="Add page delimiters to the output")] = False,
    pages: Annotated[
        str | None,
        Field(description="Pages to convert, 1-based: '5', '3-10' or '40-' (None: from the first page on)"),
    ] = None,
    start_index: Annotated[
        int, Field(ge=0, description="Character offset in the converted text of those pages, for reading on")
    ] = 0,
    max_length: MaxLength = None,
    password: Annotated[str | None, Field(description="Password of an encrypted PDF")] = None,
    ocr: Annotated[bool, Field(description="Read pages without a text layer with OCR (tesseract)")] = True,
) -> str:
    """Convert PDF document to markdown format.

    Local conversion, no key needed: headings, paragraphs and tables as Markdown; pages without a
    text layer (scans) are read with OCR. Long documents are converted a window at a time: the
    result names the pages shown and the pages= / start_index= that read on.
    """
    guard = session_of(ctx).paths
    first, last = _page_range(pages)
    settings = get_settings()
    limit = min(max_length or settings.max_output_chars, settings.max_output_chars)
    shown = guard.shown(file_path)
    # The worker reads the file this process opened beneath its root, as /proc/<pid>/fd/N.
    with guard.program_path(file_path) as path:
        _check_is_pdf(path, file_path)
        answer = _run_worker(
            _request(str(path), password, first, last, ocr, start_index + limit + 1), file_path
        )
    return _render(answer, PurePosixPath(shown).name, shown, paginate, start_index, limit)


def _request(path: str, password: str | None, first: int, last: int | None, ocr: bool, wanted: int) -> dict:
    return {
        "path": path,
        "password": password,
        "first": first,
        "last": last,
        "ocr": ocr,
        "ocr_timeout": OCR_PAGE_TIMEOUT_S,
        "wanted_chars": wanted,
        "max_pages": MAX_PAGES_PER_CALL,
    }


def _check_is_pdf(path: Path, raw: str) -> None:
    """Refuse what is not a PDF before any parser sees it, saying what it is instead."""
    with open(path, "rb") as handle:
        head = handle.read(1024)  # the PDF header may sit anywhere in the first 1,024 bytes
    if b"%PDF-" in head:
        return
    if not head:
        problem = "the file is empty"
    elif head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        problem = "it is an HTML page (perhaps an error page saved under this name)"
    elif head.startswith(b"PK\x03\x04"):
        problem = "it is a ZIP container (DOCX, PPTX, XLSX or an archive); use the server for that format"
    elif head.startswith(b"\xd0\xcf\x11\xe0"):
        problem = "it is a legacy Office file (DOC, PPT, XLS); use the server for that format"
    else:
        problem = f"it starts with {head[:16]!r} instead of a PDF header"
    raise ToolFailure(f"{raw} is not a PDF: {problem}.")


def _page_range(pages: str | None) -> tuple[int, int | None]:
    if pages is None or not pages.strip():
        return 1, None
    text = pages.replace(" ", "")
    try:
        if "-" in text:
            low, high = text.split("-", 1)
            first, last = int(low or 1), (int(high) if high else None)
        else:
            first = last = int(text)
    except ValueError:
        raise ToolFailure(f"pages={pages!r} is not a page range; use '5', '3-10' or '40-'.") from None
    if first < 1 or (last is not None and last < first):
        raise ToolFailure(f"pages={pages!r} is empty; pages are numbered from 1 and ranges go upwards.")
    return first, last


def _tesseract_env() -> dict[str, str]:
    return {name: os.environ[name] for name in ("TESSDATA_PREFIX", "OMP_THREAD_LIMIT") if name in os.environ}


def _tessdata() -> list[Path]:
    """tesseract's language data when TESSDATA_PREFIX puts it outside /usr, where the worker can see it."""
    prefix = os.environ.get("TESSDATA_PREFIX")
    return [Path(prefix)] if prefix and os.path.isdir(prefix) else []


def _run_worker(request: dict, raw: str) -> dict:
    # The worker reports each page on a pipe of its own: stdout carries the answer, stderr the noise.
    deadline_s = settings(PdfSettings).convert_timeout
    progress_in, progress_out = os.pipe()
    os.set_blocking(progress_in, False)
    try:
        # Confined: the worker (pymupdf, tesseract) sees the one PDF, no other file and no network.
        done = run_confined(
            [sys.executable, "-m", "documents_pdf_server.worker"],
            reads=[Path(request["path"]), *python_roots(), *_tessdata()],
            timeout=deadline_s,
            input=json.dumps({**request, "path": str(confined_path(Path(request["path"]), 0))}).encode(),
            # the sandbox passes none of the server's environment: the worker's memory limit travels here
            env={
                "PDF_PROGRESS_FD": str(progress_out),
                "GAIA_CALL_MEMORY_MB": str(call_memory_mb()),
                **_tesseract_env(),
            },
            pass_fds=(progress_out,),
            tick=lambda: _relay_progress(progress_in),
        )
        _relay_progress(progress_in)  # what the worker reported since the last poll
    except subprocess.TimeoutExpired:
        raise ToolFailure(
            f"Converting {raw} took longer than {deadline_s:.0f} s and was stopped; ask for fewer pages "
            "(pages='1-20'), or pass ocr=false if the pages are scans."
        ) from None
    finally:
        os.close(progress_in)
        os.close(progress_out)
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [
            f"exit status {done.returncode}"
        ]
        if "MemoryError" in last[0] or "alloc" in last[0].lower():  # MuPDF: "malloc (N bytes) failed"
            raise out_of_memory(call_memory_mb())
        raise ToolFailure(f"Converting {raw} failed ({last[0][:300]}); the file may be damaged.")
    answer = json.loads(done.stdout)
    if "refused" in answer:
        raise ToolFailure(f"{raw} {answer['refused']}.")
    return answer


def _relay_progress(pipe: int) -> None:
    try:
        lines = os.read(pipe, 65536).decode().splitlines()
    except BlockingIOError:
        return
    if lines:
        done, planned, message = json.loads(lines[-1])
        current_call().progress(done, planned, message)


def _render(answer: dict, name: str, shown: str, paginate: bool, start: int, limit: int) -> str:
    total, pages = answer["total_pages"], answer["pages"]
    chunks, bounds = [], []  # bounds[i]: offset of page i's chunk in the body
    for entry in pages:
        marker = ""
        if paginate:
            marker = f"--- Page {entry['page']} of {total}{' (OCR)' if entry['ocr'] else ''} ---\n\n"
        text = marker + (entry["text"] or "(no text on this page)")
        bounds.append(sum(len(c) for c in chunks))
        # Every page but the range's last ends with its separator, so windows join without seams.
        chunks.append(text + ("\n\n" if entry["page"] < answer["last"] else ""))
    body = "".join(chunks)
    window = body[start : start + limit]
    end = start + len(window)
    range_last = answer["last"]
    converted_last = pages[-1]["page"] if pages else answer["first"] - 1
    header = [f"File: {name}", f"Path: {shown}", f"Pages: {total}"]
    ocr_pages = [str(e["page"]) for e in pages if e["ocr"]]
    if ocr_pages:
        header.append(f"Read with OCR (no text layer): page {', '.join(ocr_pages)}")
    if start >= len(body) and body:
        return (
            "\n".join(header) + f"\n\n[No more content: start_index {start} is past the end of these pages.]"
        )
    if end < len(body) or converted_last < range_last:
        page_index = max(i for i, b in enumerate(bounds) if b <= end) if end < len(body) else None
        if page_index is None:
            next_page, offset = converted_last + 1, 0
        else:
            next_page, offset = pages[page_index]["page"], end - bounds[page_index]
        if offset and len(body) - bounds[page_index] == offset:
            next_page, offset = next_page + 1, 0
        upto = "" if range_last == total else str(range_last)
        first_shown = _page_at(pages, bounds, start)
        shown_to = next_page - 1 if offset == 0 else next_page
        again = f"pages='{next_page}-{upto}'" + (f", start_index={offset}" if offset else "")
        note = (
            f"\n\n[Output truncated: pages {first_shown}-{shown_to} of {total} shown"
            f"{' (page ' + str(next_page) + ' in part)' if offset else ''}. Call again with {again} to read more.]"
        )
    else:
        note = ""
        if pages:
            header.append(f"Showing pages {_page_at(pages, bounds, start)}-{converted_last}")
    return "\n".join(header) + "\n\n" + window + note


def _page_at(pages: list[dict], bounds: list[int], offset: int) -> int:
    index = max((i for i, b in enumerate(bounds) if b <= offset), default=0)
    return pages[index]["page"] if pages else 0


def _check() -> dict:
    from shutil import which

    if which("tesseract"):
        return {}
    return {"missing": ["tesseract (apt-get install tesseract-ocr tesseract-ocr-eng): OCR of scanned pages"]}


def main() -> None:
    serve(server, check=_check)
