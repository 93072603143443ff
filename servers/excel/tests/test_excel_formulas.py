"""The formula checker and evaluator on their own, over a workbook built in memory."""

import pytest
from excel_server.compute import compute, evaluator
from excel_server.formulas import check, parse
from gaia_kit import ToolFailure
from openpyxl import Workbook


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
    value, reason = compute(engine, "Data", formula="=VLOOKUP(A2, A1:C5, 2, FALSE)")
    assert value is None and "VLOOKUP is not supported" in reason
    value, reason = compute(engine, "My Sheet", row=3, col=1)
    assert value is None and "circular" in reason
    assert compute(engine, "My Sheet", row=2, col=1) == (20, None)


def test_dates_in_arithmetic_are_not_guessed():
    import datetime

    book = Workbook()
    book.active["A1"] = datetime.date(2024, 1, 31)
    value, reason = compute(evaluator(book), "Sheet", formula="=A1+1")
    assert value is None and "date value in arithmetic" in reason


@pytest.mark.parametrize("name", ["WEBSERVICE", "HYPERLINK", "RTD", "INDIRECT", "DGET"])
def test_functions_reaching_outside_are_refused(name):
    with pytest.raises(ToolFailure, match=f"{name} is not allowed"):
        check(f'={name}("http://example.com")', ["Sheet"])


@pytest.mark.parametrize(
    ("formula", "problem"),
    [
        ("=SUM(A1:A3", "malformed"),
        ("=(1+2", "parenthesis"),
        ("=1+", "ends too early"),
        ("=[1]Sheet1!A1", "another workbook"),
        ("=Missing!A1", "no sheet named|does not have"),
        ("=", "nothing after"),
        ("", "empty"),
    ],
)
def test_malformed_formulas_are_rejected(formula, problem):
    with pytest.raises(ToolFailure, match=problem):
        check(formula, ["Sheet"])


def test_parse_accepts_excel_prefixes_and_no_equals_sign():
    assert parse("SUM(1,2)")[0] == "call"
    assert parse("=_xlfn.CONCAT(A1,B1)")[1] == "CONCAT"
