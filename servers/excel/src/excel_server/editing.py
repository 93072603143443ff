"""Edits on a loaded workbook: formatting, tables, charts, pivots and moving cells.

Each function changes the workbook it is given and returns a sentence saying what it did;
loading, locking and the atomic save are the caller's (files.editing).
"""

from __future__ import annotations

import re
import statistics
from copy import copy
from typing import Any

from gaia_kit import ToolFailure
from openpyxl.chart import AreaChart, BarChart, LineChart, PieChart, Reference, ScatterChart, Series
from openpyxl.formatting.rule import CellIsRule, ColorScaleRule, DataBarRule, FormulaRule
from openpyxl.formula.translate import Translator
from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.table import Table, TableStyleInfo

from . import cells, vetting
from .compute import formula_text

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
AGGREGATES = {"mean", "average", "sum", "count", "min", "max", "median"}


def color(value: str, what: str) -> str:
    text = value.strip().lstrip("#")
    text = NAMED_COLORS.get(text.lower(), text)
    if re.fullmatch(r"[0-9A-Fa-f]{6}", text):
        return "FF" + text.upper()
    if re.fullmatch(r"[0-9A-Fa-f]{8}", text):
        return text.upper()
    raise ToolFailure(
        f"{what} '{value}' is not a color; use hex like FF0000 (or #FF0000) or a name like red."
    )


def format_range(ws: Any, area: tuple[int, int, int, int], options: dict[str, Any]) -> list[str]:
    min_row, min_col, max_row, max_col = area
    done: list[str] = []
    font_changes = {
        key: value
        for key, value in (
            ("b", options["bold"] or None),
            ("i", options["italic"] or None),
            ("u", "single" if options["underline"] else None),
            ("sz", options["font_size"]),
            ("color", color(options["font_color"], "font_color") if options["font_color"] else None),
        )
        if value is not None
    }
    fill = None
    if options["bg_color"]:
        rgb = color(options["bg_color"], "bg_color")
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
            color=color(options["border_color"], "border_color") if options["border_color"] else None,
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
            reference, conditional_rule(options["conditional_format"], ws.parent.sheetnames)
        )
        done.append("conditional format")
    return done


def _font(old: Font, changes: dict[str, Any]) -> Font:
    font = copy(old)
    for key, value in changes.items():
        setattr(font, key, value)
    return font


def conditional_rule(spec: dict[str, Any], sheet_names: list[str]) -> Any:
    """A rule from {"type": ..., "params": {...}} (the reference's shape) or flat keys."""
    kind = str(spec.get("type", "")).lower()
    params = {**spec.get("params", {}), **{k: v for k, v in spec.items() if k not in ("type", "params")}}
    fill = font = None
    if params.get("bg_color") or params.get("fill_color"):
        rgb = color(params.get("bg_color") or params["fill_color"], "bg_color")
        fill = PatternFill(fill_type="solid", start_color=rgb, end_color=rgb)
    if params.get("font_color"):
        font = Font(color=color(params["font_color"], "font_color"))
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
        start = color(params.get("start_color", "F8696B"), "start_color")
        end = color(params.get("end_color", "63BE7B"), "end_color")
        if params.get("mid_color"):
            mid = color(params["mid_color"], "mid_color")
            return ColorScaleRule(start_type="min", start_color=start, mid_type="percentile", mid_value=50,
                                  mid_color=mid, end_type="max", end_color=end)  # fmt: skip
        return ColorScaleRule(start_type="min", start_color=start, end_type="max", end_color=end)
    if kind == "data_bar":
        return DataBarRule(
            start_type="min", end_type="max", color=color(params.get("color", "638EC6"), "color")
        )
    raise ToolFailure(
        f"conditional_format type '{spec.get('type')}' is unknown; use cell_is, formula, color_scale or data_bar."
    )


# ----------------------------------------------------------------------------- tables and charts


def create_table(ws: Any, area: tuple[int, int, int, int], name: str | None, style: str) -> str:
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


CHARTS = {
    "bar": BarChart,
    "column": BarChart,
    "line": LineChart,
    "pie": PieChart,
    "scatter": ScatterChart,
    "area": AreaChart,
}


def create_chart(
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


# ----------------------------------------------------------------------------- pivot


def pivot(
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


# ----------------------------------------------------------------------------- moving cells


def copy_range(ws: Any, area: tuple[int, int, int, int], target: Any, start: tuple[int, int]) -> str:
    min_row, min_col, max_row, max_col = area
    d_row, d_col = start[0] - min_row, start[1] - min_col
    if max_row + d_row > cells.MAX_ROW or max_col + d_col > cells.MAX_COL:
        raise ToolFailure(
            "The copy would run past the sheet's last row or column; pick another target_start."
        )
    snapshot = [
        [(c.value, c._style, c.coordinate) for c in line]
        for line in ws.iter_rows(min_row=min_row, max_row=max_row, min_col=min_col, max_col=max_col)
    ]
    for r, line in enumerate(snapshot):
        for c, (value, style, origin) in enumerate(line):
            dest = target.cell(min_row + r + d_row, min_col + c + d_col)
            text = formula_text(value)
            # Relative references move with the formula, as Excel's copy and paste does.
            dest.value = (
                Translator(text, origin).translate_formula(dest.coordinate)
                if text and isinstance(value, str)
                else value
            )
            dest._style = copy(style)
    return cells.range_text(start[0], start[1], max_row + d_row, max_col + d_col)


def delete_range(ws: Any, area: tuple[int, int, int, int], direction: str) -> None:
    direction = direction.strip().lower()
    if direction not in ("up", "left"):
        raise ToolFailure(f"shift_direction '{direction}' is unknown; use up or left.")
    min_row, min_col, max_row, max_col = area
    for r in range(min_row, max_row + 1):
        for c in range(min_col, max_col + 1):
            ws._cells.pop((r, c), None)
    last_row, last_col = ws.max_row, ws.max_column
    if direction == "up" and max_row < last_row:
        ws.move_range(
            cells.range_text(max_row + 1, min_col, last_row, max_col), rows=-(max_row - min_row + 1)
        )
    if direction == "left" and max_col < last_col:
        ws.move_range(
            cells.range_text(min_row, max_col + 1, max_row, last_col), cols=-(max_col - min_col + 1)
        )


def positive(value: int, what: str) -> int:
    if value < 1:
        raise ToolFailure(f"{what} must be 1 or more (rows and columns are numbered from 1).")
    return value


def column_label(index: int) -> str:
    return get_column_letter(index)
