"""Reading files: text in windowed pages or by head and tail lines, several files at once, media inline."""

from __future__ import annotations

import base64
import os
from typing import Annotated, BinaryIO

from gaia_kit import PathGuard, ToolFailure, get_settings, page, session_of, truncate
from gaia_kit.core.args import MaxLength
from gaia_kit.core.errors import describe_exception
from gaia_kit.core.hints import hints
from gaia_kit.core.tools import Tool, tool
from mcp.server.mcpserver import Context
from mcp.types import AudioContent, ImageContent
from pydantic import Field

from . import textio, walk
from .media import media_type
from .tool import PathArg, StartIndex

TailLines = Annotated[
    float | None, Field(description="If provided, returns only the last N lines of the file")
]
HeadLines = Annotated[
    float | None, Field(description="If provided, returns only the first N lines of the file")
]


@tool(hints("Read text file", read_only=True, open_world=False))
def read_text_file(
    path: PathArg,
    ctx: Context,
    tail: TailLines = None,
    head: HeadLines = None,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Read the complete contents of a file from the file system as text. Handles various text
    encodings and provides detailed error messages if the file cannot be read. Use this tool when you
    need to examine the contents of a single file. Use the 'head' parameter to read only the first N
    lines of a file, or the 'tail' parameter to read only the last N lines of a file. Operates on the
    file as text regardless of extension. Long output is cut into pages: call again with the
    start_index given at the end. Only works within allowed directories."""
    return _read_text(session_of(ctx).paths, path, head, tail, start_index, max_length)


read_file = Tool(
    read_text_file.fn,
    hints("Read file (deprecated)", read_only=True, open_world=False),
    name="read_file",
    description="Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
)


@tool(hints("Read media file", read_only=True, open_world=False))
def read_media_file(path: PathArg, ctx: Context) -> list[ImageContent | AudioContent]:
    """Read an image or audio file. Returns the base64 encoded data and MIME type. Only works within
    allowed directories."""
    with session_of(ctx).paths.open_file(path) as handle:
        mime = media_type(path, handle.read(16))
        if not mime.startswith(("image/", "audio/")):
            raise ToolFailure(
                f"{path} is {mime}, not an image or audio file; read text with read_text_file, and documents "
                "(PDF, DOCX, XLSX, ...) with the document server for their format."
            )
        size = os.fstat(handle.fileno()).st_size
        # Sent whole as base64: LLM APIs refuse much larger inline media anyway.
        cap = min(get_settings().max_media_bytes, get_settings().max_read_bytes)
        if size > cap:
            raise ToolFailure(
                f"{path} is {walk.format_size(size)}, over the {walk.format_size(cap)} limit for inline media; "
                "use the media-image-server or media-audio-server tools, which work on the file in place."
            )
        handle.seek(0)
        data = base64.b64encode(handle.read(cap + 1)).decode("ascii")
    if mime.startswith("image/"):
        return [ImageContent(type="image", data=data, mime_type=mime)]
    return [AudioContent(type="audio", data=data, mime_type=mime)]


@tool(hints("Read multiple files", read_only=True, open_world=False))
def read_multiple_files(
    paths: Annotated[list[str], Field(description="File paths to read")],
    ctx: Context,
) -> str:
    """Read the contents of multiple files simultaneously. This is more efficient than reading files one
    by one when you need to analyze or compare multiple files. Each file's content is returned with its
    path as a reference. Failed reads for individual files won't stop the entire operation. Each file
    gets an equal share of the output cap; a cut file says how to read the rest. Only works within
    allowed directories."""
    if not paths:
        raise ToolFailure("paths is empty; pass at least one file path.")
    guard = session_of(ctx).paths
    cap = get_settings().max_output_chars
    share = max(500, cap // len(paths))
    results = []
    for raw in paths:
        try:
            with guard.open_file(raw) as handle:
                encoding = textio.detect_encoding(handle, raw)
                text, more = textio.read_window(handle, encoding, 0, share)
            if more:
                text += (
                    f"\n[File cut at {len(text)} characters; read on with "
                    f"read_text_file(path={raw!r}, start_index={len(text)}).]"
                )
            results.append(f"{raw}:\n{text}\n")
        except Exception as exc:  # one unreadable file must not hide the others
            reason = (
                str(exc) if isinstance(exc, ToolFailure) else describe_exception("read_multiple_files", exc)
            )
            results.append(f"{raw}: Error - {reason}")
    return truncate("\n---\n".join(results), cap + 1_000, note="Read fewer files per call.")


def _read_text(
    guard: PathGuard, raw: str, head: float | None, tail: float | None, start: int, max_length: int | None
) -> str:
    if head and tail:
        raise ToolFailure("Cannot specify both head and tail parameters simultaneously; pass one of them.")
    with guard.open_file(raw) as handle:
        return _read_open_text(handle, raw, head, tail, start, max_length)


def _read_open_text(
    handle: BinaryIO, raw: str, head: float | None, tail: float | None, start: int, max_length: int | None
) -> str:
    encoding = textio.detect_encoding(handle, raw)
    settings = get_settings()
    if head or tail:
        count = _line_count(head or tail, "head" if head else "tail")
        reader = textio.head_lines if head else textio.tail_lines
        text, capped = reader(handle, encoding, count, settings.max_read_bytes)
        if capped:
            text += (
                f"\n\n[Stopped after {walk.format_size(settings.max_read_bytes)}: the lines are very long. "
                "Page through the file with start_index instead.]"
            )
        return page(text, start, max_length) if text else f"[No lines: {raw} is empty.]"
    limit = min(max_length or settings.max_output_chars, settings.max_output_chars)
    text, more = textio.read_window(handle, encoding, start, limit)
    size = os.fstat(handle.fileno()).st_size
    if not text:
        if start and size:
            return f"[No more content: start_index {start} is past the end of the file.]"
        return f"[{raw} is empty.]"
    if more:
        end = start + len(text)
        text += (
            f"\n\n[Output truncated: characters {start}-{end} of a {size}-byte file. "
            f"Call again with start_index={end} to read more.]"
        )
    return text


def _line_count(value: float, name: str) -> int:
    if value < 0 or value != int(value):
        raise ToolFailure(f"{name} must be a positive whole number of lines, not {value}.")
    return int(value)
