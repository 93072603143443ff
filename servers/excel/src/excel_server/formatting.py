"""How cells look: fonts, fills, borders, number formats, conditional formats, merging."""

from __future__ import annotations

import re
from copy import copy
from typing import Annotated, Any

from gaia_kit import ToolFailure, session_of
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from openpyxl.formatting.rule import CellIsRule, ColorScaleRule, DataBarRule, FormulaRule
from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side
from pydantic import Field

from . import cells, files, vetting
from .tool import CellAddress, FilePath, SheetName, changes

NAMED_COLORS = {
    "black": "000000", "white": "FFFFFF", "red": "FF0000", "green": "00B050", "blue": "0070C0",
    "yellow": "FFFF00", "orange": "FFC000", "gray": "808080", "grey": "808080", "purple": "7030A0",
}  # fmt: skip
BORDER_STYLES = {
    "thin", "medium", "thick", "dashed", "dotted", "double", "hair", "mediumDashed",
    "dashDot", "mediumDashDot", "dashDotDot", "mediumDashDotDot", "slantDashDot",
}  # fmt: skip
HORIZONTAL = {"left", "center", "right", "justify", "general", "fill", "distributed", "centerContinuous"}
VERTICAL = {"top": "top", "middle": "center", "bottom": "bottom", "vcenter": "center"}
OPERATORS = {
    "between", "notBetween", "equal", "notEqual", "greaterThan", "lessThan",
    "greaterThanOrEqual", "lessThanOrEqual",
}  # fmt: skip


@tool(changes("Format range", destructive=False, idempotent=True))
def format_range(
    filepath: FilePath,
    sheet_name: SheetName,
    start_cell: CellAddress,
    ctx: Context,
    end_cell: Annotated[
        str | None, Field(description="Last cell of the range (default: start_cell alone)")
    ] = None,
    bold: bool = False,
    italic: bool = False,
    underline: bool = False,
    font_size: int | None = None,
    font_color: Annotated[
        str | None, Field(description="Hex like FF0000 or #FF0000, or a name like red")
    ] = None,
    bg_color: Annotated[str | None, Field(description="Fill color: hex or a name")] = None,
    border_style: Annotated[
        str | None, Field(description="thin, medium, thick, dashed, dotted, double, ...")
    ] = None,
    border_color: str | None = None,
    number_format: Annotated[
        str | None, Field(description="Excel number format, e.g. 0.00, 0%, yyyy-mm-dd")
    ] = None,
    alignment: Annotated[
        str | None, Field(description="left, center, right, justify, top, middle or bottom")
    ] = None,
    wrap_text: bool = False,
    merge_cells: bool = False,
    protection: Annotated[
        dict[str, Any] | None, Field(description='{"locked": bool, "hidden": bool}')
    ] = None,
    conditional_format: Annotated[
        dict[str, Any] | None,
        Field(
            description='{"type": "cell_is"|"formula"|"color_scale"|"data_bar", "params": {...}}, e.g. '
            '{"type": "cell_is", "params": {"operator": "greaterThan", "formula": ["100"], "bg_color": "FFC7CE"}}'
        ),
    ] = None,
) -> str:
    """Apply formatting to a range of cells."""
    area = cells.area(start_cell, end_cell)
    options = {
        "bold": bold, "italic": italic, "underline": underline, "font_size": font_size, "font_color": font_color,
        "bg_color": bg_color, "border_style": border_style, "border_color": border_color,
        "number_format": number_format, "alignment": alignment, "wrap_text": wrap_text,
        "merge_cells": merge_cells, "protection": protection, "conditional_format": conditional_format,
    }  # fmt: skip
    with files.editing(session_of(ctx).paths, filepath) as book:
        done = _apply_format(cells.sheet(book, sheet_name), area, options)
    if not done:
        return (
            f"Nothing to change: no formatting option was given for {sheet_name}!{cells.range_text(*area)}."
        )
    return f"Formatted {sheet_name}!{cells.range_text(*area)}: {', '.join(done)}."


@tool(changes("Merge cells", destructive=True, idempotent=True))
def merge_cells(
    filepath: FilePath, sheet_name: SheetName, start_cell: CellAddress, end_cell: CellAddress, ctx: Context
) -> str:
    """Merge a range of cells."""
    area = cells.area(start_cell, end_cell)
    with files.editing(session_of(ctx).paths, filepath) as book:
        cells.sheet(book, sheet_name).merge_cells(cells.range_text(*area))
    return f"Merged {sheet_name}!{cells.range_text(*area)}."


@tool(changes("Unmerge cells", destructive=False, idempotent=False))
def unmerge_cells(
    filepath: FilePath, sheet_name: SheetName, start_cell: CellAddress, end_cell: CellAddress, ctx: Context
) -> str:
    """Unmerge a range of cells."""
    area = cells.area(start_cell, end_cell)
    text = cells.range_text(*area)
    with files.editing(session_of(ctx).paths, filepath) as book:
        sheet = cells.sheet(book, sheet_name)
        if text not in {str(r) for r in sheet.merged_cells.ranges}:
            merged = ", ".join(str(r) for r in sheet.merged_cells.ranges) or "none"
            raise ToolFailure(f"{text} is not a merged range of '{sheet_name}'; its merged ranges: {merged}.")
        sheet.unmerge_cells(text)
    return f"Unmerged {sheet_name}!{text}."


