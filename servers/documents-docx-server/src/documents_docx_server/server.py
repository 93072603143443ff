"""documents-docx-server: the content of a Word document, in reading order.

DOCX is read with python-docx; a legacy .doc is first converted to DOCX by headless LibreOffice
in a subprocess with a deadline (gaia_kit.documents.convert). Images are saved into the session workspace.
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
from .reading import extract, open_document

server = KitServer(
    "documents-docx-server",
    bounded_calls=True,  # each call in a worker under GAIA_CALL_MEMORY_MB (gaia_kit.core.bounded)
    instructions=(
        "Extracts Word documents (DOCX, and DOC through LibreOffice): headings, paragraphs, lists, "
        "tables, headers/footers, footnotes, comments and images. Long results come in pages: follow "
        "the start_index hint at the end of a result."
    ),
)


@server.tool(
    annotations=hints(
        # embedded images are saved under docx_images/<file>/; the same call saves the same files
        "Extract DOCX content",
        read_only=False,
        destructive=False,
        idempotent=True,
        open_world=False,
    )
)
def extract_docx_content(
    file_path: Annotated[
        str, Field(description="Path to the DOCX/DOC document file to extract content from")
    ],
    ctx: Context,
    output_format: OutputFormat = "markdown",
    extract_images: Annotated[
        bool, Field(description="Whether to extract and save embedded images and media")
    ] = True,
    extract_tables: Annotated[bool, Field(description="Whether to extract table content")] = True,
    extract_headers_footers: Annotated[
        bool, Field(description="Whether to extract headers and footers")
    ] = True,
    include_structure: Annotated[
        bool, Field(description="Whether to include document structure information in output")
    ] = True,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Extract content from DOCX/DOC documents using python-docx.

    This tool provides comprehensive DOCX/DOC document content extraction with support for:
    - DOCX and DOC files (DOC is converted with LibreOffice first)
    - Text extraction with style preservation (heading levels, lists, bold/italic, links)
    - Table extraction and formatting (markdown tables)
    - Headers and footers extraction, footnotes and comments
    - Embedded images, saved into the workspace with their paths listed
    - Multiple output formats (markdown, json, text)
    - Document structure analysis
    Long content is returned in pages; the result says which start_index reads on.
    """
    guard = session_of(ctx).paths
    shown = guard.shown(file_path)
    named = PurePosixPath(shown)
    with (
        guard.local_path(file_path) as path,  # the file opened beneath its root, read by descriptor
        readable_copy(path, file_path, "docx", "legacy Word (.doc)") as (readable, notes),
    ):
        document = open_document(readable, file_path)
        result = extract(
            document, guard, named.stem,
            images=extract_images, tables=extract_tables, headers=extract_headers_footers,
        )  # fmt: skip
    build = {"markdown": render.as_markdown, "json": render.as_json, "text": render.as_text}[output_format]
    return page(build(named.name, shown, result, include_structure, notes), start_index, max_length)


@server.tool(annotations=hints("List supported document formats", read_only=True, open_world=False))
def list_supported_formats() -> str:
    """List all supported document formats for extraction."""
    legacy = "available" if soffice_binary() else "not available here (install libreoffice-writer-nogui)"
    return "\n".join(
        [
            "# Supported formats",
            "",
            "- .docx, .docm, .dotx: Word documents (Office Open XML), read with python-docx",
            f"- .doc, .dot: legacy Word documents, converted with headless LibreOffice first ({legacy})",
            "",
            "Extracted: headings with their levels, paragraphs (bold, italic, links), bulleted and numbered "
            "lists, tables as markdown tables, headers and footers, footnotes, comments, and images "
            "(saved into the workspace under docx_images/<file name>/, paths listed).",
            "Output formats: markdown (default), json, text. Long content is paged with start_index.",
            "Not here: PDF (documents-pdf-server), PowerPoint (documents-pptx-server), Excel (excel).",
        ]
    )


def _check() -> dict:
    if soffice_binary():
        return {}
    return {"missing": ["soffice (apt-get install libreoffice-writer-nogui): needed for legacy .doc only"]}


def main() -> None:
    serve(server, check=_check)
