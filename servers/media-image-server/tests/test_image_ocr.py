"""extract_text_ocr through the MCP protocol, on text drawn with Pillow by the test."""

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok
from PIL import Image, ImageDraw, ImageFont

pytestmark = pytest.mark.anyio


def text_image(path, lines, size=48):
    """Black lines of text on white in Pillow's own font (DejaVu may be absent)."""
    font = ImageFont.load_default(size=size)
    image = Image.new("L", (1400, int(len(lines) * size * 1.6 + 80)), 255)
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((40, 40 + number * size * 1.6), line, fill=0, font=font)
    image.save(path)
    return path


async def test_drawn_text_is_read_back(call, kit_env):
    text_image(kit_env.workspace / "note.png", ["The quick brown fox", "jumps over 42 lazy dogs"])
    out = ok(await call("extract_text_ocr", file_path="note.png"))
    assert "The quick brown fox" in out and "jumps over 42 lazy dogs" in out
    assert "Language: eng (preprocessed)" in out and "mean confidence" in out


async def test_small_light_on_dark_screenshot_text_is_read(call, kit_env):
    # 9 px text on a small dark strip: tesseract alone misreads it; grayscale, inversion and upscaling fix it.
    image = Image.new("RGB", (300, 40), (30, 30, 30))
    ImageDraw.Draw(image).text(
        (10, 10), "Settings saved at 10:45", fill=(220, 220, 220), font=ImageFont.load_default(size=9)
    )
    image.save(kit_env.workspace / "dark.png")
    assert "Settings saved at 10:45" in ok(await call("extract_text_ocr", file_path="dark.png"))


async def test_word_boxes_are_in_original_pixels(call, kit_env):
    text_image(kit_env.workspace / "box.png", ["Invoice"], size=60)
    out = ok(await call("extract_text_ocr", file_path="box.png", word_boxes=True))
    row = next(line for line in out.splitlines() if line.startswith("Invoice\t"))
    left, top, width, height, confidence = (int(v) for v in row.split("\t")[1:])
    assert 30 <= left <= 60 and 30 <= top <= 70 and 100 < width < 400 and 20 < height < 90
    assert confidence > 50


async def test_languages_are_checked_against_installed_packs(call, kit_env):
    text_image(kit_env.workspace / "x.png", ["hello"])
    message = failed(await call("extract_text_ocr", file_path="x.png", language="xyz"))
    assert "xyz is not installed" in message and "eng" in message and "tesseract-ocr-xyz" in message
    assert "not a tesseract language code" in failed(
        await call("extract_text_ocr", file_path="x.png", language="eng; rm -rf /")
    )


async def test_a_blank_image_says_no_text(call, kit_env):
    Image.new("RGB", (300, 200), "white").save(kit_env.workspace / "blank.png")
    assert "(no text found" in ok(await call("extract_text_ocr", file_path="blank.png"))


async def test_unreadable_and_outside_files_fail_in_one_sentence(call, kit_env, monkeypatch):
    (kit_env.workspace / "fake.png").write_text("<html>not an image</html>")
    message = failed(await call("extract_text_ocr", file_path="fake.png"))
    assert "is not an image Pillow can read: it is an HTML page" in message
    (kit_env.workspace / "scan.jpg").write_bytes(b"%PDF-1.7\n...")
    assert "it is a PDF; read it with documents-pdf-server" in failed(
        await call("get_image_metadata", file_path="scan.jpg")
    )
    assert "Access denied" in failed(await call("extract_text_ocr", file_path="/etc/hostname"))
    assert "does not exist" in failed(await call("extract_text_ocr", file_path="missing.png"))
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "off")
    refused = failed(await call("extract_text_ocr", file_path="http://127.0.0.1:9/a.png"))
    assert "loopback" in refused and "GAIA_HTTP_ALLOW" in refused  # the kit's SSRF guard


async def test_an_image_url_is_read_through_the_kit_http_client(call, site):
    text_image(site.root / "sign.png", ["Platform 9"])
    out = ok(await call("extract_text_ocr", file_path=f"{site.url}/sign.png"))
    assert f"File: {site.url}/sign.png" in out and "Platform 9" in out
    missing = failed(await call("get_image_metadata", file_path=f"{site.url}/gone.png"))
    assert "HTTP 404" in missing and "check the URL" in missing


async def test_tesseract_past_its_deadline_is_stopped_and_said_so(call, kit_env, monkeypatch):
    text_image(kit_env.workspace / "slow.png", ["Some text"] * 10)
    monkeypatch.setenv("IMAGE_OCR_TIMEOUT", "0.001")
    message = failed(await call("extract_text_ocr", file_path="slow.png"))
    assert "took longer than" in message and "IMAGE_OCR_TIMEOUT" in message
    monkeypatch.delenv("IMAGE_OCR_TIMEOUT")
    forget_settings()  # settings are read once per process: the next call reads the default again
    assert "Some text" in ok(await call("extract_text_ocr", file_path="slow.png"))
