"""Writing data and formulas into a workbook, and creating workbooks."""

from __future__ import annotations

from typing import Annotated

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from pydantic import Field

from . import cells, files, vetting
from .compute import compute, describe, evaluator, formula_text
from .tool import MAX_SHOWN, FilePath, changes

# What a JSON cell can hold; typed so strict schema converters accept the rows (docs/clients.md).
CellValue = str | int | float | bool | None


@tool(changes("Write data to Excel", destructive=True, idempotent=True))
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
                    vetting.check(value, book.sheetnames)
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


@tool(changes("Create workbook", destructive=False, idempotent=False))
def create_workbook(filepath: FilePath, ctx: Context) -> str:
    """Create new Excel workbook (with one empty sheet named Sheet)."""
    guard = session_of(ctx).paths
    if guard.resolve(filepath, write=True).exists():
        raise ToolFailure(f"{filepath} already exists; pick another name, or edit it with the other tools.")
    with files.editing(guard, filepath, create=True):
        pass
    return f"Created workbook {filepath} with sheet 'Sheet'."
