"""Worksheets: create, copy, delete and rename them."""

from __future__ import annotations

from typing import Annotated

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from pydantic import Field

from . import cells, files
from .tool import FilePath, SheetName, changes


@tool(changes("Create worksheet", destructive=False, idempotent=False))
def create_worksheet(filepath: FilePath, sheet_name: SheetName, ctx: Context) -> str:
    """Create new worksheet in workbook."""
    with files.editing(session_of(ctx).paths, filepath) as book:
        if sheet_name in book.sheetnames:
            raise ToolFailure(f"Sheet '{sheet_name}' already exists in {filepath}.")
        book.create_sheet(cells.check_sheet_name(sheet_name))
    return f"Created sheet '{sheet_name}' in {filepath}."


@tool(changes("Copy worksheet", destructive=False, idempotent=False))
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


@tool(changes("Delete worksheet", destructive=True, idempotent=False))
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


@tool(changes("Rename worksheet", destructive=False, idempotent=False))
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
