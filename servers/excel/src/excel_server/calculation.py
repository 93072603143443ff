"""Formulas in cells: apply one, or check one without writing it; both say what it computes."""

from __future__ import annotations

from typing import Annotated

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from pydantic import Field

from . import cells, files, vetting
from .compute import compute, describe, evaluator
from .tool import CellAddress, FilePath, SheetName, changes


@tool(changes("Apply formula", destructive=True, idempotent=True))
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
        vetting.check(formula, book.sheetnames)
        text = "=" + formula.strip().lstrip("=")
        sheet.cell(row, col).value = text
        value, reason = compute(evaluator(book), sheet_name, row=row, col=col)
    return (
        f"Applied {text} to {sheet_name}!{cells.range_text(row, col, row, col)}; {describe(value, reason)}."
    )


@tool(hints("Validate formula syntax", read_only=True, open_world=False))
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
        vetting.check(formula, names)
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
