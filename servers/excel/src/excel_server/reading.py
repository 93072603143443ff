"""Reading: cells page by page, workbook metadata, merged cells and validation rules.

Everything here streams the sheet XML (openpyxl read_only mode, or iterparse for the parts
read_only mode skips), so a sheet of any size is read in flat memory and the output stops at
the server's cap with the start_cell that reads on.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from xml.etree.ElementTree import fromstring

from gaia_kit import get_settings
from gaia_kit.core.settings import settings
from openpyxl.utils.datetime import from_excel
from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from . import cells, files
from .compute import LazyEvaluator, formula_text

PREVIEW_ROWS = 10


class ReadSettings(BaseSettings):
    """GAIA_EXCEL_READ_LAYOUT; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="GAIA_EXCEL_", extra="ignore")

    read_layout: Literal["cells", "rows"] = "cells"
    """read_data_from_excel's layout when a call names none (a call's `layout` overrides it)."""

    @field_validator("read_layout", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return (value.strip().lower() or "cells") if isinstance(value, str) else value


def default_layout() -> str:
    """read_data_from_excel's layout when a call names none: GAIA_EXCEL_READ_LAYOUT, else cells."""
    return settings(ReadSettings).read_layout


MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def read_cells(
    path: Path,
    raw: str,
    sheet_name: str,
    start_cell: str,
    end_cell: str | None,
    preview_only: bool,
    include_formulas: bool,
    max_rows: int | None,
    layout: str = "cells",
    converted: str | None = None,
) -> dict[str, Any]:
    """The cells of a range, page by page. layout "cells" (the reference format): one object per
    cell; "rows": one array per row, about a quarter of the characters (see docs/tools.md)."""
    size_of = _row_size if layout == "rows" else _cells_size
    min_row, min_col = cells.cell(start_cell)
    max_row = max_col = None
    if end_cell:
        min_row, min_col, max_row, max_col = cells.area(start_cell, end_cell)
    row_limit = PREVIEW_ROWS if preview_only else max_rows
    budget = get_settings().max_output_chars - 1500  # room for the envelope and notes
    values_book = files.open_for_read(path, raw, data_only=True)
    formula_book = files.open_for_read(path, raw, data_only=False)
    try:
        values_sheet = cells.sheet(values_book, sheet_name)
        formula_sheet = formula_book[sheet_name]
        dimension = declared_dimension(values_sheet)
        # The dimension a file declares can be missing or wrong: read every row there is.
        values_sheet.reset_dimensions()
        formula_sheet.reset_dimensions()
        bounds = {"min_row": min_row, "min_col": min_col, "max_row": max_row, "max_col": max_col}
        evaluator = LazyEvaluator(path, raw)
        out: list[dict[str, Any]] = []
        used, rows_read, first_row, last_row, next_row, truncated_row = 0, 0, None, None, None, False
        uncomputed = 0
        rows = zip(values_sheet.iter_rows(**bounds), formula_sheet.iter_rows(**bounds), strict=False)
        for value_row, formula_row in rows:
            entries = []
            row_number = None
            for value_cell, formula_cell in zip(value_row, formula_row, strict=False):
                if getattr(formula_cell, "value", None) is None:
                    continue
                row_number = value_cell.row
                entry = _entry(value_cell, formula_cell, sheet_name, evaluator, include_formulas)
                uncomputed += "not_computed" in entry
                entries.append(entry)
            if row_number is None:
                continue
            if row_limit is not None and rows_read >= row_limit:
                next_row = row_number
                break
            size = size_of(entries)
            if used + size > budget:
                if out:
                    next_row = row_number
                    break
                entries, truncated_row = _fit(entries, budget), True
            out.extend(entries)
            used += size
            rows_read += 1
            first_row = first_row or row_number
            last_row = row_number
            if truncated_row:
                next_row = row_number + 1
                break
    finally:
        values_book.close()
        formula_book.close()
    if layout == "rows":
        result = _as_rows(out, dimension, first_row, min_col, max_col)
        notes: list[str] = []
    else:
        result = {
            "file": raw,
            "sheet_name": sheet_name,
            "sheet_dimension": dimension,
            "range": _shown_range(min_row, min_col, max_row, max_col, last_row),
            "cells": out,
        }
        notes = [
            "Empty cells are left out. Values are computed values; formulas are shown when "
            "include_formulas=true."
        ]
    if converted:
        notes.append(f"{raw} was converted to {PurePosixPath(converted).name} in the workspace to be read.")
    if uncomputed and layout != "rows":  # rows: the not_computed map says it
        notes.append(
            f"{uncomputed} formula cell(s) have no saved value and could not be computed here "
            "(see not_computed); Excel or LibreOffice will calculate them."
        )
    if truncated_row:
        notes.append("One row was too wide for one answer and was cut; pass end_cell to read fewer columns.")
    if next_row is not None:
        column = cells.range_text(1, min_col, 1, min_col).rstrip("1")
        end = f", end_cell='{end_cell}'" if end_cell else ""
        result["next_start_cell"] = f"{column}{next_row}"
        notes.append(
            f"More rows follow. Call again with start_cell='{column}{next_row}'{end} to read on"
            + (" (or preview_only=false to read everything)." if preview_only else ".")
        )
    if notes or layout != "rows":
        result["notes"] = notes
    return result


def as_json(result: dict[str, Any]) -> str:
    """The result as JSON with one cell (or row) a line and no indentation: whitespace is tokens too."""

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)

    parts = []
    for key, value in result.items():
        if key in ("cells", "rows") and value:
            parts.append(f"{dump(key)}:[\n" + ",\n".join(dump(item) for item in value) + "\n]")
        else:
            parts.append(f"{dump(key)}:{dump(value)}")
    return "{" + ",\n".join(parts) + "}"


