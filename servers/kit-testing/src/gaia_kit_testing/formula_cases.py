"""Twenty common formulas over a workbook saved without cached values, as openpyxl saves it.

GAIA attachments are often made by scripts, so their formulas have no saved results: the server
must compute them. The excel server's tests check its answers; benchmarks/side_by_side.py runs the
same cases through excel-mcp-server, and benchmarks/excel_engines.py and answer_sizes.py use the
workbook.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

SALES = [
    ["Name", "Region", "Date", "Qty", "Price"],
    ["Apple", "East", date(2024, 1, 15), 10, 1.5],
    ["Banana", "West", date(2024, 2, 20), 4, 0.25],
    ["Cherry", "East", date(2024, 3, 5), 7, 3.0],
    ["Date", "North", date(2024, 3, 31), 12, 2.0],
    ["Elder", "West", date(2024, 5, 10), 3, 4.5],
    ["Fig", "East", date(2024, 6, 1), 8, 2.25],
]

# (what it exercises, formula, expected value). Each goes in column B of sheet Calc, row = index + 1.
CASES: list[tuple[str, str, object]] = [
    ("VLOOKUP", '=VLOOKUP("Cherry",Sales!A2:E7,4,FALSE)', 7),
    ("HLOOKUP", '=HLOOKUP("Qty",Sales!A1:E7,3,FALSE)', 4),
    ("INDEX/MATCH", '=INDEX(Sales!E2:E7,MATCH("Date",Sales!A2:A7,0))', 2),
    ("XLOOKUP", '=XLOOKUP("Fig",Sales!A2:A7,Sales!D2:D7)', 8),
    ("SUMPRODUCT", "=SUMPRODUCT(Sales!D2:D7,Sales!E2:E7)", 92.5),
    ("COUNTIFS", '=COUNTIFS(Sales!B2:B7,"East",Sales!D2:D7,">7")', 2),
    ("SUMIFS", '=SUMIFS(Sales!D2:D7,Sales!B2:B7,"West")', 7),
    ("AVERAGEIFS", '=AVERAGEIFS(Sales!E2:E7,Sales!B2:B7,"East")', 2.25),
    ("STDEV", "=STDEV(Sales!D2:D7)", 3.444802),
    ("TEXT on a date", '=TEXT(Sales!C2,"yyyy-mm-dd")', "2024-01-15"),
    ("DAYS between dates", "=DAYS(Sales!C7,Sales!C2)", 138),
    ("YEAR/MONTH", "=YEAR(Sales!C4)*100+MONTH(Sales!C4)", 202403),
    ("EOMONTH", "=EOMONTH(Sales!C3,0)", 45351),
    ("IFERROR around a miss", '=IFERROR(VLOOKUP("Kiwi",Sales!A2:E7,2,FALSE),"none")', "none"),
    ("ROUND(AVERAGE)", "=ROUND(AVERAGE(Sales!D2:D7),2)", 7.33),
    ("MAXIFS", '=MAXIFS(Sales!D2:D7,Sales!B2:B7,"West")', 4),
    ("LARGE", "=LARGE(Sales!D2:D7,2)", 10),
    ("TEXTJOIN", '=TEXTJOIN(", ",TRUE,Sales!A2:A4)', "Apple, Banana, Cherry"),
    ("text functions", '=UPPER(LEFT(Sales!A6,3))&"-"&SUBSTITUTE(Sales!B6,"e","3")', "ELD-W3st"),
    ("a formula over formulas", "=B1+B2*B17", 47),
]


# Functions newer than Excel 2007, which Excel itself stores as _xlfn.NAME; scripts often do not.
NEWER = ("XLOOKUP", "DAYS", "MAXIFS", "TEXTJOIN")


def build(path: Path, prefixed: bool = False) -> Path:
    """Write the workbook with openpyxl (so no formula has a cached value) and return its path;
    `prefixed` writes the newer functions as Excel saves them (_xlfn.XLOOKUP)."""
    from openpyxl import Workbook

    book = Workbook()
    sales = book.active
    sales.title = "Sales"
    for row in SALES:
        sales.append(row)
    for cell in sales["C"][1:]:
        cell.number_format = "yyyy-mm-dd"
    calc = book.create_sheet("Calc")
    for index, (label, formula, _) in enumerate(CASES, start=1):
        calc.cell(index, 1, label)
        if prefixed:
            for name in NEWER:
                formula = formula.replace(f"{name}(", f"_xlfn.{name}(")
        calc.cell(index, 2, formula)
    book.save(path)
    return path


def matches(value: object, expected: object) -> bool:
    """Equal as an agent would read it: numbers to 6 significant digits, dates as their serials."""
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return False
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        return abs(value - expected) <= 1e-6 * max(1.0, abs(expected))
    return value == expected
