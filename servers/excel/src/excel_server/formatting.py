"""How cells look: fonts, fills, borders, number formats, conditional formats, merging."""

from __future__ import annotations

from typing import Annotated, Any

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from pydantic import Field

from . import cells, editing, files
from .tool import CellAddress, FilePath, SheetName, changes


@tool(changes("Format range", destructive=False, idempotent=True))
def format_range(
    filepath: FilePath,
    sheet_name: SheetName,
    start_cell: CellAddress,
    ctx: Context,
    end_cell: Annotated[
        str | None, Field(description="Last cell of the range (default: start_cell alone)")
    ] = None,
    bold: bool = False,
    italic: bool = False,
    underline: bool = False,
    font_size: int | None = None,
    font_color: Annotated[
        str | None, Field(description="Hex like FF0000 or #FF0000, or a name like red")
    ] = None,
    bg_color: Annotated[str | None, Field(description="Fill color: hex or a name")] = None,
    border_style: Annotated[
        str | None, Field(description="thin, medium, thick, dashed, dotted, double, ...")
    ] = None,
    border_color: str | None = None,
    number_format: Annotated[
        str | None, Field(description="Excel number format, e.g. 0.00, 0%, yyyy-mm-dd")
    ] = None,
    alignment: Annotated[
        str | None, Field(description="left, center, right, justify, top, middle or bottom")
    ] = None,
    wrap_text: bool = False,
    merge_cells: bool = False,
    protection: Annotated[
        dict[str, Any] | None, Field(description='{"locked": bool, "hidden": bool}')
    ] = None,
    conditional_format: Annotated[
        dict[str, Any] | None,
        Field(
            description='{"type": "cell_is"|"formula"|"color_scale"|"data_bar", "params": {...}}, e.g. '
            '{"type": "cell_is", "params": {"operator": "greaterThan", "formula": ["100"], "bg_color": "FFC7CE"}}'
        ),
    ] = None,
) -> str:
    """Apply formatting to a range of cells."""
    area = cells.area(start_cell, end_cell)
    options = {
        "bold": bold, "italic": italic, "underline": underline, "font_size": font_size, "font_color": font_color,
        "bg_color": bg_color, "border_style": border_style, "border_color": border_color,
        "number_format": number_format, "alignment": alignment, "wrap_text": wrap_text,
        "merge_cells": merge_cells, "protection": protection, "conditional_format": conditional_format,
    }  # fmt: skip
    with files.editing(session_of(ctx).paths, filepath) as book:
        done = editing.format_range(cells.sheet(book, sheet_name), area, options)
    if not done:
        return (
            f"Nothing to change: no formatting option was given for {sheet_name}!{cells.range_text(*area)}."
        )
    return f"Formatted {sheet_name}!{cells.range_text(*area)}: {', '.join(done)}."


@tool(changes("Merge cells", destructive=True, idempotent=True))
def merge_cells(
    filepath: FilePath, sheet_name: SheetName, start_cell: CellAddress, end_cell: CellAddress, ctx: Context
) -> str:
    """Merge a range of cells."""
    area = cells.area(start_cell, end_cell)
    with files.editing(session_of(ctx).paths, filepath) as book:
        cells.sheet(book, sheet_name).merge_cells(cells.range_text(*area))
    return f"Merged {sheet_name}!{cells.range_text(*area)}."


@tool(changes("Unmerge cells", destructive=False, idempotent=False))
def unmerge_cells(
    filepath: FilePath, sheet_name: SheetName, start_cell: CellAddress, end_cell: CellAddress, ctx: Context
) -> str:
    """Unmerge a range of cells."""
    area = cells.area(start_cell, end_cell)
    text = cells.range_text(*area)
    with files.editing(session_of(ctx).paths, filepath) as book:
        sheet = cells.sheet(book, sheet_name)
        if text not in {str(r) for r in sheet.merged_cells.ranges}:
            merged = ", ".join(str(r) for r in sheet.merged_cells.ranges) or "none"
            raise ToolFailure(f"{text} is not a merged range of '{sheet_name}'; its merged ranges: {merged}.")
        sheet.unmerge_cells(text)
    return f"Unmerged {sheet_name}!{text}."
