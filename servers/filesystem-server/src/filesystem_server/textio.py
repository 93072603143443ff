"""Reading text without loading whole files: encoding sniffing, windows, head and tail."""

from __future__ import annotations

import codecs
from collections import deque
from pathlib import Path

from charset_normalizer import from_bytes
from gaia_kit import ToolFailure

SAMPLE_BYTES = 64 * 1024
SKIP_CHUNK_CHARS = 1 << 20
TAIL_CHUNK_BYTES = 64 * 1024

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def detect_encoding(path: Path, raw: str) -> str:
    """Guess the encoding from the first bytes; refuse files that are not text at all."""
    with open(path, "rb") as handle:
        sample = handle.read(SAMPLE_BYTES)
    encoding = sniff_encoding(sample)
    if encoding is None:
        raise ToolFailure(
            f"{raw} looks like a binary file, not text; use read_media_file for images and audio, or the "
            "document server for its format (PDF, DOCX, XLSX, ...)."
        )
    return encoding


# Single-byte Latin code pages that a detector cannot tell apart on short samples.
_LATIN_FAMILY = {"cp1250", "cp1252", "cp1257", "latin_1", "mac_latin2", "mac_roman"} | {
    f"iso8859_{n}" for n in (1, 2, 3, 4, 9, 10, 13, 14, 15, 16)
}


def sniff_encoding(sample: bytes) -> str | None:
    """The encoding of a text sample, or None when it is not text (NUL bytes, or nothing fits)."""
    for bom, name in _BOMS:
        if sample.startswith(bom):
            return name
    if b"\x00" in sample[:8192]:
        return None
    try:
        # A sample can end inside a multi-byte character; the incremental decoder allows that.
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    results = from_bytes(sample)
    best = results.best()
    if best is None:
        return None
    if best.encoding in _LATIN_FAMILY and best.encoding != "cp1252":
        # On short Western text the detector often ranks a Central European or Baltic code page first
        # (è becomes č); cp1252 is by far the most common of them, so it wins a near tie.
        for match in results:
            if "cp1252" in match.could_be_from_charset and match.chaos <= best.chaos + 0.15:
                return "cp1252"
    return best.encoding


def open_text(path: Path, encoding: str):
    # newline="" keeps line endings as they are, so what is read is what is in the file;
    # undecodable bytes become U+FFFD rather than failing the whole read.
    return open(path, encoding=encoding, errors="replace", newline="")


def read_window(path: Path, encoding: str, start: int, limit: int) -> tuple[str, bool]:
    """Characters [start, start+limit) of the file, and whether more follow; memory stays O(limit)."""
    with open_text(path, encoding) as handle:
        remaining = start
        while remaining > 0:
            skipped = handle.read(min(remaining, SKIP_CHUNK_CHARS))
            if not skipped:
                break
            remaining -= len(skipped)
        text = handle.read(limit + 1)
    return text[:limit], len(text) > limit


def head_lines(path: Path, encoding: str, count: int, byte_cap: int) -> tuple[str, bool]:
    """The first `count` lines, stopping early (and saying so) past `byte_cap` characters."""
    lines: list[str] = []
    used = 0
    with open_text(path, encoding) as handle:
        for line in handle:
            lines.append(line)
            used += len(line)
            if len(lines) >= count:
                break
            if used > byte_cap:
                return _strip_last_newline("".join(lines)), True
    return _strip_last_newline("".join(lines)), False


def tail_lines(path: Path, encoding: str, count: int, byte_cap: int) -> tuple[str, bool]:
    """The last `count` lines, read backwards from the end in chunks; stops past `byte_cap` bytes."""
    size = path.stat().st_size
    if codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        if size > byte_cap:
            raise ToolFailure(
                f"tail is not available for {encoding} files larger than {byte_cap} bytes; "
                "page through the file with start_index instead."
            )
        return _tail_by_scanning(path, encoding, count)
    chunks: list[bytes] = []
    newlines = 0
    position = size
    capped = False
    with open(path, "rb") as handle:
        # One more newline than lines wanted, because the file usually ends with one.
        while position > 0 and newlines <= count:
            if size - position >= byte_cap:
                capped = True
                break
            step = min(TAIL_CHUNK_BYTES, position)
            position -= step
            handle.seek(position)
            chunk = handle.read(step)
            chunks.append(chunk)
            newlines += chunk.count(b"\n")
    text = b"".join(reversed(chunks)).decode(encoding, errors="replace")
    lines = _strip_last_newline(text).split("\n")
    if position > 0:
        # The first line read starts somewhere before `position`: it is cut, unless more lines than
        # wanted were read, in which case it falls outside the last `count` anyway.
        lines = lines[-count:] if len(lines) > count else lines[1:]
    else:
        lines = lines[-count:]
    return "\n".join(lines), capped


def _tail_by_scanning(path: Path, encoding: str, count: int) -> tuple[str, bool]:
    # UTF-16/32 newlines are not single bytes, so read forwards keeping only the last lines.
    with open_text(path, encoding) as handle:
        kept = deque(handle, maxlen=count)
    return _strip_last_newline("".join(kept)), False


def _strip_last_newline(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    if text.endswith(("\n", "\r")):
        return text[:-1]
    return text
