"""get_image_metadata, and the limits every tool shares, on images written by the test."""

import struct
import zlib

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.bombs import png_claiming, resident_mb
from PIL import ExifTags, Image

pytestmark = pytest.mark.anyio


def photo_with_exif(path):
    image = Image.new("RGB", (640, 480), (30, 120, 200))
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "Gaia Camera Co"
    exif[ExifTags.Base.Model] = "GX-1"
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = "2023:07:14 09:30:15"
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSLatitudeRef] = "S"
    gps[ExifTags.GPS.GPSLatitude] = (33.0, 51.0, 25.2)  # Sydney Opera House
    gps[ExifTags.GPS.GPSLongitudeRef] = "E"
    gps[ExifTags.GPS.GPSLongitude] = (151.0, 12.0, 54.0)
    gps[ExifTags.GPS.GPSAltitude] = 12.5
    gps[ExifTags.GPS.GPSAltitudeRef] = 0
    image.save(path, "JPEG", exif=exif, dpi=(300, 300))
    return path


async def test_jpeg_exif_timestamps_and_gps_are_readable(call, kit_env):
    photo_with_exif(kit_env.workspace / "photo.jpg")
    out = ok(await call("get_image_metadata", file_path="photo.jpg"))
    assert "Format: JPEG" in out and "Size: 640 x 480 pixels" in out and "Mode: RGB" in out
    assert "Make: Gaia Camera Co" in out and "Model: GX-1" in out
    assert "DateTimeOriginal: 2023:07:14 09:30:15" in out
    assert "Position: -33.857000, 151.215000" in out and "Altitude: 12.5 m" in out
    assert "Resolution: 300 x 300 dpi" in out


async def test_animated_gif_lists_its_frames(call, kit_env):
    frames = [Image.new("RGB", (50, 40), color) for color in ("red", "green", "blue", "white")]
    frames[0].save(
        kit_env.workspace / "spin.gif",
        save_all=True,
        append_images=frames[1:],
        duration=[100, 200, 100, 50],
        loop=0,
    )
    out = ok(await call("get_image_metadata", file_path="spin.gif"))
    assert "Format: GIF" in out and "Animated: yes, 4 frames" in out
    assert "Duration: 0.45 s (frame durations in ms: 100, 200, 100, 50)" in out and "Loop: forever" in out


async def test_a_plain_png_has_no_exif_and_a_mislabelled_file_is_named(call, kit_env):
    Image.new("RGBA", (10, 20)).save(kit_env.workspace / "clear.png")
    out = ok(await call("get_image_metadata", file_path="clear.png"))
    assert "Size: 10 x 20 pixels" in out and "(with transparency)" in out and "EXIF: none" in out
    Image.new("RGB", (10, 10)).save(kit_env.workspace / "really-a-jpeg.png", "JPEG")
    out = ok(await call("get_image_metadata", file_path="really-a-jpeg.png"))
    assert "Format: JPEG" in out and "named .png but its content is JPEG" in out


def png_bomb(path, side):
    """A tiny PNG whose header claims side x side grey pixels: the classic decompression bomb."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = zlib.compress(b"\x00" * (side + 1) * 64, 9)  # a few rows; decoding would need side*side bytes
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )
    return path


async def test_an_image_bomb_is_refused_and_the_server_keeps_serving(call, kit_env):
    png_bomb(kit_env.workspace / "bomb.png", 50_000)
    for tool in ("get_image_metadata", "extract_text_ocr", "analyze_image_ai"):
        message = failed(await call(tool, file_path="bomb.png"))
        assert "too large to decode" in message and "IMAGE_MAX_PIXELS" in message
    photo_with_exif(kit_env.workspace / "after.jpg")
    assert "Format: JPEG" in ok(await call("get_image_metadata", file_path="after.jpg"))


async def test_files_over_the_size_limit_truncated_or_empty_fail_clearly(call, kit_env, monkeypatch):
    photo_with_exif(kit_env.workspace / "big.jpg")
    monkeypatch.setenv("GAIA_MAX_READ_BYTES", "1000")
    from gaia_kit.core.settings import forget_settings

    forget_settings()
    assert "over the 0 MiB limit" in failed(await call("get_image_metadata", file_path="big.jpg"))
    monkeypatch.delenv("GAIA_MAX_READ_BYTES")
    forget_settings()
    data = (kit_env.workspace / "big.jpg").read_bytes()
    (kit_env.workspace / "cut.jpg").write_bytes(data[: len(data) // 3])
    assert "damaged or truncated" in failed(await call("extract_text_ocr", file_path="cut.jpg"))
    (kit_env.workspace / "empty.png").write_bytes(b"")
    assert "is empty" in failed(await call("get_image_metadata", file_path="empty.png"))


async def test_a_decode_past_the_call_memory_limit_is_stopped(call, kit_env, monkeypatch):
    """Under the pixel limit (64 million pixels) but over the call's memory: one sentence, served on."""
    png_claiming(kit_env.workspace / "wide.png", 8000, 8000)
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "32")
    before = resident_mb()
    message = failed(await call("extract_text_ocr", file_path="wide.png"))
    assert "more than the 32 MB of memory one call may use (GAIA_CALL_MEMORY_MB)" in message
    assert resident_mb() - before < 32
    photo_with_exif(kit_env.workspace / "after.jpg")
    assert "Format: JPEG" in ok(await call("get_image_metadata", file_path="after.jpg"))
