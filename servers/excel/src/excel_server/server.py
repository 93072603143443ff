"""excel: read, write and shape Excel workbooks with openpyxl.

Reads stream (read_only mode) and are paged, so any size of sheet is safe to open. Every write
loads the workbook under a per-file lock and saves it atomically (temp file + rename). Formulas
are vetted before they are written (formulas.py) and computed when read (engine.py). .xls and
.csv files are read through an .xlsx conversion in the workspace.
"""

from __future__ import annotations

import json
import threading
from typing import Annotated, Any, Literal

from gaia_kit import KitServer, ToolFailure, serve, session_of
from gaia_kit.core.bounded import fork_gate
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from . import cells, editing, engine, files, formulas, reading
from .compute import compute, describe, evaluator, formula_text

server = KitServer(
    "excel",
    bounded_calls=True,  # each call in a worker under GAIA_CALL_MEMORY_MB (gaia_kit.core.bounded)
    instructions=(
        "Excel workbooks (.xlsx, .xlsm; .xls and .csv are read through a conversion): read cells with "
        "computed values, page by page; write data and formulas; format, chart, pivot and restructure sheets. "
        "Paths are relative to the session workspace; the dataset is read-only."
    ),
)

FilePath = Annotated[
    str, Field(description="Path to the Excel file (relative to the workspace, or absolute inside it)")
]
SheetName = Annotated[str, Field(description="Name of the worksheet")]
CellAddress = Annotated[str, Field(description="Cell address such as A1")]
MAX_SHOWN = 20
WARM_AFTER_S = 20.0


