"""documents-txt-server: the text of any text file, with its encoding and statistics.

Large files are streamed: one call decodes only up to the requested window (statistics over the
first GAIA_MAX_READ_BYTES), so a 1 GB log costs a window's worth of memory, not a gigabyte.
"""

from typing import Annotated, Literal

from gaia_kit import KitServer, ToolFailure, get_settings, serve, session_of
from gaia_kit.core.hints import hints
from mcp.server.mcpserver import Context
from pydantic import Field

from . import render
from .reading import extract

server = KitServer(
    "documents-txt-server",
    bounded_calls=True,  # each call in a worker under GAIA_CALL_MEMORY_MB (gaia_kit.core.bounded)
    instructions=(
        "Extracts text files (TXT, MD, JSON, XML, source code, ...) with encoding detection and "
        "statistics. Long files come in pages: follow the start_index hint at the end of a result."
    ),
)


@server.tool(annotations=hints("Extract text content", read_only=True, open_world=False))
def extract_text_content(
    file_path: Annotated[str, Field(description="Path to the text document file to extract content from")],
    ctx: Context,
    output_format: Annotated[
        Literal["markdown", "json", "html", "text"],
        Field(description="Output format: 'markdown' (default), 'json', 'html' or 'text'"),
    ] = "markdown",
    encoding: Annotated[
        str | None, Field(description="Specific encoding to use (None for auto-detection)")
    ] = None,
    max_content_length: Annotated[
        int | None,
        Field(
            description="Maximum length of content to include in output (None: up to the server's page size)"
        ),
    ] = None,
    start_index: Annotated[
        int, Field(ge=0, description="Character offset of the content to start from, for reading on")
    ] = 0,
) -> str:
    """Extract content from text documents with encoding detection and analysis.

    This tool provides comprehensive text document content extraction with support for:
    - Various text file formats (TXT, MD, CSV, JSON, XML, source code, etc.)
    - Automatic encoding detection with fallback options
    - Content type detection and analysis
    - Comprehensive text statistics (lines, words, characters, encoding)
    - LLM-optimized output formatting (markdown, json, html or text)
    - Binary file detection and handling (binary files are refused with the server to use instead)
    Long content is returned in pages; the result says which start_index reads on.
    """
    if max_content_length is not None and max_content_length <= 0:
        raise ToolFailure("max_content_length must be a positive number of characters, or omitted.")
    guard = session_of(ctx).paths
    path = guard.resolve(file_path)  # its name and kind; the content is read from the file opened safely
    settings = get_settings()
    limit = min(max_content_length or settings.max_output_chars, settings.max_output_chars)
    with guard.open_file(file_path) as handle:
        result = extract(handle, path, file_path, encoding, start_index, limit, settings.max_read_bytes)
    kind, language = render.content_type(path, result.content[:512] if start_index == 0 else "")
    shown = guard.display(path)
    note = render.paging_note(result, result.stats.characters if result.stats.complete else None)
    if output_format == "json":
        return render.as_json(path, shown, result, kind, note)
    rows = render.facts(path, shown, result, kind)
    if output_format == "html":
        return render.as_html(rows, result.content, note)
    if output_format == "text":
        return render.as_text(rows, result.content, note)
    return render.as_markdown(rows, result.content, language, note)


@server.tool(annotations=hints("List supported text formats", read_only=True, open_world=False))
def list_supported_formats() -> str:
    """List all supported text formats for extraction."""
    groups: dict[str, list[str]] = {}
    for extension, (kind, _) in render.FORMATS.items():
        groups.setdefault(kind, []).append(extension)
    lines = ["# Supported text formats", ""]
    lines += [f"- {kind}: {', '.join(extensions)}" for kind, extensions in groups.items()]
    lines += [
        "",
        "Any other file that is text works too: the encoding is detected (UTF-8/16/32 with or without "
        "BOM, legacy code pages such as cp1252, GBK, Shift-JIS) or can be given with `encoding`.",
        "Binary files (PDF, Office, images, archives) are refused with the server to use instead.",
        "Output formats: markdown (default), json, html, text. Long content is paged with start_index.",
    ]
    return "\n".join(lines)


def main() -> None:
    serve(server)
