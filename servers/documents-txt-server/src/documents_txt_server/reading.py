"""One streaming pass over a text file: the requested window of content, and statistics.

Memory is bounded by the window, not the file: bytes are decoded chunk by chunk, statistics are
counted over at most `stats_byte_cap` bytes, and reading stops as soon as both are done.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gaia_kit import ToolFailure
from gaia_kit.documents.text import sniff_encoding

SAMPLE_BYTES = 64 * 1024
CHUNK_BYTES = 1 << 20

_MAGIC = (
    (b"%PDF", "a PDF document; use the documents-pdf-server"),
    (b"PK\x03\x04", "a ZIP container (DOCX, XLSX, PPTX or an archive); use the server for that format"),
    (b"\x89PNG", "a PNG image; use the media-image-server"),
    (b"\xff\xd8\xff", "a JPEG image; use the media-image-server"),
    (b"GIF8", "a GIF image; use the media-image-server"),
    (b"\xd0\xcf\x11\xe0", "an old Office document (DOC, XLS, PPT); use the server for that format"),
    (b"ID3", "an MP3 file; use the media-audio-server"),
    (b"\x1f\x8b", "a gzip archive; decompress it first"),
)
_BY_EXTENSION = {
    ".pdf": "documents-pdf-server",
    ".docx": "documents-docx-server",
    ".pptx": "documents-pptx-server",
    ".xlsx": "excel",
    ".xls": "excel",
}
_CONTROL_OK = set("\t\n\r\f\v\b\x1b")


def choose_encoding(handle: BinaryIO, path: Path, raw: str, requested: str | None) -> tuple[str, bool]:
    """(encoding, detected?) for the open file named `path`, or a ToolFailure saying it is not text."""
    handle.seek(0)
    sample = handle.read(SAMPLE_BYTES)
    if requested:
        try:
            name = codecs.lookup(requested).name
        except LookupError:
            raise ToolFailure(
                f"Unknown encoding {requested!r}; pass a Python codec name such as utf-8, cp1252 or "
                "utf-16, or omit encoding to detect it."
            ) from None
        wide = name.startswith(("utf-16", "utf-32"))
        if not wide and (_binary_reason(sample) or b"\x00" in sample[:8192]):
            raise _not_text(raw, path, sample)
        return requested, False
    encoding = sniff_encoding(sample)
    if encoding is None or _binary_reason(sample):
        raise _not_text(raw, path, sample)
    decoded = sample.decode(encoding, errors="replace")
    controls = sum(1 for ch in decoded if ch < " " and ch not in _CONTROL_OK)
    if decoded and controls / len(decoded) > 0.1:
        raise _not_text(raw, path, sample)
    return encoding, True


def _binary_reason(sample: bytes) -> str | None:
    for magic, what in _MAGIC:
        if sample.startswith(magic):
            return what
    return None


def _not_text(raw: str, path: Path, sample: bytes) -> ToolFailure:
    reason = _binary_reason(sample)
    server = _BY_EXTENSION.get(path.suffix.lower())
    if server:
        hint = f"it is a {path.suffix.lower()} file; use the {server}"
    elif reason:
        hint = f"it is {reason}"
    else:
        hint = "use the server for its format, or read_media_file for images and audio"
    return ToolFailure(f"{raw} is a binary file, not text, so it cannot be extracted here; {hint}.")


@dataclass
class Statistics:
    lines: int = 0
    words: int = 0
    characters: int = 0
    replaced: int = 0
    scanned_bytes: int = 0
    complete: bool = False
    _in_word: bool = field(default=False, repr=False)
    _last: str = field(default="", repr=False)

    def add(self, text: str) -> None:
        if not text:
            return
        self.characters += len(text)
        self.lines += text.count("\n")
        self.replaced += text.count("\ufffd")
        words = len(text.split())
        if words and self._in_word and not text[0].isspace():
            words -= 1  # a word cut by the chunk boundary was already counted
        self.words += words
        self._in_word = not text[-1].isspace()
        self._last = text[-1]

    def finish(self) -> None:
        self.complete = True
        if self.characters and self._last != "\n":
            self.lines += 1  # a last line without a newline is still a line


@dataclass
class Extraction:
    encoding: str
    detected: bool
    size: int
    start: int
    content: str
    more: bool
    stats: Statistics


def extract(
    handle: BinaryIO, path: Path, raw: str, requested: str | None, start: int, limit: int, stats_byte_cap: int
) -> Extraction:
    """Characters [start, start+limit) of the open file named `path` (opened through the path guard),
    and statistics over the first `stats_byte_cap` bytes."""
    encoding, detected = choose_encoding(handle, path, raw, requested)
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    stats = Statistics()
    wanted_end = start + limit + 1  # one more than shown, to know whether more follows
    parts: list[str] = []
    position = 0  # characters decoded so far
    size = os.fstat(handle.fileno()).st_size
    handle.seek(0)
    while True:
        chunk = handle.read(CHUNK_BYTES)
        text = decoder.decode(chunk, final=not chunk)
        if stats.scanned_bytes < stats_byte_cap:
            stats.add(text)
            stats.scanned_bytes += len(chunk)
        if position + len(text) > start and position < wanted_end:
            parts.append(text[max(0, start - position) : wanted_end - position])
        position += len(text)
        if not chunk:
            if stats.scanned_bytes >= size:
                stats.finish()
            break
        if position >= wanted_end and stats.scanned_bytes >= stats_byte_cap:
            break
    window = "".join(parts)
    return Extraction(
        encoding=encoding,
        detected=detected,
        size=size,
        start=start,
        content=window[:limit],
        more=len(window) > limit,
        stats=stats,
    )