def changes(title: str, *, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """The hints of a tool that edits a workbook in the workspace (and reaches nothing outside it)."""
    return hints(title, read_only=False, destructive=destructive, idempotent=idempotent, open_world=False)


# Reading tools count as read-only: for an .xls or .csv they leave a derived .xlsx copy in the
# workspace, a conversion cache that changes nothing the agent made.
class MergedCells(BaseModel):
    sheet_name: str
    merged_ranges: list[str]


class RangeCheck(BaseModel):
    range: str
    valid: bool
    data_range: str | None
    inside_data: bool


# ----------------------------------------------------------------------------- formulas


@server.tool(annotations=changes("Apply formula", destructive=True, idempotent=True))
def apply_formula(
    filepath: FilePath,
    sheet_name: SheetName,
    cell: Annotated[str, Field(description="Cell to put the formula in, such as C10")],
    formula: Annotated[
        str, Field(description="Excel formula, with or without the leading '=', e.g. =SUM(A1:A9)")
    ],
    ctx: Context,
) -> str:
    """Apply Excel formula to cell.
    Excel formula will write to cell with verification: the syntax is checked, functions that reach
    outside the workbook (WEBSERVICE, HYPERLINK, RTD, INDIRECT, DGET) are refused, and the computed value is returned.
    """
    row, col = cells.cell(cell)
    with files.editing(session_of(ctx).paths, filepath) as book:
        sheet = cells.sheet(book, sheet_name)
        formulas.check(formula, book.sheetnames)
        text = "=" + formula.strip().lstrip("=")
        sheet.cell(row, col).value = text
        value, reason = compute(evaluator(book), sheet_name, row=row, col=col)
    return (
        f"Applied {text} to {sheet_name}!{cells.range_text(row, col, row, col)}; {describe(value, reason)}."
    )


@server.tool(annotations=hints("Validate formula syntax", read_only=True, open_world=False))
def validate_formula_syntax(
    filepath: FilePath,
    sheet_name: SheetName,
    cell: CellAddress,
    formula: Annotated[str, Field(description="Excel formula to check, e.g. =AVERAGE(B2:B20)")],
    ctx: Context,
) -> str:
    """Validate Excel formula syntax without applying it. Also says what value it would compute."""
    row, col = cells.cell(cell)
    with files.readable(session_of(ctx).paths, filepath) as found:
        book = files.open_for_read(found.path, filepath)
        try:
            cells.sheet(book, sheet_name)
            names = list(book.sheetnames)
        finally:
            book.close()
        formulas.check(formula, names)
        text = "=" + formula.strip().lstrip("=")
        try:
            engine = evaluator(
                files.open_full(found.path, filepath), files.open_full(found.path, filepath, data_only=True)
            )
            value, reason = compute(engine, sheet_name, formula=text, row=row, col=col)
        except ToolFailure as exc:
            value, reason = None, str(exc)
    return (
        f"{text} is valid for {sheet_name}!{cells.range_text(row, col, row, col)}; {describe(value, reason)}."
    )


# ----------------------------------------------------------------------------- reading


@server.tool(
    annotations=hints("Read data from Excel", read_only=True, open_world=False), output=dict[str, Any]
)
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


@server.tool(
    annotations=hints("Get workbook metadata", read_only=True, open_world=False), output=dict[str, Any]
)
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


@server.tool(annotations=hints("Get merged cells", read_only=True, open_world=False), output=MergedCells)
def get_merged_cells(filepath: FilePath, sheet_name: SheetName, ctx: Context) -> CallToolResult:
    """Get merged cells in a worksheet."""
    with files.readable(session_of(ctx).paths, filepath) as found:
        merged = reading.sheet_extras(found.path, filepath, sheet_name)["merged"]
    data = MergedCells(sheet_name=sheet_name, merged_ranges=merged)
    if not merged:
        return with_data(f"Sheet '{sheet_name}' has no merged cells.", data)
    return with_data(json.dumps({"sheet_name": sheet_name, "merged_ranges": merged}, indent=1), data)


@server.tool(
    annotations=hints("Get data validation info", read_only=True, open_world=False), output=dict[str, Any]
)
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


@server.tool(annotations=hints("Validate Excel range", read_only=True, open_world=False), output=RangeCheck)
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
            used = reading._dimension(sheet)  # the size the file declares, read from its head
            if used is None:
                sheet.calculate_dimension(force=True)  # none declared: count the rows
                used = reading._dimension(sheet)
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


# ----------------------------------------------------------------------------- writing


# What a JSON cell can hold; typed so strict schema converters accept the rows (docs/clients.md).
CellValue = str | int | float | bool | None


@server.tool(annotations=changes("Write data to Excel", destructive=True, idempotent=True))
def write_data_to_excel(
    filepath: FilePath,
    sheet_name: Annotated[str, Field(description="Name of worksheet to write to (created if missing)")],
    data: Annotated[
        list[list[CellValue]],
        Field(
            description="List of lists containing data to write to the worksheet, sublists are assumed to be rows"
        ),
    ],
    ctx: Context,
    start_cell: Annotated[str, Field(description='Cell to start writing to, default is "A1"')] = "A1",
) -> str:
    """Write data to Excel worksheet.
    Text starting with '=' is written as a formula; formulas are checked (syntax, and functions that
    reach outside the workbook are refused) and their computed values are reported.
    The workbook is created if it does not exist.

    PARAMETERS:
    filepath: Path to Excel file
    sheet_name: Name of worksheet to write to
    data: List of lists containing data to write to the worksheet, sublists are assumed to be rows
    start_cell: Cell to start writing to, default is "A1"
    """
    if not data or not any(data):
        raise ToolFailure(
            'data is empty; pass rows as a list of lists, e.g. [["name", "qty"], ["apple", 3]].'
        )
    row0, col0 = cells.cell(start_cell)
    width = max(len(row) for row in data)
    if row0 + len(data) - 1 > cells.MAX_ROW or col0 + width - 1 > cells.MAX_COL:
        raise ToolFailure("The data runs past the sheet's last row or column; start higher or write less.")
    with files.editing(session_of(ctx).paths, filepath, create=True) as book:
        fresh = (
            book.sheetnames == ["Sheet"] and book["Sheet"].max_row == 1 and book["Sheet"]["A1"].value is None
        )
        if sheet_name not in book.sheetnames:
            sheet = book.create_sheet(cells.check_sheet_name(sheet_name))
            if fresh:
                del book["Sheet"]  # a new workbook's placeholder sheet
        else:
            sheet = book[sheet_name]
        written_formulas = []
        for r, values in enumerate(data):
            for c, value in enumerate(values):
                value = cells.writable(value)
                if formula_text(value):
                    formulas.check(value, book.sheetnames)
                    written_formulas.append((row0 + r, col0 + c))
                sheet.cell(row0 + r, col0 + c).value = value
        engine = evaluator(book) if written_formulas else None
        computed = [
            (cells.range_text(r, c, r, c), *compute(engine, sheet_name, row=r, col=c))
            for r, c in written_formulas[:MAX_SHOWN]
        ]
    span = cells.range_text(row0, col0, row0 + len(data) - 1, col0 + width - 1)
    lines = [f"Wrote {len(data)} row(s) x {width} column(s) to {sheet_name}!{span} in {filepath}."]
    for address, value, reason in computed:
        lines.append(f"- {address}: {describe(value, reason)}")
    if len(written_formulas) > MAX_SHOWN:
        lines.append(
            f"({len(written_formulas) - MAX_SHOWN} more formulas; read them with read_data_from_excel.)"
        )
    return "\n".join(lines)


@server.tool(annotations=changes("Create workbook", destructive=False, idempotent=False))
def create_workbook(filepath: FilePath, ctx: Context) -> str:
    """Create new Excel workbook (with one empty sheet named Sheet)."""
    guard = session_of(ctx).paths
    if guard.resolve(filepath, write=True).exists():
        raise ToolFailure(f"{filepath} already exists; pick another name, or edit it with the other tools.")
    with files.editing(guard, filepath, create=True):
        pass
    return f"Created workbook {filepath} with sheet 'Sheet'."


@server.tool(annotations=changes("Create worksheet", destructive=False, idempotent=False))
def create_worksheet(filepath: FilePath, sheet_name: SheetName, ctx: Context) -> str:
    """Create new worksheet in workbook."""
    with files.editing(session_of(ctx).paths, filepath) as book:
        if sheet_name in book.sheetnames:
            raise ToolFailure(f"Sheet '{sheet_name}' already exists in {filepath}.")
        book.create_sheet(cells.check_sheet_name(sheet_name))
    return f"Created sheet '{sheet_name}' in {filepath}."


@server.tool(annotations=changes("Copy worksheet", destructive=False, idempotent=False))
def copy_worksheet(
    filepath: FilePath,
    source_sheet: Annotated[str, Field(description="Sheet to copy")],
    target_sheet: Annotated[str, Field(description="Name of the copy")],
    ctx: Context,
) -> str:
    """Copy worksheet within workbook."""
    with files.editing(session_of(ctx).paths, filepath) as book:
        source = cells.sheet(book, source_sheet)
        if target_sheet in book.sheetnames:
            raise ToolFailure(
                f"Sheet '{target_sheet}' already exists in {filepath}; choose another target_sheet."
            )
        book.copy_worksheet(source).title = cells.check_sheet_name(target_sheet)
    return f"Copied sheet '{source_sheet}' to '{target_sheet}' in {filepath}."


@server.tool(annotations=changes("Delete worksheet", destructive=True, idempotent=False))
def delete_worksheet(filepath: FilePath, sheet_name: SheetName, ctx: Context) -> str:
    """Delete worksheet from workbook."""
    with files.editing(session_of(ctx).paths, filepath) as book:
        cells.sheet(book, sheet_name)
        if len(book.sheetnames) == 1:
            raise ToolFailure(
                f"'{sheet_name}' is the only sheet of {filepath}; a workbook needs at least one."
            )
        del book[sheet_name]
    return f"Deleted sheet '{sheet_name}' from {filepath}."


@server.tool(annotations=changes("Rename worksheet", destructive=False, idempotent=False))
def rename_worksheet(
    filepath: FilePath,
    old_name: Annotated[str, Field(description="Current sheet name")],
    new_name: Annotated[str, Field(description="New sheet name")],
    ctx: Context,
) -> str:
    """Rename worksheet in workbook."""
    with files.editing(session_of(ctx).paths, filepath) as book:
        sheet = cells.sheet(book, old_name)
        if new_name in book.sheetnames:
            raise ToolFailure(f"Sheet '{new_name}' already exists in {filepath}.")
        sheet.title = cells.check_sheet_name(new_name)
    return f"Renamed sheet '{old_name}' to '{new_name}' in {filepath}."


# ----------------------------------------------------------------------------- shaping


@server.tool(annotations=changes("Format range", destructive=False, idempotent=True))
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


@server.tool(annotations=changes("Merge cells", destructive=True, idempotent=True))
def merge_cells(
    filepath: FilePath, sheet_name: SheetName, start_cell: CellAddress, end_cell: CellAddress, ctx: Context
) -> str:
    """Merge a range of cells."""
    area = cells.area(start_cell, end_cell)
    with files.editing(session_of(ctx).paths, filepath) as book:
        cells.sheet(book, sheet_name).merge_cells(cells.range_text(*area))
    return f"Merged {sheet_name}!{cells.range_text(*area)}."


@server.tool(annotations=changes("Unmerge cells", destructive=False, idempotent=False))
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


@server.tool(annotations=changes("Create table", destructive=False, idempotent=False))
def create_table(
    filepath: FilePath,
    sheet_name: SheetName,
    data_range: Annotated[str, Field(description="Range with a header row, e.g. A1:D20")],
    ctx: Context,
    table_name: Annotated[str | None, Field(description="Table name (default Table1, Table2, ...)")] = None,
    table_style: Annotated[str, Field(description="Excel table style")] = "TableStyleMedium9",
) -> str:
    """Creates a native Excel table from a specified range of data."""
    area = cells.data_range(data_range)
    with files.editing(session_of(ctx).paths, filepath) as book:
        name = editing.create_table(cells.sheet(book, sheet_name), area, table_name, table_style)
    return f"Created table '{name}' over {sheet_name}!{cells.range_text(*area)} with style {table_style}."


@server.tool(annotations=changes("Create chart", destructive=False, idempotent=False))
def create_chart(
    filepath: FilePath,
    sheet_name: SheetName,
    data_range: Annotated[
        str, Field(description="Header row plus data; first column holds categories (x values)")
    ],
    chart_type: Annotated[str, Field(description="bar, column, line, pie, scatter or area")],
    target_cell: Annotated[str, Field(description="Cell where the chart's top-left corner goes")],
    ctx: Context,
    title: str = "",
    x_axis: str = "",
    y_axis: str = "",
) -> str:
    """Create chart in worksheet."""
    area = cells.data_range(data_range)
    with files.editing(session_of(ctx).paths, filepath) as book:
        series = editing.create_chart(
            cells.sheet(book, sheet_name), area, chart_type, target_cell, title, x_axis, y_axis
        )
    return f"Created a {chart_type} chart ({series}) from {sheet_name}!{cells.range_text(*area)} at {target_cell}."


@server.tool(annotations=changes("Create pivot table", destructive=False, idempotent=False))
def create_pivot_table(
    filepath: FilePath,
    sheet_name: SheetName,
    data_range: Annotated[str, Field(description="Range with a header row, e.g. A1:E200")],
    rows: Annotated[list[str], Field(description="Header names to group rows by")],
    values: Annotated[list[str], Field(description="Header names to aggregate")],
    ctx: Context,
    columns: Annotated[list[str] | None, Field(description="Header names to spread across columns")] = None,
    agg_func: Annotated[
        str, Field(description="mean (default), average, sum, count, min, max or median")
    ] = "mean",
) -> str:
    """Create pivot table in worksheet: the aggregated table is written to a new sheet <sheet>_pivot."""
    area = cells.data_range(data_range)
    with files.editing(session_of(ctx).paths, filepath) as book:
        name, table = editing.pivot(cells.sheet(book, sheet_name), area, rows, values, columns, agg_func)
    preview = "\n".join(
        " | ".join("" if v is None else str(v) for v in line) for line in table[: MAX_SHOWN + 1]
    )
    more = f"\n({len(table) - MAX_SHOWN - 1} more rows in the sheet.)" if len(table) > MAX_SHOWN + 1 else ""
    return f"Created pivot table in sheet '{name}' ({len(table) - 1} group(s), {agg_func}):\n{preview}{more}"


@server.tool(annotations=changes("Copy range", destructive=True, idempotent=True))
def copy_range(
    filepath: FilePath,
    sheet_name: SheetName,
    source_start: CellAddress,
    source_end: CellAddress,
    target_start: CellAddress,
    ctx: Context,
    target_sheet: Annotated[
        str | None, Field(description="Sheet to copy into (default: the same sheet)")
    ] = None,
) -> str:
    """Copy a range of cells to another location (values, styles, and formulas with their references moved)."""
    area = cells.area(source_start, source_end)
    start = cells.cell(target_start)
    with files.editing(session_of(ctx).paths, filepath) as book:
        source = cells.sheet(book, sheet_name)
        target = cells.sheet(book, target_sheet) if target_sheet else source
        placed = editing.copy_range(source, area, target, start)
    return f"Copied {sheet_name}!{cells.range_text(*area)} to {target.title}!{placed}."


@server.tool(annotations=changes("Delete range", destructive=True, idempotent=False))
def delete_range(
    filepath: FilePath,
    sheet_name: SheetName,
    start_cell: CellAddress,
    end_cell: CellAddress,
    ctx: Context,
    shift_direction: Annotated[str, Field(description="up (default) or left")] = "up",
) -> str:
    """Delete a range of cells and shift remaining cells."""
    area = cells.area(start_cell, end_cell)
    with files.editing(session_of(ctx).paths, filepath) as book:
        editing.delete_range(cells.sheet(book, sheet_name), area, shift_direction)
    return f"Deleted {sheet_name}!{cells.range_text(*area)} and shifted the cells below/right {shift_direction.strip().lower()}."


@server.tool(annotations=changes("Insert rows", destructive=False, idempotent=False))
def insert_rows(
    filepath: FilePath, sheet_name: SheetName, start_row: int, ctx: Context, count: int = 1
) -> str:
    """Insert one or more rows starting at the specified row."""
    return _rows_or_columns(ctx, filepath, sheet_name, "insert_rows", start_row, count)


@server.tool(annotations=changes("Insert columns", destructive=False, idempotent=False))
def insert_columns(
    filepath: FilePath, sheet_name: SheetName, start_col: int, ctx: Context, count: int = 1
) -> str:
    """Insert one or more columns starting at the specified column (1 is column A)."""
    return _rows_or_columns(ctx, filepath, sheet_name, "insert_cols", start_col, count)


@server.tool(annotations=changes("Delete rows", destructive=True, idempotent=False))
def delete_sheet_rows(
    filepath: FilePath, sheet_name: SheetName, start_row: int, ctx: Context, count: int = 1
) -> str:
    """Delete one or more rows starting at the specified row."""
    return _rows_or_columns(ctx, filepath, sheet_name, "delete_rows", start_row, count)


@server.tool(annotations=changes("Delete columns", destructive=True, idempotent=False))
def delete_sheet_columns(
    filepath: FilePath, sheet_name: SheetName, start_col: int, ctx: Context, count: int = 1
) -> str:
    """Delete one or more columns starting at the specified column (1 is column A)."""
    return _rows_or_columns(ctx, filepath, sheet_name, "delete_cols", start_col, count)


def _rows_or_columns(
    ctx: Context, filepath: str, sheet_name: str, action: str, start: int, count: int
) -> str:
    what = "row" if "rows" in action else "column"
    editing.positive(start, f"start_{'row' if what == 'row' else 'col'}")
    editing.positive(count, "count")
    limit = cells.MAX_ROW if what == "row" else cells.MAX_COL
    if start + count - 1 > limit:
        raise ToolFailure(
            f"The {what}s {start}-{start + count - 1} run past the sheet's last {what} ({limit})."
        )
    with files.editing(session_of(ctx).paths, filepath) as book:
        getattr(cells.sheet(book, sheet_name), action)(start, count)
    label = (lambda n: str(n)) if what == "row" else editing.column_label
    span = label(start) if count == 1 else f"{label(start)}-{label(start + count - 1)}"
    verb = "Inserted" if action.startswith("insert") else "Deleted"
    return (
        f"{verb} {count} {what}(s) at {span} in '{sheet_name}'. Formulas elsewhere are not rewritten: "
        "check references that pointed past this point."
    )


def _warm() -> None:
    # A call forked while this thread imports would find the import's locks held forever.
    with fork_gate:
        engine.warm()


def main() -> None:
    # The formula engine takes a second or more to import (numpy, scipy): do it while idle, so the
    # first formula without a cached value does not wait for it; later than start-up, when a
    # gateway is starting every server at once.
    warm = threading.Timer(WARM_AFTER_S, _warm)
    warm.daemon = True
    warm.start()
    serve(server)
