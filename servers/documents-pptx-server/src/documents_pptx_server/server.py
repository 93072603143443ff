"""documents-pptx-server: the content of a presentation, slide by slide.

PPTX is read with python-pptx; a legacy .ppt is first converted to PPTX by headless LibreOffice in
a subprocess with a deadline (gaia_kit.documents.convert). Images are saved into the session workspace.
"""

from pathlib import PurePosixPath
from typing import Annotated

from gaia_kit import KitServer, page, serve, session_of
from gaia_kit.core.args import MaxLength, OutputFormat, StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.documents.convert import soffice_binary
from gaia_kit.documents.office import readable_copy
from mcp.server.mcpserver import Context
from pydantic import Field

from . import render
from .reading import extract, open_presentation

server = KitServer(
    "documents-pptx-server",
    bounded_calls=True,  # each call in a worker under GAIA_CALL_MEMORY_MB (gaia_kit.core.bounded)
    instructions=(
        "Extracts PowerPoint presentations (PPTX, and PPT through LibreOffice) slide by slide: titles, "
        "text in reading order, tables, charts, speaker notes and images. Long results come in pages: "
        "follow the start_index hint at the end of a result."
    ),
)


@server.tool(
    annotations=hints(
        # slide images are saved into the workspace; the same call saves the same files
        "Extract PPTX content",
        read_only=False,
        destructive=False,
        idempotent=True,
        open_world=False,
    )
)
def extract_pptx_content(
    file_path: Annotated[
        str, Field(description="Path to the PPTX/PPT presentation file to extract content from")
    ],
    ctx: Context,
    output_format: OutputFormat = "markdown",
    extract_images: Annotated[
        bool, Field(description="Whether to extract and save images from the presentation")
    ] = True,
    extract_notes: Annotated[bool, Field(description="Whether to extract speaker notes")] = True,
    include_structure: Annotated[
        bool, Field(description="Whether to include presentation structure information")
    ] = True,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Extract content from PPTX/PPT presentations using python-pptx.

    This tool provides comprehensive PowerPoint presentation content extraction with support for:
    - PPTX and PPT files (PPT is converted with LibreOffice first)
    - Text extraction from slides, titles, and content, in reading order, with slide numbers
    - Tables as markdown tables, charts with their series values
    - Speaker notes extraction
    - Image extraction (saved into the workspace, paths listed)
    - Presentation structure analysis
    - Multiple output formats (markdown, json, text)
    Long content is returned in pages; the result says which start_index reads on.
    """
    guard = session_of(ctx).paths
    shown = guard.shown(file_path)
    named = PurePosixPath(shown)
    with (
        guard.local_path(file_path) as path,  # the file opened beneath its root, read by descriptor
        readable_copy(path, file_path, "pptx", "legacy PowerPoint (.ppt)") as (readable, notes),
    ):
        presentation = open_presentation(readable, file_path)
        result = extract(presentation, guard, named.stem, images=extract_images, notes=extract_notes)
    build = {"markdown": render.as_markdown, "json": render.as_json, "text": render.as_text}[output_format]
    return page(build(named.name, shown, result, include_structure, notes), start_index, max_length)


@server.tool(annotations=hints("List supported presentation formats", read_only=True, open_world=False))
def list_supported_formats() -> str:
    """List all supported presentation formats for extraction."""
    legacy = "available" if soffice_binary() else "not available here (install libreoffice-impress-nogui)"
    return "\n".join(
        [
            "# Supported formats",
            "",
            "- .pptx, .pptm, .ppsx, .potx: PowerPoint presentations (Office Open XML), read with python-pptx",
            f"- .ppt, .pps, .pot: legacy PowerPoint, converted with headless LibreOffice first ({legacy})",
            "",
            "Extracted per slide (numbered from 1): the title, text frames in reading order (top to "
            "bottom, left to right) with bullet levels, tables as markdown tables, charts with their "
            "series, speaker notes, and images (saved into the workspace under pptx_images/<file name>/).",
            "Output formats: markdown (default), json, text. Long content is paged with start_index.",
            "Not here: PDF (documents-pdf-server), Word (documents-docx-server), Excel (excel).",
        ]
    )


def _check() -> dict:
    if soffice_binary():
        return {}
    return {"missing": ["soffice (apt-get install libreoffice-impress-nogui): needed for legacy .ppt only"]}


def main() -> None:
    serve(server, check=_check)
