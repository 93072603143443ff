"""What is built over a range of data: tables, charts and pivot tables."""

from __future__ import annotations

from typing import Annotated

from gaia_kit import session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from pydantic import Field

from . import cells, editing, files
from .tool import MAX_SHOWN, FilePath, SheetName, changes


@tool(changes("Create table", destructive=False, idempotent=False))
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


@tool(changes("Create chart", destructive=False, idempotent=False))
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


@tool(changes("Create pivot table", destructive=False, idempotent=False))
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
