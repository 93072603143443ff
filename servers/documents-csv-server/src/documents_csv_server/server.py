"""documents-csv-server: shape, columns, types, a preview and statistics of a CSV file.

The file is streamed in chunks (see profile.py), so a 1 GB CSV is counted row by row in a few
hundred MB. Finished reports are cached per file version, so paging through one costs one pass.
"""

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from gaia_kit import KitServer, PathGuard, ToolFailure, page, serve, session_of
from gaia_kit.core.args import MaxLength, OutputFormat
from gaia_kit.core.bounded import run_bounded
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from . import charts, report
from .profile import profile
from .sniff import detect

server = KitServer(
    "documents-csv-server",
    instructions=(
        "Reads CSV/TSV files of any size: row count, columns and types, a preview and statistics, "
        "computed by streaming. Long reports come in pages: follow the start_index hint."
    ),
)

_CACHE_SIZE = 16
_cache: OrderedDict["_Request", tuple[str, dict[str, Any]]] = OrderedDict()
_cache_lock = threading.Lock()


@server.tool(
    annotations=hints(
        # generate_visualizations writes charts into the workspace; the same call writes the same charts
        "Extract CSV content",
        read_only=False,
        destructive=False,
        idempotent=True,
        open_world=False,
    ),
    output=dict[str, Any],
)
async def extract_csv_content(
    file_path: Annotated[str, Field(description="Path to the CSV document file to extract content from")],
    ctx: Context,
    output_format: OutputFormat = "markdown",
    max_rows: Annotated[
        int | None, Field(description="Maximum number of rows to read (None for all rows)")
    ] = None,
    include_statistics: Annotated[
        bool, Field(description="Whether to include statistical summary in output")
    ] = True,
    generate_visualizations: Annotated[
        bool,
        Field(description="Whether to generate and save data visualizations (PNG files in the workspace)"),
    ] = False,
    encoding: Annotated[str | None, Field(description="File encoding (auto-detected if None)")] = None,
    delimiter: Annotated[str | None, Field(description="CSV delimiter (auto-detected if None)")] = None,
    has_header: Annotated[bool, Field(description="Whether the first row holds column names")] = True,
    start_index: Annotated[
        int, Field(ge=0, description="Character offset in the report, for reading on")
    ] = 0,
    max_length: MaxLength = None,
) -> CallToolResult:
    """Extract content from CSV documents using pandas.

    This tool provides comprehensive CSV document content extraction with support for:
    - CSV, TSV, and delimited text files
    - Automatic encoding and delimiter detection
    - Statistical analysis and data profiling (exact counts, means, sums; quartiles estimated on huge files)
    - Multiple output formats (markdown, json, text)
    - Optional data visualizations, saved as PNG files in the workspace
    - Memory-efficient processing for large files: the file is streamed, every row is counted
    """
    if max_rows is not None and max_rows <= 0:
        raise ToolFailure("max_rows must be a positive number of rows, or omitted to read them all.")
    guard = session_of(ctx).paths
    shown = guard.shown(file_path)
    with guard.local_path(file_path) as path:  # the file opened beneath its root, read by descriptor
        info = path.stat()
        request = _Request(
            f"{shown}\0{info.st_dev}:{info.st_ino}", info.st_size, info.st_mtime_ns, str(guard.workspace),
            output_format, max_rows, include_statistics, generate_visualizations, encoding, delimiter, has_header,
        )  # fmt: skip
        # Charts are files that may be gone by the next call, so reports that list them are not cached.
        answer = None if generate_visualizations else _cached(request)
        if answer is None:
            # in a worker under GAIA_CALL_MEMORY_MB: the cache above lives in this process, the parse not
            answer = await run_bounded(_report, guard, path, shown, file_path, request)
            if not generate_visualizations:
                _remember(request, answer)
    text, data = answer
    return with_data(page(text, start_index, max_length), data)


@dataclass(frozen=True)
class _Request:
    """Everything a report depends on: the file's identity and version, and the arguments."""

    path: str
    """The name as the agent gave it and the file's identity (device and inode)."""
    size: int
    mtime_ns: int
    workspace: str
    output_format: str
    max_rows: int | None
    statistics: bool
    visualize: bool
    encoding: str | None
    delimiter: str | None
    has_header: bool


def _cached(request: _Request) -> tuple[str, dict[str, Any]] | None:
    with _cache_lock:
        answer = _cache.get(request)
        if answer is not None:
            _cache.move_to_end(request)
        return answer


def _remember(request: _Request, answer: tuple[str, dict[str, Any]]) -> None:
    with _cache_lock:
        _cache[request] = answer
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)


def _report(
    guard: PathGuard, path: Path, shown: str, raw: str, request: _Request
) -> tuple[str, dict[str, Any]]:
    """The report as text in the asked format, and as data (the json format's object). `path` reads
    the file; `shown` is its name as the agent sees it."""
    named = PurePosixPath(shown)
    layout = detect(path, raw, request.encoding, request.delimiter)
    # Charts need the statistics pass even when the report leaves statistics out.
    result = profile(
        path,
        named.name,
        layout,
        request.max_rows,
        request.has_header,
        request.statistics or request.visualize,
    )
    written = []
    if request.visualize:
        folder = guard.resolve(f"csv_visualizations/{named.stem}", write=True)
        written = [guard.display(p) for p in charts.draw(result, folder)]
    built = report.build(
        result, layout, name=named.name, shown=shown, size=request.size,
        max_rows=request.max_rows, charts=written, statistics=request.statistics,
    )  # fmt: skip
    if request.visualize and not written:
        built["notes"].append("No chart was drawn: the file has no numeric or few-valued text columns.")
    as_json = report.render(built, "json")
    text = as_json if request.output_format == "json" else report.render(built, request.output_format)
    return text, json.loads(as_json)


@server.tool(annotations=hints("List supported CSV formats", read_only=True, open_world=False))
def list_supported_formats() -> str:
    """List all supported CSV formats for extraction."""
    return "\n".join(
        [
            "# Supported formats",
            "",
            "- .csv: comma-separated values (also ; and | separated: the delimiter is detected)",
            "- .tsv / .tab: tab-separated values",
            "- .txt or any other name holding delimited text; pass delimiter= when detection guesses wrong",
            "",
            "Encodings: UTF-8/16/32 (with or without BOM) and legacy code pages (cp1252, latin-1, GBK, ...), "
            "detected automatically or given with encoding=.",
            "Output formats: markdown (default), json, text. Files of any size are streamed: every row is "
            "counted; quartiles of very large files are estimated from a uniform sample.",
            "Not CSV: Excel workbooks (.xlsx, .xls) belong to the excel server, Parquet is not supported.",
        ]
    )


def main() -> None:
    serve(server)
