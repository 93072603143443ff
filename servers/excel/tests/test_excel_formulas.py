"""The formula vetting and the engine on their own, over workbooks built in memory."""

import datetime

import pytest
from excel_server.compute import compute, evaluator
from excel_server.parsing import REFUSED
from excel_server.vetting import check
from gaia_kit import ToolFailure
from gaia_kit_testing import formula_cases
from openpyxl import Workbook, load_workbook


@pytest.fixture
def engine():
    book = Workbook()
    sheet = book.active
    sheet.title = "Data"
    for row in [
        ["name", "qty", "price"],
        ["apple", 3, 1.5],
        ["pear", 5, 0.25],
        ["fig", None, 4],
        ["kiwi", "n/a", 2],
    ]:
        sheet.append(row)
    other = book.create_sheet("My Sheet")
    other["A1"] = 10
    other["A2"] = "=A1*2"
    other["A3"] = "=A3+1"
    return evaluator(book)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=SUM(B2:B5)", 8),
        ("=AVERAGE(B2:B5)", 4),
        ("=MIN(C2:C5)+MAX(C2:C5)", 4.25),
        ("=COUNT(B2:B5)", 2),
        ("=COUNTA(B2:B5)", 3),
        ("=ROUND(C2*B2/7, 2)", 0.64),
        ("=ROUND(2.5, 0)", 3),
        ('=IF(B3>4, "many", "few")', "many"),
        ('=A2&"-"&A3', "apple-pear"),
        ("='My Sheet'!A2+1", 21),
        ("=-2^2", 4),
        ("=2^3^2", 64),
        ("=1+2*3-4/2", 5),
        ("=50%", 0.5),
        ("=B2/0", "#DIV/0!"),
        ("=IFERROR(B2/0, -1)", -1),
        ('=SUMIF(A2:A5, "p*", B2:B5)', 5),
        ('=COUNTIF(B2:B5, ">2")', 2),
        ("=SUM(B:B)", 8),
        ("=AND(B2>1, C2<2)", True),
        ("=UPPER(LEFT(A3, 2))", "PE"),
    ],
)
def test_evaluator_computes(engine, formula, expected):
    value, reason = compute(engine, "Data", formula=formula)
    assert reason is None
    assert value == pytest.approx(expected) if isinstance(expected, float) else value == expected


def test_uncomputable_formulas_say_why(engine):
    value, reason = compute(engine, "Data", formula="=NOSUCHFUNCTION(A2)")
    assert value is None and "NOSUCHFUNCTION is not supported" in reason
    value, reason = compute(engine, "My Sheet", row=3, col=1)
    assert value is None and "circular" in reason
    assert compute(engine, "My Sheet", row=2, col=1) == (20, None)


@pytest.mark.parametrize("prefixed", [False, True], ids=["as-scripts-write", "as-excel-saves"])
def test_the_twenty_common_formulas_are_computed_without_cached_values(tmp_path, prefixed):
    path = formula_cases.build(tmp_path / "cases.xlsx", prefixed=prefixed)
    engine = evaluator(load_workbook(path))
    for row, (label, _, expected) in enumerate(formula_cases.CASES, start=1):
        value, reason = compute(engine, "Calc", row=row, col=2)
        assert reason is None, (label, reason)
        assert formula_cases.matches(value, expected), (label, value, expected)


def test_dates_are_serial_numbers_in_arithmetic():
    book = Workbook()
    book.active["A1"] = datetime.date(2024, 1, 31)
    book.active["A2"] = datetime.datetime(2024, 1, 31, 12, 0)
    assert compute(evaluator(book), "Sheet", formula="=A1+1") == (45323, None)
    assert compute(evaluator(book), "Sheet", formula="=A2-A1") == (0.5, None)
    assert compute(evaluator(book), "Sheet", formula='=TEXT(EOMONTH(A1,1),"yyyy-mm-dd")') == (
        "2024-02-29",
        None,
    )


def test_one_compiled_function_serves_a_column_of_relative_formulas():
    book = Workbook()
    sheet = book.active
    for row in range(1, 201):
        sheet.append([row, row * 2, f"=A{row}*B{row}+$A$1", f"=SUM($C$1:C{row})"])
    engine = evaluator(book)
    assert compute(engine, "Sheet", row=200, col=4)[0] == sum(r * r * 2 + 1 for r in range(1, 201))
    assert compute(engine, "Sheet", row=7, col=3) == (7 * 14 + 1, None)
    # Row 1's =A1*B1+$A$1 reads A1 twice (one input to the engine, two in the next row): its own entry.
    assert len(engine.compiled) == 3


def test_a_long_chain_of_formulas_is_bounded_and_computed_top_down():
    book = Workbook()
    sheet = book.active
    sheet["A1"] = 1
    for row in range(2, 1001):
        sheet[f"A{row}"] = f"=A{row - 1}+1"
    engine = evaluator(book)
    value, reason = compute(engine, "Sheet", row=1000, col=1)
    assert value is None and "deeper than" in reason
    fresh = evaluator(book)
    for row in range(1, 1001):  # what a paged read does: each cell's predecessor is already known
        value, reason = compute(fresh, "Sheet", row=row, col=1)
    assert (value, reason) == (1000, None)


def test_defined_names_resolve_to_their_range():
    from openpyxl.workbook.defined_name import DefinedName

    book = Workbook()
    for value in (2, 3, 5):
        book.active.append([value])
    book.defined_names["Prices"] = DefinedName("Prices", attr_text="Sheet!$A$1:$A$3")
    assert compute(evaluator(book), "Sheet", formula="=SUM(Prices)") == (10, None)


def test_a_refused_function_stored_in_a_workbook_is_not_computed():
    book = Workbook()
    book.active["A1"] = '=WEBSERVICE("http://127.0.0.1:9/")'
    book.active["A2"] = '=INDIRECT("A3")'
    engine = evaluator(book)
    for row, name in ((1, "WEBSERVICE"), (2, "INDIRECT")):
        value, reason = compute(engine, "Sheet", row=row, col=1)
        assert value is None and f"{name} is not allowed" in reason


def test_a_huge_range_is_refused_not_loaded():
    book = Workbook()
    book.active["A1"] = 1
    value, reason = compute(evaluator(book), "Sheet", formula="=SUM(A1:Z100000)")
    assert value is None and "more than 1,000,000 cells" in reason


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_functions_reaching_outside_are_refused(name):
    with pytest.raises(ToolFailure, match=f"{name} is not allowed"):
        check(f'={name}("http://example.com")', ["Sheet"])
    with pytest.raises(ToolFailure, match=f"{name} is not allowed"):
        check(f'=IFERROR(_xlfn.{name}("x"), 1)', ["Sheet"])


@pytest.mark.parametrize(
    ("formula", "problem"),
    [
        ("=SUM(A1:A3", "malformed"),
        ("=(1+2", "malformed"),
        ("=1+", "malformed"),
        ("=[1]Sheet1!A1", "another workbook"),
        ("='C:\\x\\[b.xlsx]S'!A1", "another workbook"),
        ("=Missing!A1", "does not have"),
        ("=", "nothing after"),
        ("", "empty"),
    ],
)
def test_malformed_formulas_are_rejected(formula, problem):
    with pytest.raises(ToolFailure, match=problem):
        check(formula, ["Sheet"])


def test_check_accepts_excel_prefixes_and_no_equals_sign():
    check("SUM(1,2)", ["Sheet"])
    check("=_xlfn.CONCAT(A1,B1)", ["Sheet"])
    check("='sheet'!A1", ["Sheet"])  # sheet names are case-insensitive, as in Excel
