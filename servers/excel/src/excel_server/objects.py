"""What is built over a range of data: tables, charts and pivot tables."""

from __future__ import annotations

import re
import statistics
from typing import Annotated, Any

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from openpyxl.chart import AreaChart, BarChart, LineChart, PieChart, Reference, ScatterChart, Series
from openpyxl.styles import Font
from openpyxl.worksheet.table import Table, TableStyleInfo
from pydantic import Field

from . import cells, files
from .tool import MAX_SHOWN, FilePath, SheetName, changes

CHARTS = {
    "bar": BarChart,
    "column": BarChart,
    "line": LineChart,
    "pie": PieChart,
    "scatter": ScatterChart,
    "area": AreaChart,
}
AGGREGATES = {"mean", "average", "sum", "count", "min", "max", "median"}


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
        name = _add_table(cells.sheet(book, sheet_name), area, table_name, table_style)
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
        series = _add_chart(
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
        name, table = _pivot(cells.sheet(book, sheet_name), area, rows, values, columns, agg_func)
    preview = "\n".join(
        " | ".join("" if v is None else str(v) for v in line) for line in table[: MAX_SHOWN + 1]
    )
    more = f"\n({len(table) - MAX_SHOWN - 1} more rows in the sheet.)" if len(table) > MAX_SHOWN + 1 else ""
    return f"Created pivot table in sheet '{name}' ({len(table) - 1} group(s), {agg_func}):\n{preview}{more}"


def _add_table(ws: Any, area: tuple[int, int, int, int], name: str | None, style: str) -> str:
    min_row, min_col, max_row, max_col = area
    if max_row <= min_row:
        raise ToolFailure("A table needs a header row and at least one data row; widen data_range.")
    headers = [ws.cell(min_row, c).value for c in range(min_col, max_col + 1)]
    if any(h is None or str(h).strip() == "" for h in headers) or len({str(h) for h in headers}) != len(
        headers
    ):
        raise ToolFailure(
            "The first row of data_range must hold a distinct, non-empty header for every column."
        )
    for c, header in zip(range(min_col, max_col + 1), headers, strict=True):
        ws.cell(min_row, c).value = str(header)  # Excel requires text headers
    book = ws.parent
    taken = {t for sheet in book.worksheets for t in sheet.tables}
    if name is None:
        name = next(f"Table{n}" for n in range(1, len(taken) + 2) if f"Table{n}" not in taken)
    if not re.fullmatch(r"[A-Za-z_\\][A-Za-z0-9_.]{0,254}", name) or re.fullmatch(r"[A-Za-z]{1,3}\d+", name):
        raise ToolFailure(
            f"'{name}' is not a valid table name: start with a letter or _, use letters, digits, _ and ., and do not look like a cell address."
        )
    if name in taken:
        raise ToolFailure(f"The workbook already has a table named '{name}'; choose another table_name.")
    for existing in ws.tables.values():
        a = cells.area(existing.ref)
        if not (a[2] < min_row or a[0] > max_row or a[3] < min_col or a[1] > max_col):
            raise ToolFailure(f"data_range overlaps the table '{existing.displayName}' ({existing.ref}).")
    table = Table(displayName=name, ref=cells.range_text(*area))
    table.tableStyleInfo = TableStyleInfo(name=style, showRowStripes=True)
    ws.add_table(table)
    return name


def _add_chart(
    ws: Any, area: tuple[int, int, int, int], kind: str, anchor: str, title: str, x_axis: str, y_axis: str
) -> str:
    kind = kind.strip().lower()
    if kind not in CHARTS:
        raise ToolFailure(f"chart_type '{kind}' is unknown; use one of {', '.join(CHARTS)}.")
    min_row, min_col, max_row, max_col = area
    if max_col <= min_col or max_row <= min_row:
        raise ToolFailure(
            "data_range needs a header row and at least two columns: categories (or x values) first, then the series."
        )
    chart = CHARTS[kind]()
    if kind == "bar":
        chart.type = "bar"
    elif kind == "column":
        chart.type = "col"
    categories = Reference(ws, min_col=min_col, min_row=min_row + 1, max_row=max_row)
    if kind == "scatter":
        for col in range(min_col + 1, max_col + 1):
            values = Reference(ws, min_col=col, min_row=min_row, max_row=max_row)
            chart.series.append(Series(values, categories, title_from_data=True))
    else:
        data = Reference(ws, min_col=min_col + 1, max_col=max_col, min_row=min_row, max_row=max_row)
        chart.add_data(data, titles_from_data=True)
        chart.set_categories(categories)
    if title:
        chart.title = title
    if kind != "pie":
        if x_axis:
            chart.x_axis.title = x_axis
        if y_axis:
            chart.y_axis.title = y_axis
    cells.cell(anchor)
    ws.add_chart(chart, anchor.replace("$", "").upper())
    return f"{len(chart.series)} series"


def _pivot(
    ws: Any,
    area: tuple[int, int, int, int],
    rows: list[str],
    values: list[str],
    columns: list[str] | None,
    agg: str,
) -> tuple[str, list[list[Any]]]:
    """Aggregate `values` grouped by `rows` (and `columns`) into a new sheet; returns its name and table."""
    agg = agg.strip().lower()
    if agg not in AGGREGATES:
        raise ToolFailure(f"agg_func '{agg}' is unknown; use one of {', '.join(sorted(AGGREGATES))}.")
    if not rows or not values:
        raise ToolFailure("A pivot table needs at least one field in rows and one in values.")
    min_row, min_col, max_row, max_col = area
    table = [
        [c.value for c in line]
        for line in ws.iter_rows(min_row=min_row, max_row=max_row, min_col=min_col, max_col=max_col)
    ]
    header = [str(h) if h is not None else "" for h in table[0]]
    columns = columns or []
    missing = [f for f in [*rows, *values, *columns] if f not in header]
    if missing:
        raise ToolFailure(
            f"data_range has no column named {', '.join(missing)}; its headers are: {', '.join(header)}."
        )
    index = {name: header.index(name) for name in header}
    groups: dict[tuple, dict[tuple, dict[str, list[Any]]]] = {}
    for line in table[1:]:
        row_key = tuple(line[index[f]] for f in rows)
        col_key = tuple(line[index[f]] for f in columns)
        bucket = groups.setdefault(row_key, {}).setdefault(col_key, {v: [] for v in values})
        for v in values:
            bucket[v].append(line[index[v]])
    col_keys = sorted({k for per_row in groups.values() for k in per_row}, key=_sort_key)
    labels = [
        f"{agg}({v})" + (" | " + ", ".join(_text(x) for x in key) if columns else "")
        for key in col_keys
        for v in values
    ]
    out: list[list[Any]] = [[*rows, *labels]]
    for row_key in sorted(groups, key=_sort_key):
        line = list(row_key)
        for key in col_keys:
            for v in values:
                line.append(_aggregate(agg, groups[row_key].get(key, {}).get(v, [])))
        out.append(line)
    book = ws.parent
    name = cells.check_sheet_name(f"{ws.title[:24]}_pivot")
    base, n = name, 2
    while name in book.sheetnames:
        name, n = f"{base[:28]}_{n}", n + 1
    target = book.create_sheet(name)
    for line in out:
        target.append(line)
    for c in range(1, len(out[0]) + 1):
        target.cell(1, c).font = Font(b=True)
    return name, out


def _aggregate(agg: str, items: list[Any]) -> Any:
    numbers = [x for x in items if isinstance(x, int | float) and not isinstance(x, bool)]
    if agg == "count":
        return sum(1 for x in items if x is not None and x != "")
    if not numbers:
        return None
    if agg in ("mean", "average"):
        return statistics.fmean(numbers)
    return {"sum": sum, "min": min, "max": max, "median": statistics.median}[agg](numbers)


def _sort_key(key: tuple) -> tuple:
    return tuple((0, x) if isinstance(x, int | float) else (1, _text(x)) for x in key)


def _text(value: Any) -> str:
    return "" if value is None else str(value)
