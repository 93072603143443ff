"""Declared sizes, checked before anything is inflated: zip parts, image pixels, line lengths.

A few megabytes on disk can claim gigabytes once inflated: a zip part that deflates a thousandfold,
an image header that promises 100,000 x 100,000 pixels, a text "line" of 250 MB. Every document,
spreadsheet and image tool asks these checks first, so such a file is refused in milliseconds with
a sentence that names the limit and its variable; what slips through a check (an XML tree that grows
far beyond its text) meets the per-call memory limit of `gaia_kit.core.bounded`. The core's
libraries only: the image servers use it without the documents extra.

Python's zipfile never inflates a part beyond the size its central directory declares (it stops
there and fails the CRC), so checking the declared sizes bounds what any Python reader inflates.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings

MB = 2**20
RATIO_FLOOR_BYTES = MB
"""Parts smaller than this may inflate as much as they like: the ratio of a tiny part says nothing."""


class LimitSettings(BaseSettings):
    """The declared-size limits; see docs/configuration.md. An empty variable means its default."""

    model_config = SettingsConfigDict(env_prefix="GAIA_", extra="ignore", env_ignore_empty=True)

    doc_max_part_mb: float = Field(64, gt=0)
    """A zip part read whole (an XML tree, an image, shared strings), inflated, in MB."""
    doc_max_streamed_part_mb: float = Field(1024, gt=0)
    """A zip part read as a stream (a worksheet in read-only mode), inflated, in MB."""
    doc_max_total_mb: float = Field(2048, gt=0)
    """All parts of one package together, inflated, in MB."""
    doc_max_ratio: float = Field(100, gt=0)
    """How many times a part larger than 1 MB may inflate."""
    max_line_mb: float = Field(16, gt=0)
    """The longest line a table reader accepts, in MB."""
    image_max_pixels: float = Field(90_000_000, gt=0, validation_alias="IMAGE_MAX_PIXELS")
    """An image whose header promises more pixels is never decoded."""


@dataclass(frozen=True)
class PackageLimits:
    part_mb: float
    """A part read whole (an XML tree, an image, shared strings): GAIA_DOC_MAX_PART_MB."""
    streamed_part_mb: float
    """A part read as a stream (a worksheet in read-only mode): GAIA_DOC_MAX_STREAMED_PART_MB."""
    total_mb: float
    """All parts together: GAIA_DOC_MAX_TOTAL_MB."""
    ratio: float
    """How many times a part larger than 1 MB may inflate: GAIA_DOC_MAX_RATIO."""
    parts: int = 10_000

    @classmethod
    def from_settings(cls) -> PackageLimits:
        config = settings(LimitSettings)
        return cls(
            part_mb=config.doc_max_part_mb,
            streamed_part_mb=config.doc_max_streamed_part_mb,
            total_mb=config.doc_max_total_mb,
            ratio=config.doc_max_ratio,
        )


def check_package(path: Path, raw: str, *, streamed: Callable[[str], bool] = lambda name: False) -> None:
    """Refuse a zip package (docx, pptx, xlsx) whose declared sizes would inflate past the limits.

    `streamed(name)` says which parts the reader streams rather than loads whole."""
    limits = PackageLimits.from_settings()
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # not a readable zip: the reader says what it is instead
    if len(infos) > limits.parts:
        raise _refused(raw, f"it holds {len(infos):,} parts, over the {limits.parts:,} a package may hold")
    total = 0
    for info in infos:
        total += info.file_size
        is_streamed = streamed(info.filename)
        limit = limits.streamed_part_mb if is_streamed else limits.part_mb
        variable = "GAIA_DOC_MAX_STREAMED_PART_MB" if is_streamed else "GAIA_DOC_MAX_PART_MB"
        if info.file_size > limit * MB:
            raise _refused(
                raw,
                f"its part {info.filename} declares {_mb(info.file_size)} once inflated, over the "
                f"{limit:g} MB one part may hold ({variable})",
            )
        if info.file_size > RATIO_FLOOR_BYTES:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > limits.ratio:
                raise _refused(
                    raw,
                    f"its part {info.filename} inflates {ratio:,.0f} times ({_mb(info.compress_size)} to "
                    f"{_mb(info.file_size)}), over the {limits.ratio:g} times allowed (GAIA_DOC_MAX_RATIO)",
                )
    if total > limits.total_mb * MB:
        raise _refused(
            raw,
            f"its parts declare {_mb(total)} once inflated, over the {limits.total_mb:g} MB a package "
            "may hold (GAIA_DOC_MAX_TOTAL_MB)",
        )


def _refused(raw: str, why: str) -> ToolFailure:
    return ToolFailure(
        f"{raw} was not opened: {why}; it may be a decompression bomb. Pass a smaller file, or raise the "
        "limit if you trust it."
    )


def _mb(size: int) -> str:
    return f"{size / MB:,.1f} MB" if size >= MB else f"{size / 1024:,.0f} KB"


# --- images -----------------------------------------------------------------------------------


def max_image_pixels() -> int:
    """IMAGE_MAX_PIXELS (90 million by default): an image with more is never decoded."""
    return int(settings(LimitSettings).image_max_pixels)


def check_pixels(shown: str, size: tuple[int, int]) -> None:
    """Refuse an image whose header promises more pixels than the limit, before any decoding."""
    width, height = size
    if width * height > max_image_pixels():
        raise image_bomb(shown, size)


def image_bomb(shown: str, size: tuple[int, int] | None) -> ToolFailure:
    pixels = f" ({size[0]} x {size[1]} pixels)" if size else ""
    return ToolFailure(
        f"{shown} is too large to decode{pixels}: over the {max_image_pixels():,} pixel limit "
        "(IMAGE_MAX_PIXELS) that guards against decompression bombs; pass a downscaled copy."
    )


# --- lines ------------------------------------------------------------------------------------


def max_line_bytes() -> int:
    """GAIA_MAX_LINE_MB (16 by default): the longest line a table reader accepts."""
    return int(settings(LimitSettings).max_line_mb * MB)


class LineTooLong(ToolFailure):
    """A line longer than GAIA_MAX_LINE_MB: a parser would hold all of it (and its fields) at once."""


class LineLimitedReader(io.RawIOBase):
    """A binary file that fails with LineTooLong as soon as one line passes the limit.

    Parsers (pandas, csv) keep a whole line in memory, several times over; this reader lets them
    stream a file of any length while no single line may grow without bound."""

    def __init__(self, handle: io.BufferedIOBase, shown: str, limit: int | None = None):
        self._handle = handle
        self._shown = shown
        self._limit = limit if limit is not None else max_line_bytes()
        self._since_newline = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        count = self._handle.readinto(buffer)
        if not count:
            return 0
        chunk = bytes(memoryview(buffer)[:count])
        first = chunk.find(b"\n")
        longest = self._since_newline + (first if first >= 0 else count)
        self._since_newline = count - chunk.rfind(b"\n") - 1 if first >= 0 else longest
        if longest > self._limit or self._since_newline > self._limit:
            raise LineTooLong(
                f"{self._shown} has a line longer than {self._limit / MB:g} MB (GAIA_MAX_LINE_MB), too long to "
                "parse as rows; it is not a table of lines. Split it, or read it with a text tool by byte range."
            )
        return count

    def close(self) -> None:
        self._handle.close()
        super().close()


def line_limited(handle: BinaryIO, shown: str) -> io.BufferedReader:
    """`handle` read through a LineLimitedReader; closing the result closes `handle`."""
    return io.BufferedReader(LineLimitedReader(handle, shown), buffer_size=MB)


def open_line_limited(path: Path, shown: str) -> io.BufferedReader:
    """`path` opened for binary reading, failing with LineTooLong at the first overlong line."""
    return line_limited(open(path, "rb"), shown)
