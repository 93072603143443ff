"""Moving cells: copy and delete ranges, insert and delete rows and columns."""

from __future__ import annotations

from copy import copy
from typing import Annotated, Any

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from openpyxl.formula.translate import Translator
from openpyxl.utils import get_column_letter
from pydantic import Field

from . import cells, files
from .compute import formula_text
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
        placed = _copy_cells(source, area, target, start)
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
        _delete_cells(cells.sheet(book, sheet_name), area, shift_direction)
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
    _positive(start, f"start_{'row' if what == 'row' else 'col'}")
    _positive(count, "count")
    limit = cells.MAX_ROW if what == "row" else cells.MAX_COL
    if start + count - 1 > limit:
        raise ToolFailure(
            f"The {what}s {start}-{start + count - 1} run past the sheet's last {what} ({limit})."
        )
    with files.editing(session_of(ctx).paths, filepath) as book:
        getattr(cells.sheet(book, sheet_name), action)(start, count)
    label = (lambda n: str(n)) if what == "row" else _column_label
    span = label(start) if count == 1 else f"{label(start)}-{label(start + count - 1)}"
    verb = "Inserted" if action.startswith("insert") else "Deleted"
    return (
        f"{verb} {count} {what}(s) at {span} in '{sheet_name}'. Formulas elsewhere are not rewritten: "
        "check references that pointed past this point."
    )


def _copy_cells(ws: Any, area: tuple[int, int, int, int], target: Any, start: tuple[int, int]) -> str:
    min_row, min_col, max_row, max_col = area
    d_row, d_col = start[0] - min_row, start[1] - min_col
    if max_row + d_row > cells.MAX_ROW or max_col + d_col > cells.MAX_COL:
        raise ToolFailure(
            "The copy would run past the sheet's last row or column; pick another target_start."
        )
    snapshot = [
        [(c.value, c._style, c.coordinate) for c in line]
        for line in ws.iter_rows(min_row=min_row, max_row=max_row, min_col=min_col, max_col=max_col)
    ]
    for r, line in enumerate(snapshot):
        for c, (value, style, origin) in enumerate(line):
            dest = target.cell(min_row + r + d_row, min_col + c + d_col)
            text = formula_text(value)
            # Relative references move with the formula, as Excel's copy and paste does.
            dest.value = (
                Translator(text, origin).translate_formula(dest.coordinate)
                if text and isinstance(value, str)
                else value
            )
            dest._style = copy(style)
    return cells.range_text(start[0], start[1], max_row + d_row, max_col + d_col)


def _delete_cells(ws: Any, area: tuple[int, int, int, int], direction: str) -> None:
    direction = direction.strip().lower()
    if direction not in ("up", "left"):
        raise ToolFailure(f"shift_direction '{direction}' is unknown; use up or left.")
    min_row, min_col, max_row, max_col = area
    for r in range(min_row, max_row + 1):
        for c in range(min_col, max_col + 1):
            ws._cells.pop((r, c), None)
    last_row, last_col = ws.max_row, ws.max_column
    if direction == "up" and max_row < last_row:
        ws.move_range(
            cells.range_text(max_row + 1, min_col, last_row, max_col), rows=-(max_row - min_row + 1)
        )
    if direction == "left" and max_col < last_col:
        ws.move_range(
            cells.range_text(min_row, max_col + 1, max_row, last_col), cols=-(max_col - min_col + 1)
        )


def _positive(value: int, what: str) -> int:
    if value < 1:
        raise ToolFailure(f"{what} must be 1 or more (rows and columns are numbered from 1).")
    return value


def _column_label(index: int) -> str:
    return get_column_letter(index)
