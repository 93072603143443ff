"""Reading workbooks: cells with their computed values, page by page; metadata, merged cells,
validation rules and range checks.

These tools count as read-only: for an .xls or .csv they leave a derived .xlsx copy in the
workspace, a conversion cache that changes nothing the agent made.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from gaia_kit import session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from . import cells, files, reading
from .tool import CellAddress, FilePath, SheetName


class MergedCells(BaseModel):
    sheet_name: str
    merged_ranges: list[str]


class RangeCheck(BaseModel):
    range: str
    valid: bool
    data_range: str | None
    inside_data: bool


@tool(hints("Read data from Excel", read_only=True, open_world=False), output=dict[str, Any])
def read_data_from_excel(
    filepath: FilePath,
    sheet_name: SheetName,
    ctx: Context,
    start_cell: Annotated[
        str, Field(description="Starting cell (default A1); pass next_start_cell to read on")
    ] = "A1",
    end_cell: Annotated[
        str | None,
        Field(description="Ending cell (optional, auto-expands to the end of the data if not provided)"),
    ] = None,
    preview_only: Annotated[bool, Field(description="Whether to return only the first 10 rows")] = False,
    include_formulas: Annotated[
        bool, Field(description="Also return each formula cell's formula text next to its computed value")
    ] = False,
    max_rows: Annotated[
        int | None, Field(ge=1, description="Read at most this many rows (non-empty rows)")
    ] = None,
    layout: Annotated[
        Literal["cells", "rows"] | None,
        Field(
            description="cells: one object per cell (address, value, row, column); rows: a 2-D array of "
            "values over `range`, about a quarter of the size. Default: the server's GAIA_EXCEL_READ_LAYOUT (cells)"
        ),
    ] = None,
) -> CallToolResult:
    """Read data from Excel worksheet with cell metadata including validation rules.

    Args:
        filepath: Path to Excel file (.xlsx, .xlsm; .xls and .csv are converted first)
        sheet_name: Name of worksheet
        start_cell: Starting cell (default A1)
        end_cell: Ending cell (optional, auto-expands if not provided)
        preview_only: Whether to return preview only (the first 10 rows)

    Returns:
    JSON string containing structured cell data with validation metadata.
    Each cell includes: address, value (the computed value, never formula text), row, column,
    and validation info (if any). Large sheets come in pages: the answer names next_start_cell.
    """
    guard = session_of(ctx).paths
    layout = layout or reading.default_layout()
    with files.readable(guard, filepath) as found:
        result = reading.read_cells(
            found.path, filepath, sheet_name, start_cell, end_cell, preview_only, include_formulas, max_rows,
            layout, found.converted,
        )  # fmt: skip
        reading.attach_validations(result, found.path, filepath, sheet_name)
    text = reading.as_json(result)
    return with_data(text, json.loads(text))


@tool(hints("Get workbook metadata", read_only=True, open_world=False), output=dict[str, Any])
def get_workbook_metadata(
    filepath: FilePath,
    ctx: Context,
    include_ranges: Annotated[
        bool, Field(description="Include each sheet's used range and defined names")
    ] = False,
) -> CallToolResult:
    """Get metadata about workbook including sheets, ranges, etc."""
    guard = session_of(ctx).paths
    with files.readable(guard, filepath) as found:
        text = reading.metadata(found.path, filepath, include_ranges, found.converted)
    return with_data(text, json.loads(text))


@tool(hints("Get merged cells", read_only=True, open_world=False), output=MergedCells)
def get_merged_cells(filepath: FilePath, sheet_name: SheetName, ctx: Context) -> CallToolResult:
    """Get merged cells in a worksheet."""
    with files.readable(session_of(ctx).paths, filepath) as found:
        merged = reading.sheet_extras(found.path, filepath, sheet_name)["merged"]
    data = MergedCells(sheet_name=sheet_name, merged_ranges=merged)
    if not merged:
        return with_data(f"Sheet '{sheet_name}' has no merged cells.", data)
    return with_data(json.dumps({"sheet_name": sheet_name, "merged_ranges": merged}, indent=1), data)


@tool(hints("Get data validation info", read_only=True, open_world=False), output=dict[str, Any])
def get_data_validation_info(filepath: FilePath, sheet_name: SheetName, ctx: Context) -> CallToolResult:
    """Get all data validation rules in a worksheet.

    This tool helps identify which cell ranges have validation rules and what types of validation are applied.

    Args:
        filepath: Path to Excel file
        sheet_name: Name of worksheet

    Returns:
        JSON string containing all validation rules in the worksheet
    """
    with files.readable(session_of(ctx).paths, filepath) as found:
        rules = reading.sheet_extras(found.path, filepath, sheet_name)["validations"]
    data = {"sheet_name": sheet_name, "validation_rules": rules}
    if not rules:
        return with_data(f"Sheet '{sheet_name}' has no data validation rules.", data)
    text = json.dumps(data, ensure_ascii=False, indent=1)
    return with_data(text, json.loads(text))


@tool(hints("Validate Excel range", read_only=True, open_world=False), output=RangeCheck)
def validate_excel_range(
    filepath: FilePath,
    sheet_name: SheetName,
    start_cell: CellAddress,
    ctx: Context,
    end_cell: Annotated[str | None, Field(description="Last cell of the range (optional)")] = None,
) -> CallToolResult:
    """Validate if a range exists and is properly formatted."""
    area = cells.area(start_cell, end_cell)
    with files.readable(session_of(ctx).paths, filepath) as found:
        book = files.open_for_read(found.path, filepath)
        try:
            sheet = cells.sheet(book, sheet_name)
            used = reading.declared_dimension(sheet)
            if used is None:
                sheet.calculate_dimension(force=True)  # none declared: count the rows
                used = reading.declared_dimension(sheet)
        finally:
            book.close()
        empty = used == "A1:A1" and not _has_data(found.path, filepath, sheet_name)
    text = cells.range_text(*area)
    if used is None or empty:
        return with_data(
            f"Range {text} is valid, but sheet '{sheet_name}' holds no data yet.",
            RangeCheck(range=text, valid=True, data_range=None, inside_data=False),
        )
    data = cells.area(used)
    inside = data[0] <= area[0] and data[1] <= area[1] and area[2] <= data[2] and area[3] <= data[3]
    where = "inside" if inside else "partly or wholly outside"
    return with_data(
        f"Range {text} is valid and {where} the sheet's data range {used}.",
        RangeCheck(range=text, valid=True, data_range=used, inside_data=inside),
    )


def _has_data(path: Any, raw: str, sheet_name: str) -> bool:
    book = files.open_for_read(path, raw)
    try:
        return any(
            v is not None for row in book[sheet_name].iter_rows(max_row=1, values_only=True) for v in row
        )
    finally:
        book.close()
