"""convert_document_to_markdown through the MCP protocol, on PDFs generated with pymupdf and Pillow."""

import io
from pathlib import Path

import anyio
import pymupdf
import pytest
from documents_pdf_server.server import server
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok
from PIL import Image, ImageDraw, ImageFont

pytestmark = pytest.mark.anyio

BORDER = 'style="border:1px solid black"'
REPORT = f"""<h1>Annual Report</h1><p>The company grew by 12 percent in 2023.</p>
<h2>Results by region</h2>
<table><tr><th {BORDER}>Region</th><th {BORDER}>Sales</th></tr>
<tr><td {BORDER}>Asia</td><td {BORDER}>80</td></tr></table>"""


def html_pdf(path: Path, pages: list[str]) -> Path:
    """One PDF page per HTML snippet, laid out by MuPDF's Story (real text, fonts and table lines)."""
    writer = pymupdf.DocumentWriter(str(path))
    area = pymupdf.paper_rect("a4")
    for html in pages:
        story = pymupdf.Story(html)
        more = True
        while more:
            device = writer.begin_page(area)
            more, _ = story.place(area + (50, 50, -50, -50))
            story.draw(device)
            writer.end_page()
    writer.close()
    return path


def scanned_page(doc: pymupdf.Document, words: str) -> None:
    """A page that is only a picture of text, as a scanner makes it: no text layer at all."""
    image = Image.new("L", (1700, 400), 255)
    ImageDraw.Draw(image).text((60, 140), words, fill=0, font=ImageFont.load_default(size=90))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    page = doc.new_page()
    page.insert_image(pymupdf.Rect(36, 36, 576, 163), stream=buffer.getvalue())


async def test_only_the_reference_tool_is_listed():
    assert {tool.name for tool in await server.list_tools()} == {"convert_document_to_markdown"}


async def test_headings_paragraphs_and_tables(call, env):
    html_pdf(env.workspace / "report.pdf", [REPORT])
    out = ok(await call("convert_document_to_markdown", file_path="report.pdf"))
    assert out.startswith("File: report.pdf") and "Pages: 1" in out
    assert "# **Annual Report**" in out and "## **Results by region**" in out
    assert "The company grew by 12 percent in 2023." in out
    assert "|Region|Sales|\n|---|---|\n|Asia|80|" in out
    assert "--- Page" not in out


async def test_paginate_marks_every_page(call, env):
    html_pdf(env.workspace / "three.pdf", [f"<p>Body of chapter {n}.</p>" for n in (1, 2, 3)])
    out = ok(await call("convert_document_to_markdown", file_path="three.pdf", paginate=True))
    assert (
        out.index("--- Page 1 of 3 ---") < out.index("Body of chapter 1.") < out.index("--- Page 2 of 3 ---")
    )
    assert out.index("--- Page 3 of 3 ---") < out.index("Body of chapter 3.")
    only = ok(await call("convert_document_to_markdown", file_path="three.pdf", pages="2", paginate=True))
    assert "Body of chapter 2." in only and "chapter 1" not in only and "chapter 3" not in only
    tail = ok(await call("convert_document_to_markdown", file_path="three.pdf", pages="2-"))
    assert "chapter 1" not in tail and "Body of chapter 3." in tail


async def test_windows_read_on_by_pages_and_start_index(call, env):
    paragraphs = [
        f"<p>Page {n} opens here. " + "Filler words follow. " * 40 + f"Page {n} ends.</p>"
        for n in range(1, 31)
    ]
    html_pdf(env.workspace / "long.pdf", paragraphs)
    whole = ok(await call("convert_document_to_markdown", file_path="long.pdf")).split("\n\n", 1)[1]
    assert "Output truncated" not in whole and "Page 30 ends." in whole
    # Follow the hints: every window starts exactly where the previous one stopped.
    arguments, pieces = {}, []
    while True:
        out = ok(
            await call("convert_document_to_markdown", file_path="long.pdf", max_length=7000, **arguments)
        )
        body = out.split("\n\n", 1)[1]  # after the header lines
        if "Call again with " not in body:
            pieces.append(body)
            break
        pieces.append(body.split("\n\n[Output truncated", 1)[0])
        hint = body.rsplit("Call again with ", 1)[1].split(" to read more")[0]
        arguments = {
            "pages": hint.split("'")[1],
            "start_index": int(hint.split("start_index=")[1]) if "start_index" in hint else 0,
        }
    assert len(pieces) > 3 and "".join(pieces) == whole
    last = ok(await call("convert_document_to_markdown", file_path="long.pdf", pages="29-30"))
    assert "Page 30 ends." in last and "Page 28" not in last and "Showing pages 29-30" in last


