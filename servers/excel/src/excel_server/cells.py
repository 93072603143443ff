"""Cell addresses, ranges and sheet lookup, with errors that say what a valid one looks like."""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from gaia_kit import ToolFailure
from openpyxl.utils.cell import coordinate_from_string, get_column_letter, range_boundaries
from openpyxl.utils.exceptions import CellCoordinatesException

MAX_ROW, MAX_COL = 1_048_576, 16_384


def cell(text: str) -> tuple[int, int]:
    """'B3' -> (row 3, column 2)."""
    try:
        letters, row = coordinate_from_string(text.strip().replace("$", "").upper())
        min_col, _, _, _ = range_boundaries(f"{letters}{row}")
    except (ValueError, TypeError, AttributeError, CellCoordinatesException):
        raise ToolFailure(
            f"'{text}' is not a cell address; use a column letter and row number like A1 or C12."
        ) from None
    if not (1 <= row <= MAX_ROW and 1 <= min_col <= MAX_COL):
        raise ToolFailure(f"'{text}' is beyond the sheet's limits (XFD1048576).")
    return row, min_col


def area(start: str, end: str | None = None) -> tuple[int, int, int, int]:
    """(min_row, min_col, max_row, max_col) from 'A1' and 'C3', or from 'A1:C3' in `start`."""
    if end is None and ":" in start:
        start, end = start.split(":", 1)
    r1, c1 = cell(start)
    r2, c2 = cell(end) if end else (r1, c1)
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


def range_text(min_row: int, min_col: int, max_row: int, max_col: int) -> str:
    first = f"{get_column_letter(min_col)}{min_row}"
    last = f"{get_column_letter(max_col)}{max_row}"
    return first if first == last else f"{first}:{last}"


def data_range(text: str) -> tuple[int, int, int, int]:
    """A range like 'A1:D10' (a sheet prefix such as Sheet1!A1:D10 is ignored here)."""
    if "!" in text:
        text = text.rsplit("!", 1)[1]
    if ":" not in text:
        raise ToolFailure(f"'{text}' is not a range; write it as first:last, like A1:D10.")
    return area(text)


def sheet(book: Any, name: str) -> Any:
    if name not in book.sheetnames:
        raise ToolFailure(
            f"The workbook has no sheet named '{name}'; its sheets are: {', '.join(book.sheetnames)}."
        )
    return book[name]


def check_sheet_name(name: str) -> str:
    if not name or len(name) > 31 or any(ch in name for ch in "[]:*?/\\") or name.startswith("'"):
        raise ToolFailure(
            f"'{name}' is not a valid sheet name: use 1-31 characters, none of [ ] : * ? / \\, "
            "and no leading apostrophe."
        )
    return name


def jsonable(value: Any) -> Any:
    """A cell value as JSON: dates as ISO text, everything else that JSON lacks as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, datetime) and value.time() == time(0) and value.tzinfo is None:
        return value.date().isoformat()  # a date cell: Excel keeps dates as midnight datetimes
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta | Decimal):
        return str(value)
    return str(value)


def writable(value: Any) -> Any:
    """A JSON value as a cell value: lists and objects are written as their JSON text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, ensure_ascii=False)