def _cells_size(entries: list[dict]) -> int:
    return sum(
        len(json.dumps(e, ensure_ascii=False, separators=(",", ":"), default=str)) + 2 for e in entries
    )


def _row_size(entries: list[dict]) -> int:
    extras = sum(len(json.dumps(e, ensure_ascii=False, default=str)) for e in entries if len(e) > 4)
    return 3 + sum(len(json.dumps(e["value"], ensure_ascii=False, default=str)) + 1 for e in entries) + extras


def _as_rows(
    entries: list[dict], dimension: str | None, first_row: int | None, min_col: int, max_col: int | None
) -> dict[str, Any]:
    """Entries as a 2-D array over the range they cover (null for an empty cell), plus what some
    cells carry beyond their value, keyed by address: formulas, reasons, validation rules."""
    if not entries or first_row is None:
        return {"sheet_dimension": dimension, "range": None, "rows": []}
    right = max_col or max(e["column"] for e in entries)
    bottom = max(e["row"] for e in entries)
    grid: list[list[Any]] = [[] for _ in range(bottom - first_row + 1)]
    extras: dict[str, dict[str, Any]] = {}
    for entry in entries:
        line = grid[entry["row"] - first_row]
        line.extend([None] * (entry["column"] - min_col + 1 - len(line)))
        line[entry["column"] - min_col] = entry["value"]
        for key in ("formula", "not_computed"):
            if key in entry:
                extras.setdefault(key + "s" if key == "formula" else key, {})[entry["address"]] = entry[key]
    result: dict[str, Any] = {
        "sheet_dimension": dimension,
        "range": cells.range_text(first_row, min_col, bottom, right),
        "rows": grid,
    }
    result.update(extras)
    return result


def _entry(
    value_cell: Any, formula_cell: Any, sheet: str, evaluator: LazyEvaluator, with_formula: bool
) -> dict:
    row, column = value_cell.row, value_cell.column
    entry: dict[str, Any] = {"address": value_cell.coordinate, "value": None, "row": row, "column": column}
    formula = formula_text(formula_cell.value)
    if formula is None:
        entry["value"] = cells.jsonable(formula_cell.value)
        return entry
    value, reason = value_cell.value, None
    if value is None:
        value, reason = evaluator.value(sheet, row, column)
        if getattr(formula_cell, "is_date", False) and isinstance(value, int | float):
            value = from_excel(value)  # a computed date, shown as the cell's format shows it
    entry["value"] = cells.jsonable(value)
    if reason is not None:
        entry["not_computed"] = reason
    if with_formula:
        entry["formula"] = formula
    return entry


def _fit(entries: list[dict], budget: int) -> list[dict]:
    kept, used = [], 0
    for entry in entries:
        used += len(json.dumps(entry, ensure_ascii=False, default=str)) + 2
        if used > budget:
            break
        kept.append(entry)
    return kept


def declared_dimension(sheet: Any) -> str | None:
    """The used range the sheet declares (read from the head of the file), or None when it declares none."""
    try:
        return sheet.calculate_dimension()
    except ValueError:
        return None


def _shown_range(
    min_row: int, min_col: int, max_row: int | None, max_col: int | None, last: int | None
) -> str:
    bottom = max_row if max_row is not None else (last or min_row)
    if max_row is not None and last is not None:
        bottom = min(max_row, last)
    return cells.range_text(min_row, min_col, bottom, max_col or min_col) + (
        "" if max_col else " (columns to the end)"
    )


