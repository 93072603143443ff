"""Moving cells: copy and delete ranges, insert and delete rows and columns."""

from __future__ import annotations

from typing import Annotated

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from pydantic import Field

from . import cells, editing, files
from .tool import CellAddress, FilePath, SheetName, changes


@tool(changes("Copy range", destructive=True, idempotent=True))
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


@tool(changes("Delete range", destructive=True, idempotent=False))
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


@tool(changes("Insert rows", destructive=False, idempotent=False))
def insert_rows(
    filepath: FilePath, sheet_name: SheetName, start_row: int, ctx: Context, count: int = 1
) -> str:
    """Insert one or more rows starting at the specified row."""
    return _rows_or_columns(ctx, filepath, sheet_name, "insert_rows", start_row, count)


@tool(changes("Insert columns", destructive=False, idempotent=False))
def insert_columns(
    filepath: FilePath, sheet_name: SheetName, start_col: int, ctx: Context, count: int = 1
) -> str:
    """Insert one or more columns starting at the specified column (1 is column A)."""
    return _rows_or_columns(ctx, filepath, sheet_name, "insert_cols", start_col, count)


@tool(changes("Delete rows", destructive=True, idempotent=False))
def delete_sheet_rows(
    filepath: FilePath, sheet_name: SheetName, start_row: int, ctx: Context, count: int = 1
) -> str:
    """Delete one or more rows starting at the specified row."""
    return _rows_or_columns(ctx, filepath, sheet_name, "delete_rows", start_row, count)


@tool(changes("Delete columns", destructive=True, idempotent=False))
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
