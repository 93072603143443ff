"""What the excel tools share: their argument types and the hints of a tool that edits a workbook.

Tools are defined in modules by area with gaia_kit.core.tools.tool; server.py lists them.
"""

from __future__ import annotations

from typing import Annotated

from gaia_kit.core.hints import hints
from mcp_types import ToolAnnotations
from pydantic import Field

FilePath = Annotated[
    str, Field(description="Path to the Excel file (relative to the workspace, or absolute inside it)")
]
SheetName = Annotated[str, Field(description="Name of the worksheet")]
CellAddress = Annotated[str, Field(description="Cell address such as A1")]
MAX_SHOWN = 20
"""Computed formulas and pivot rows an answer shows before it points to read_data_from_excel."""


def changes(title: str, *, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """The hints of a tool that edits a workbook in the workspace (and reaches nothing outside it)."""
    return hints(title, read_only=False, destructive=destructive, idempotent=idempotent, open_world=False)