def attach_validations(result: dict, path: Path, raw: str, sheet_name: str) -> None:
    """Add each read cell's validation rule, matching the reference's per-cell metadata (the rows
    layout lists each rule once, under the ranges it applies to)."""
    rules = sheet_extras(path, raw, sheet_name)["validations"]
    if not rules:
        return
    if "rows" in result:
        if result["range"] is not None:
            shown = cells.area(result["range"])
            touching = [rule for rule in rules if _overlaps(rule["applies_to"], shown)]
            if touching:
                result["validation"] = {
                    rule["applies_to"]: {k: v for k, v in rule.items() if k != "applies_to"}
                    for rule in touching
                }
        return
    parsed = [(rule, [cells.area(part) for part in rule["applies_to"].split()]) for rule in rules]
    for entry in result["cells"]:
        for rule, areas in parsed:
            if any(a <= entry["row"] <= c and b <= entry["column"] <= d for a, b, c, d in areas):
                entry["validation"] = {k: v for k, v in rule.items() if k != "applies_to"}
                break


def _overlaps(applies_to: str, area: tuple[int, int, int, int]) -> bool:
    top, left, bottom, right = area
    for part in applies_to.split():
        a, b, c, d = cells.area(part)
        if a <= bottom and c >= top and b <= right and d >= left:
            return True
    return False


def sheet_extras(path: Path, raw: str, sheet_name: str) -> dict[str, list]:
    """Merged ranges and data-validation rules of a sheet.

    Both live after <sheetData> in the sheet XML, so the cell data is streamed past in chunks
    and only the root tag (for its namespace prefixes) and the tail are parsed.
    """
    book = files.open_for_read(path, raw)
    try:
        sheet = cells.sheet(book, sheet_name)
        with sheet._get_source() as source:
            document = _head_and_tail(source)
    finally:
        book.close()
    merged: list[str] = []
    validations: list[dict[str, Any]] = []
    if document is not None:
        for element in fromstring(document).iter():
            if element.tag == f"{MAIN_NS}mergeCell":
                merged.append(element.get("ref"))
            elif element.tag == f"{MAIN_NS}dataValidation":
                validations.append(_validation(element))
    return {"merged": merged, "validations": validations}


def _head_and_tail(source: Any, chunk: int = 1 << 20) -> bytes | None:
    marker = b"</sheetData>"
    head = b""
    window = b""
    tail: bytearray | None = None
    while block := source.read(chunk):
        if tail is not None:
            tail += block
            continue
        if len(head) < 65536:
            head += block[: 65536 - len(head)]
        window = window[-len(marker) :] + block
        found = window.find(marker)
        if found >= 0:
            tail = bytearray(window[found + len(marker) :])
    start = head.find(b"<worksheet")
    if start < 0:
        start = head.find(b":worksheet")
        start = head.rfind(b"<", 0, start) if start >= 0 else -1
    if start < 0:
        return None
    if tail is None:
        # <sheetData/> (an empty sheet): the whole part is small and parses as it is.
        return head if len(head) < 65536 else None
    root_tag = head[start : head.index(b">", start) + 1]
    if root_tag.endswith(b"/>"):
        return None
    return root_tag + bytes(tail)


def _validation(element: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"applies_to": element.get("sqref", ""), "type": element.get("type", "any")}
    if element.get("operator"):
        rule["operator"] = element.get("operator")
    for name in ("formula1", "formula2"):
        found = element.find(f"{MAIN_NS}{name}")
        if found is not None and found.text:
            rule[name] = found.text
    formula1 = rule.get("formula1", "")
    if rule["type"] == "list" and formula1.startswith('"'):
        rule["allowed_values"] = [v.strip() for v in formula1.strip('"').split(",")]
    rule["allow_blank"] = element.get("allowBlank") in ("1", "true")
    for attribute, key in (("prompt", "prompt"), ("error", "error_message")):
        if element.get(attribute):
            rule[key] = element.get(attribute)
    return rule


def metadata(path: Path, raw: str, include_ranges: bool, converted: str | None) -> str:
    """`converted`: how the agent names the converted copy of `raw` that `path` opens, if one was made."""
    book = files.open_for_read(path, raw)
    try:
        sheets = []
        for sheet in book.worksheets:
            entry: dict[str, Any] = {"name": sheet.title, "state": sheet.sheet_state}
            if include_ranges:
                entry["used_range"] = declared_dimension(sheet)
                entry["max_row"], entry["max_column"] = sheet.max_row, sheet.max_column
            sheets.append(entry)
        names = sorted(book.defined_names.keys()) if include_ranges else None
        chartsheets = [s.title for s in book.chartsheets]
    finally:
        book.close()
    info = path.stat()
    result: dict[str, Any] = {"file": raw, "size_bytes": info.st_size, "sheets": sheets}
    if chartsheets:
        result["chart_sheets"] = chartsheets
    if names:
        result["defined_names"] = names
    if converted:
        result["converted_copy"] = converted
    return json.dumps(result, ensure_ascii=False, indent=1)