def _apply_format(ws: Any, area: tuple[int, int, int, int], options: dict[str, Any]) -> list[str]:
    min_row, min_col, max_row, max_col = area
    done: list[str] = []
    font_changes = {
        key: value
        for key, value in (
            ("b", options["bold"] or None),
            ("i", options["italic"] or None),
            ("u", "single" if options["underline"] else None),
            ("sz", options["font_size"]),
            ("color", _color(options["font_color"], "font_color") if options["font_color"] else None),
        )
        if value is not None
    }
    fill = None
    if options["bg_color"]:
        rgb = _color(options["bg_color"], "bg_color")
        fill = PatternFill(fill_type="solid", start_color=rgb, end_color=rgb)
    side = None
    if options["border_style"] or options["border_color"]:
        style = options["border_style"] or "thin"
        if style not in BORDER_STYLES:
            raise ToolFailure(
                f"border_style '{style}' is unknown; use one of {', '.join(sorted(BORDER_STYLES))}."
            )
        side = Side(
            style=style,
            color=_color(options["border_color"], "border_color") if options["border_color"] else None,
        )
    horizontal = vertical = None
    if options["alignment"]:
        name = options["alignment"].strip()
        if name in HORIZONTAL:
            horizontal = name
        elif name.lower() in VERTICAL:
            vertical = VERTICAL[name.lower()]
        else:
            raise ToolFailure(
                f"alignment '{name}' is unknown; use left, center, right, justify, top, middle or bottom."
            )
    protection = options["protection"]
    for row in ws.iter_rows(min_row=min_row, max_row=max_row, min_col=min_col, max_col=max_col):
        for target in row:
            if font_changes:
                target.font = _font(target.font, font_changes)
            if fill is not None:
                target.fill = fill
            if side is not None:
                target.border = Border(left=side, right=side, top=side, bottom=side)
            if options["number_format"]:
                target.number_format = options["number_format"]
            if horizontal or vertical or options["wrap_text"]:
                old = target.alignment
                target.alignment = Alignment(
                    horizontal=horizontal or old.horizontal,
                    vertical=vertical or old.vertical,
                    wrap_text=True if options["wrap_text"] else old.wrap_text,
                )
            if protection:
                target.protection = Protection(
                    locked=bool(protection.get("locked", True)), hidden=bool(protection.get("hidden", False))
                )
    for label, present in (
        ("font", font_changes), ("fill", fill), ("border", side), ("number format", options["number_format"]),
        ("alignment", horizontal or vertical or options["wrap_text"]), ("protection", protection),
    ):  # fmt: skip
        if present:
            done.append(label)
    reference = cells.range_text(*area)
    if options["merge_cells"] and (min_row, min_col) != (max_row, max_col):
        ws.merge_cells(reference)
        done.append("merged")
    if options["conditional_format"]:
        ws.conditional_formatting.add(
            reference, _conditional_rule(options["conditional_format"], ws.parent.sheetnames)
        )
        done.append("conditional format")
    return done


def _font(old: Font, updates: dict[str, Any]) -> Font:
    font = copy(old)
    for key, value in updates.items():
        setattr(font, key, value)
    return font


def _conditional_rule(spec: dict[str, Any], sheet_names: list[str]) -> Any:
    """A rule from {"type": ..., "params": {...}} (the reference's shape) or flat keys."""
    kind = str(spec.get("type", "")).lower()
    params = {**spec.get("params", {}), **{k: v for k, v in spec.items() if k not in ("type", "params")}}
    fill = font = None
    if params.get("bg_color") or params.get("fill_color"):
        rgb = _color(params.get("bg_color") or params["fill_color"], "bg_color")
        fill = PatternFill(fill_type="solid", start_color=rgb, end_color=rgb)
    if params.get("font_color"):
        font = Font(color=_color(params["font_color"], "font_color"))
    if kind in ("cell_is", "cellis"):
        operator = params.get("operator", "greaterThan")
        if operator not in OPERATORS:
            raise ToolFailure(
                f"conditional_format operator '{operator}' is unknown; use one of {', '.join(sorted(OPERATORS))}."
            )
        values = params.get("formula", params.get("value"))
        values = (
            [str(v) for v in (values if isinstance(values, list) else [values])] if values is not None else []
        )
        if not values:
            raise ToolFailure('conditional_format cell_is needs params.formula, e.g. ["100"].')
        for value in values:
            vetting.check(value, sheet_names)
        return CellIsRule(operator=operator, formula=values, fill=fill, font=font)
    if kind == "formula":
        text = str(params.get("formula", "")).lstrip("=")
        if not text:
            raise ToolFailure('conditional_format of type formula needs params.formula, e.g. "$B2>100".')
        vetting.check(text, sheet_names)
        return FormulaRule(formula=[text], fill=fill, font=font)
    if kind == "color_scale":
        start = _color(params.get("start_color", "F8696B"), "start_color")
        end = _color(params.get("end_color", "63BE7B"), "end_color")
        if params.get("mid_color"):
            mid = _color(params["mid_color"], "mid_color")
            return ColorScaleRule(start_type="min", start_color=start, mid_type="percentile", mid_value=50,
                                  mid_color=mid, end_type="max", end_color=end)  # fmt: skip
        return ColorScaleRule(start_type="min", start_color=start, end_type="max", end_color=end)
    if kind == "data_bar":
        return DataBarRule(
            start_type="min", end_type="max", color=_color(params.get("color", "638EC6"), "color")
        )
    raise ToolFailure(
        f"conditional_format type '{spec.get('type')}' is unknown; use cell_is, formula, color_scale or data_bar."
    )


def _color(value: str, what: str) -> str:
    text = value.strip().lstrip("#")
    text = NAMED_COLORS.get(text.lower(), text)
    if re.fullmatch(r"[0-9A-Fa-f]{6}", text):
        return "FF" + text.upper()
    if re.fullmatch(r"[0-9A-Fa-f]{8}", text):
        return text.upper()
    raise ToolFailure(
        f"{what} '{value}' is not a color; use hex like FF0000 (or #FF0000) or a name like red."
    )
