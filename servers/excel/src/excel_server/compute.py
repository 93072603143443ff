"""Computed values: a workbook's cached values where it has them, the formula engine where it has not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gaia_kit import ToolFailure
from openpyxl.worksheet.formula import ArrayFormula

from . import files
from .engine import Evaluator, ExcelError, Uncomputable


def formula_text(value: Any) -> str | None:
    """The formula in a cell value, or None when the cell holds a constant."""
    if isinstance(value, ArrayFormula):
        return value.text
    if isinstance(value, str) and value.startswith("=") and len(value) > 1:
        return value
    return None


def evaluator(book: Any, cached: Any | None = None) -> Evaluator:
    """An evaluator over a fully loaded workbook; `cached` (data_only) supplies values Excel saved."""

    def source(sheet: str, row: int, col: int) -> tuple[Any, bool]:
        found = book[sheet]._cells.get((row, col))  # never ws.cell(): that would create empty cells
        value = found.value if found is not None else None
        text = formula_text(value)
        if text is None:
            return value, False
        if cached is not None:
            saved = cached[sheet]._cells.get((row, col))
            if saved is not None and saved.value is not None:
                return saved.value, False
        return text, True

    def extent(sheet: str) -> tuple[int, int]:
        return book[sheet].max_row, book[sheet].max_column

    names = {name: defined.attr_text for name, defined in book.defined_names.items() if defined.attr_text}
    return Evaluator(source, list(book.sheetnames), extent, names)


class LazyEvaluator:
    """Loads the workbook for evaluation only when a formula without a cached value turns up."""

    def __init__(self, path: Path, raw: str):
        self.path, self.raw = path, raw
        self.engine: Evaluator | None = None
        self.unavailable: str | None = None

    def value(self, sheet: str, row: int, col: int) -> tuple[Any, str | None]:
        """(value, None) when computed, (None, reason) when not."""
        if self.engine is None and self.unavailable is None:
            try:
                self.engine = evaluator(
                    files.open_full(self.path, self.raw), files.open_full(self.path, self.raw, data_only=True)
                )
            except ToolFailure as exc:
                self.unavailable = f"the workbook could not be loaded to evaluate formulas: {exc}"
        if self.engine is None:
            return None, self.unavailable
        return compute(self.engine, sheet, row=row, col=col)


def compute(
    engine: Evaluator, sheet: str, formula: str | None = None, row: int = 0, col: int = 0
) -> tuple[Any, str | None]:
    """Compute a cell (row, col) of `sheet`, or a free-standing `formula` placed on it."""
    try:
        value = (
            engine.formula_value(sheet, formula, row or 1, col or 1)
            if formula is not None
            else engine.cell(sheet, row, col, 0)
        )
    except Uncomputable as exc:
        return None, str(exc)
    except RecursionError:
        return None, "the formula is nested too deeply to evaluate"
    if isinstance(value, ExcelError):
        return str(value), None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value), None
    return value, None


def describe(value: Any, reason: str | None) -> str:
    """A computed value in words, for tool results."""
    if reason is not None:
        return (
            f"value not computed ({reason}); Excel or LibreOffice will calculate it when the file is opened"
        )
    return f"computed value: {value!r}"
