"""Reading text without loading whole files: encoding sniffing, windows, head and tail.

Every function reads a file already opened through the path guard (`PathGuard.open_file`), from
its start: a name is never opened twice, so what was checked is what is read.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
from collections import deque
from collections.abc import Iterator
from typing import BinaryIO

from gaia_kit import ToolFailure
from gaia_kit.documents.text import sniff_encoding

SAMPLE_BYTES = 64 * 1024
SKIP_CHUNK_CHARS = 1 << 20
TAIL_CHUNK_BYTES = 64 * 1024


def detect_encoding(handle: BinaryIO, raw: str) -> str:
    """Guess the encoding from the first bytes; refuse files that are not text at all."""
    handle.seek(0)
    sample = handle.read(SAMPLE_BYTES)
    encoding = sniff_encoding(sample)
    if encoding is None:
        raise ToolFailure(
            f"{raw} looks like a binary file, not text; use read_media_file for images and audio, or the "
            "document server for its format (PDF, DOCX, XLSX, ...)."
        )
    return encoding


@contextlib.contextmanager
def open_text(handle: BinaryIO, encoding: str) -> Iterator[io.TextIOWrapper]:
    # newline="" keeps line endings as they are, so what is read is what is in the file;
    # undecodable bytes become U+FFFD rather than failing the whole read.
    handle.seek(0)
    text = io.TextIOWrapper(handle, encoding=encoding, errors="replace", newline="")
    try:
        yield text
    finally:
        text.detach()  # the caller's file stays open: the caller closes it


def read_window(handle: BinaryIO, encoding: str, start: int, limit: int) -> tuple[str, bool]:
    """Characters [start, start+limit) of the file, and whether more follow; memory stays O(limit)."""
    with open_text(handle, encoding) as text:
        remaining = start
        while remaining > 0:
            skipped = text.read(min(remaining, SKIP_CHUNK_CHARS))
            if not skipped:
                break
            remaining -= len(skipped)
        window = text.read(limit + 1)
    return window[:limit], len(window) > limit


def head_lines(handle: BinaryIO, encoding: str, count: int, byte_cap: int) -> tuple[str, bool]:
    """The first `count` lines, stopping early (and saying so) past `byte_cap` characters."""
    lines: list[str] = []
    used = 0
    with open_text(handle, encoding) as text:
        for line in text:
            lines.append(line)
            used += len(line)
            if len(lines) >= count:
                break
            if used > byte_cap:
                return _strip_last_newline("".join(lines)), True
    return _strip_last_newline("".join(lines)), False


def tail_lines(handle: BinaryIO, encoding: str, count: int, byte_cap: int) -> tuple[str, bool]:
    """The last `count` lines, read backwards from the end in chunks; stops past `byte_cap` bytes."""
    size = os.fstat(handle.fileno()).st_size
    if codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        if size > byte_cap:
            raise ToolFailure(
                f"tail is not available for {encoding} files larger than {byte_cap} bytes; "
                "page through the file with start_index instead."
            )
        return _tail_by_scanning(handle, encoding, count)
    chunks: list[bytes] = []
    newlines = 0
    position = size
    capped = False
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
    decoded = b"".join(reversed(chunks)).decode(encoding, errors="replace")
    lines = _strip_last_newline(decoded).split("\n")
    if position > 0:
        # The first line read starts somewhere before `position`: it is cut, unless more lines than
        # wanted were read, in which case it falls outside the last `count` anyway.
        lines = lines[-count:] if len(lines) > count else lines[1:]
    else:
        lines = lines[-count:]
    return "\n".join(lines), capped


def _tail_by_scanning(handle: BinaryIO, encoding: str, count: int) -> tuple[str, bool]:
    # UTF-16/32 newlines are not single bytes, so read forwards keeping only the last lines.
    with open_text(handle, encoding) as text:
        kept = deque(text, maxlen=count)
    return _strip_last_newline("".join(kept)), False


def _strip_last_newline(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    if text.endswith(("\n", "\r")):
        return text[:-1]
    return text
