"""Word bombs (issue 22, finding 13): refused in seconds, nothing written, the server no larger."""

import io

import docx
import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.bombs import WORD_BODY_HEAD, WORD_BODY_TAIL, forge_sizes, inflate_part, resident_mb
from PIL import Image

pytestmark = pytest.mark.anyio
GB = 2**30


def with_picture(path):
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "red").save(buffer, "PNG")
    document = docx.Document()
    document.add_paragraph("Figure 1 below.")
    document.add_picture(buffer)
    document.save(path)
    return path


async def test_an_image_that_claims_a_gigabyte_is_refused_and_nothing_is_written(call, env):
    forge_sizes(with_picture(env.workspace / "photo.docx"), {"word/media/image1.png": GB})
    before = resident_mb()
    refused = failed(await call("extract_docx_content", file_path="photo.docx"))
    assert "photo.docx was not opened: its part word/media/image1.png declares 1,024.0 MB" in refused
    assert "decompression bomb" in refused and "GAIA_DOC_MAX_PART_MB" in refused
    assert not (env.workspace / "docx_images").exists()
    assert resident_mb() - before < 64


async def test_a_body_that_claims_a_gigabyte_is_refused(call, env):
    document = docx.Document()
    document.add_paragraph("body")
    document.save(env.workspace / "body.docx")
    forge_sizes(env.workspace / "body.docx", {"word/document.xml": GB})
    refused = failed(await call("extract_docx_content", file_path="body.docx"))
    assert "its part word/document.xml declares 1,024.0 MB once inflated" in refused


async def test_a_body_that_grows_past_the_call_memory_limit_is_stopped(call, env, monkeypatch):
    """40 real paragraphs of 1 MB pass the declared-size checks and meet the per-call memory limit."""
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "48")
    monkeypatch.setenv("GAIA_DOC_MAX_RATIO", "100000")
    path = env.workspace / "long.docx"
    docx.Document().save(path)
    paragraph = b"<w:p><w:r><w:t>" + b"x" * 2**20 + b"</w:t></w:r></w:p>"
    inflate_part(path, "word/document.xml", WORD_BODY_HEAD, paragraph, 40 * len(paragraph), WORD_BODY_TAIL)
    before = resident_mb()
    refused = failed(await call("extract_docx_content", file_path="long.docx"))
    assert "more than the 48 MB of memory one call may use (GAIA_CALL_MEMORY_MB)" in refused
    assert resident_mb() - before < 64
    with_picture(env.workspace / "fine.docx")
    assert "Figure 1 below." in ok(await call("extract_docx_content", file_path="fine.docx"))
