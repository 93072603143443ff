"""Opening an image the agent named: path guard, size limit, pixel limit, one sentence per failure.

Every tool of media-image-server and image-server reads its images through `load`, so the limits
and the error text are the same everywhere, for local files and URLs alike.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO, TypeVar

import httpx
from gaia_kit import PathGuard, ToolFailure, get_settings, run_blocking
from gaia_kit.core.bounded import call_memory_mb, out_of_memory, run_bounded
from gaia_kit.core.limits import check_pixels, image_bomb, max_image_pixels
from gaia_kit.web.http import shared_http
from PIL import Image, ImageOps, UnidentifiedImageError

# Pillow refuses images above twice this many pixels on its own; we refuse anything above it (the kit's
# check_pixels), so a small file that decodes to gigabytes (an image bomb) never gets decoded.
Image.MAX_IMAGE_PIXELS = max_image_pixels()

T = TypeVar("T")

# Extensions agents see, and the format Pillow names for them, to spot a mislabelled file.
EXTENSION_FORMATS = {
    ".jpg": "JPEG",
    ".jpeg": "JPEG",
    ".png": "PNG",
    ".gif": "GIF",
    ".webp": "WEBP",
    ".bmp": "BMP",
    ".tif": "TIFF",
    ".tiff": "TIFF",
}


@dataclass
class Opened:
    image: Image.Image
    name: str
    """The file name (or the last part of a URL's path)."""
    shown: str
    """The path or URL as the agent should see it."""
    size_bytes: int

    @property
    def mislabelled(self) -> str | None:
        """A note when the extension promises another format than the content has."""
        suffix = PurePosixPath(self.name).suffix.lower()
        expected = EXTENSION_FORMATS.get(suffix)
        if expected and self.image.format and expected != self.image.format:
            return f"the file is named {suffix} but its content is {self.image.format}"
        return None


def is_url(source: str) -> bool:
    return source.strip().lower().startswith(("http://", "https://"))


async def load(guard: PathGuard, source: str) -> Opened:
    """Open the image at a local path or an http(s) URL; URLs go through the kit's HTTP client
    (SSRF guard, size cap, retries, record/replay cache)."""
    if not is_url(source):
        return await run_blocking(open_image, guard, source)
    url = source.strip()
    response = await shared_http().get(url, max_bytes=get_settings().max_read_bytes)
    name = PurePosixPath(httpx.URL(response.url).path).name or "image"
    return await run_blocking(open_bytes, response.content, name, url)


async def in_worker(work: Callable[..., T], opened: Opened, *args: object) -> T:
    """work(opened, *args) in a forked worker under the per-call memory limit (gaia_kit.core.bounded):
    decoding takes memory the server would never give back. The image's file closes here after."""
    try:
        return await run_bounded(work, opened, *args)
    finally:
        opened.image.close()


def open_image(guard: PathGuard, source: str) -> Opened:
    """Open a local image lazily (header only), after every check that can refuse it cheaply."""
    raw = source.strip().removeprefix("file://")
    handle = guard.open_file(raw)  # no link followed out; Pillow reads this file, not the name again
    try:
        shown = guard.shown(raw)
        size = os.fstat(handle.fileno()).st_size
        _check_size(shown, size)
        return _opened(handle, PurePosixPath(shown).name, shown, size)
    except BaseException:
        handle.close()
        raise


def open_bytes(data: bytes, name: str, shown: str) -> Opened:
    """Open an image already in memory (downloaded), with the same checks as a file."""
    _check_size(shown, len(data))
    return _opened(io.BytesIO(data), name, shown, len(data))


def _check_size(shown: str, size: int) -> None:
    limit = get_settings().max_read_bytes
    if size > limit:
        raise ToolFailure(
            f"{shown} is {size / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB limit for one image "
            "(GAIA_MAX_READ_BYTES); pass a smaller or downscaled copy."
        )
    if size == 0:
        raise ToolFailure(f"{shown} is empty (0 bytes); it is not an image.")


def _opened(source: BinaryIO, name: str, shown: str, size: int) -> Opened:
    try:
        image = Image.open(source)
    except Image.DecompressionBombError:
        raise image_bomb(shown, None) from None
    except UnidentifiedImageError:
        source.seek(0)
        head = source.read(64)
        raise ToolFailure(f"{shown} is not an image Pillow can read: {_what_it_is(head)}.") from None
    try:
        check_pixels(shown, image.size)
    except ToolFailure:
        image.close()
        raise
    return Opened(image=image, name=name, shown=shown, size_bytes=size)


def _check_frame_memory(image: Image.Image) -> None:
    """Refuse a frame whose pixels alone need more than one call's memory, before decoding: Pillow
    reserves the whole frame at once, and a file that stops short never touches most of it, so the
    call's measure of memory it used would not see the reservation."""
    budget_mb = call_memory_mb()
    stored = 1 if image.mode in ("1", "L", "P") else 2 if image.mode.startswith("I;16") else 4
    if budget_mb and image.width * image.height * stored > budget_mb * 2**20:
        raise out_of_memory(budget_mb)


# What a file that is not a readable image usually turns out to be, by its first bytes.
NOT_IMAGES = (
    (b"%PDF-", "it is a PDF; read it with documents-pdf-server"),
    (b"PK\x03\x04", "it is a ZIP container (an Office file or an archive)"),
    (b"<svg", "it is an SVG drawing, which is text, not pixels; read it as a text file"),
    (b"<?xml", "it is an XML file (perhaps an SVG drawing); read it as a text file"),
    (b"<!doctype html", "it is an HTML page (perhaps an error page saved under this name)"),
    (b"<html", "it is an HTML page (perhaps an error page saved under this name)"),
)


def _what_it_is(head: bytes) -> str:
    lowered = head.lstrip().lower()
    for prefix, kind in NOT_IMAGES:
        if lowered.startswith(prefix.lower()):
            return kind
    if head[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1", b"ftypavif"):
        return "it is a HEIC/AVIF photo, which this server cannot decode; convert it to JPEG or PNG"
    return f"it starts with {head[:16]!r}; pass a JPEG, PNG, GIF, WebP, BMP or TIFF file"


def decoded(opened: Opened) -> Image.Image:
    """The pixels of the (first) frame, upright as the camera meant them."""
    _check_frame_memory(opened.image)
    try:
        opened.image.load()
        return ImageOps.exif_transpose(opened.image)
    except Image.DecompressionBombError:
        raise image_bomb(opened.shown, opened.image.size) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise ToolFailure(
            f"{opened.shown} could not be decoded ({exc}); the file is damaged or truncated."
        ) from None