async def test_scanned_page_is_read_with_ocr(call, env):
    doc = pymupdf.open()
    scanned_page(doc, "INVOICE NUMBER 4217")
    doc.save(env.workspace / "scan.pdf")
    out = ok(await call("convert_document_to_markdown", file_path="scan.pdf", paginate=True))
    assert "--- Page 1 of 1 (OCR) ---" in out and "Read with OCR (no text layer): page 1" in out
    assert "INVOICE NUMBER 4217" in out
    plain = ok(await call("convert_document_to_markdown", file_path="scan.pdf", ocr=False))
    assert "4217" not in plain and "(no text on this page)" in plain


async def test_encrypted_pdf(call, env):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Top secret plans")
    doc.save(env.workspace / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="opensesame")
    message = failed(await call("convert_document_to_markdown", file_path="locked.pdf"))
    assert message.endswith("locked.pdf is password-protected; pass its password with password=.")
    wrong = failed(await call("convert_document_to_markdown", file_path="locked.pdf", password="nope"))
    assert "password given is wrong" in wrong
    out = ok(await call("convert_document_to_markdown", file_path="locked.pdf", password="opensesame"))
    assert "Top secret plans" in out


async def test_broken_and_mislabelled_files(call, env):
    workspace = env.workspace
    (workspace / "page.pdf").write_text("<!DOCTYPE html><html><body>403 Forbidden</body></html>")
    (workspace / "empty.pdf").write_bytes(b"")
    (workspace / "letter.pdf").write_bytes(b"PK\x03\x04rest of a docx")
    good = html_pdf(workspace / "good.pdf", [REPORT]).read_bytes()
    (workspace / "garbage.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 4)
    expected = {
        "page.pdf": "is not a PDF: it is an HTML page",
        "empty.pdf": "is not a PDF: the file is empty",
        "letter.pdf": "is not a PDF: it is a ZIP container",
        "garbage.pdf": "garbage.pdf",
    }
    for name, problem in expected.items():
        message = failed(await call("convert_document_to_markdown", file_path=name))
        assert problem in message, message
    (workspace / "cut.pdf").write_bytes(good[: len(good) // 2])
    cut = await call("convert_document_to_markdown", file_path="cut.pdf")  # MuPDF repairs what it can
    assert "cut.pdf" in cut.content[0].text
    assert "pages='x'" in failed(await call("convert_document_to_markdown", file_path="good.pdf", pages="x"))
    assert "has 1 pages" in failed(
        await call("convert_document_to_markdown", file_path="good.pdf", pages="5")
    )
    assert "Annual Report" in ok(await call("convert_document_to_markdown", file_path="good.pdf"))


async def test_paths_outside_the_workspace_are_refused(call, env, tmp_path):
    outside = html_pdf(tmp_path / "secret.pdf", [REPORT])
    (env.workspace / "link.pdf").symlink_to(outside)
    for path in (str(outside), "../../secret.pdf", "link.pdf", "/etc/passwd", "sub/../../../secret.pdf"):
        assert "Access denied" in failed(await call("convert_document_to_markdown", file_path=path))


async def test_conversions_run_side_by_side(call, env):
    html_pdf(env.workspace / "a.pdf", [REPORT] * 3)
    results = []

    async def convert() -> None:
        results.append(ok(await call("convert_document_to_markdown", file_path="a.pdf")))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(convert)
    assert len(results) == 3 and all("|Asia|80|" in r for r in results)


async def test_a_conversion_past_the_call_memory_limit_is_stopped(call, env, monkeypatch):
    """The converter runs with GAIA_CALL_MEMORY_MB of new memory: rendering a scan at 300 DPI for OCR
    needs more than 8 MB, so it stops with the memory sentence, and the next call is served."""
    doc = pymupdf.open()
    scanned_page(doc, "INVOICE NUMBER 4217")
    doc.save(env.workspace / "scan.pdf")
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "8")
    refused = failed(await call("convert_document_to_markdown", file_path="scan.pdf"))
    assert "more than the 8 MB of memory one call may use (GAIA_CALL_MEMORY_MB)" in refused
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "512")
    forget_settings()  # read once per process: read it again
    assert "4217" in ok(await call("convert_document_to_markdown", file_path="scan.pdf"))
