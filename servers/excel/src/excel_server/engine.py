"""Computing formulas with the `formulas` package, one cell at a time.

`formulas` compiles one formula into a function of the ranges it reads (646 Excel functions).
This module feeds those ranges from the workbook lazily: only the cells a formula reads are
looked at, formulas they hold are computed first (memoised, with a depth limit and a circular
check), whole columns stop at the sheet's used area and no range may exceed MAX_RANGE_CELLS.
Compiling costs ~4 ms and calling ~0.5 ms, so a compiled function is reused for every cell whose
formula is the same up to relative references (=B2*C2, =B3*C3, ... compile once).
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import cache
from typing import Any

from gaia_kit import ToolFailure
from openpyxl.formula.tokenizer import Token
from openpyxl.utils.datetime import to_excel

from .parsing import Ref, function_names, references, render, tokens, vet

MAX_DEPTH = 150  # each level is a few Python frames; deeper chains are computed top-down by reads
MAX_RANGE_CELLS = 1_000_000
# Functions that read where a reference is, not only its values: they get the engine's range objects.
REFERENCE_FUNCTIONS = {
    "ROW",
    "ROWS",
    "COLUMN",
    "COLUMNS",
    "CELL",
    "ISREF",
    "AREAS",
    "INDEX",
    "OFFSET",
    "SHEET",
}

CellSource = Callable[[str, int, int], tuple[Any, bool]]
"""(sheet, row, col) -> (content, is_formula). For a formula, content is its text."""


class Uncomputable(Exception):
    """The engine cannot compute this formula; the message says why."""


class ExcelError(str):
    """An Excel error value (#DIV/0!, #VALUE!, ...): a result, not a failure."""


_INPUT = re.compile(
    r"^(?:(?P<sheet>'(?:[^']|'')+'|[^!]+)!)?(?P<area>\$?[A-Z]{0,3}\$?\d*(?::\$?[A-Z]{0,3}\$?\d*)?)$"
)


@cache
def _engine() -> Any:
    """The `formulas` package, imported on first use (about a second: it brings numpy and scipy)."""
    # schedula logs a traceback for every function that fails; the reason reaches the agent anyway.
    for name in ("schedula", "formulas"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    with warnings.catch_warnings():  # its modules compare with `is` to literals: noise on first import
        warnings.simplefilter("ignore", SyntaxWarning)
        import formulas
        import schedula
        from formulas.functions import get_functions
        from formulas.ranges import Ranges
        from formulas.tokens.operand import XlError

        known = {name.removeprefix("_XLFN.") for name in get_functions()} | {"LET", "LAMBDA"}
    errors = {
        text: XlError(text) for text in ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NUM!", "#NAME?", "#N/A")
    }
    return _Engine(formulas.Parser(), Ranges, XlError, schedula.EMPTY, known, errors)


def warm() -> None:
    """Import the engine now (servers call this in a background thread at start)."""
    _engine()


@dataclass(frozen=True)
class _Engine:
    parser: Any
    ranges: type
    error_type: type
    empty: Any
    known: set[str]
    errors: dict[str, Any]


@dataclass
class _Compiled:
    function: Any
    # For each input of the function: the index of the reference token it reads, or a name.
    inputs: list[int | str]


class Evaluator:
    """Computes formulas of one workbook; values are memoised for the evaluator's lifetime."""

    def __init__(
        self,
        source: CellSource,
        sheet_names: list[str],
        extent: Callable[[str], tuple[int, int]],
        names: dict[str, str] | None = None,
    ):
        self.source, self.sheet_names, self.extent = source, sheet_names, extent
        self.names = {k.upper(): v for k, v in (names or {}).items()}
        self.by_upper = {name.upper(): name for name in sheet_names}
        self.memo: dict[tuple[str, int, int], Any] = {}
        self.active: set[tuple[str, int, int]] = set()
        self.compiled: dict[str, _Compiled] = {}
        self.engine = _engine()

    def formula_value(self, sheet: str, formula: str, row: int = 1, col: int = 1) -> Any:
        """The value of `formula` placed at (row, col) of `sheet`; raises Uncomputable with the reason."""
        return self._evaluate(formula, sheet, row, col, 0)

    def cell(self, sheet: str, row: int, col: int, depth: int = 0) -> Any:
        key = (sheet, row, col)
        if key in self.memo:
            return self.memo[key]
        content, is_formula = self.source(sheet, row, col)
        if not is_formula:
            return content
        if key in self.active:
            raise Uncomputable("the formula refers to itself (a circular reference)")
        if depth > MAX_DEPTH:
            raise Uncomputable(f"the chain of formulas referring to formulas is deeper than {MAX_DEPTH}")
        self.active.add(key)
        try:
            value = self._evaluate(content, sheet, row, col, depth + 1)
        finally:
            self.active.discard(key)
        self.memo[key] = value
        return value

    def _evaluate(self, formula: str, sheet: str, row: int, col: int, depth: int) -> Any:
        text = "=" + formula.strip().removeprefix("=")
        try:
            items = tokens(text)
        except ToolFailure as exc:
            raise Uncomputable(str(exc)) from None
        refusal = vet(items)
        if refusal is not None:
            raise Uncomputable(refusal)
        missing = sorted(set(function_names(items)) - self.engine.known)
        if missing:
            raise Uncomputable(f"the function {missing[0]} is not supported by the formula engine")
        refs = references(items)
        compiled = self._compiled(render(items), items, refs, row, col)
        # Plain values are much cheaper to hand over than the engine's range objects, which only
        # the functions that look at where a reference is (ROW, COLUMN, ...) need.
        where = not REFERENCE_FUNCTIONS.isdisjoint(function_names(items))
        arguments = [self._input(spec, refs, sheet, depth, where) for spec in compiled.inputs]
        try:
            result = compiled.function(*arguments)
        except Exception as exc:  # the engine wraps every failure in its own DispatcherError
            raise Uncomputable(f"the formula engine could not compute it ({_reason(exc)})") from None
        return self._plain(result)

    def _compiled(
        self, text: str, items: list[Token], refs: list[Ref | None], row: int, col: int
    ) -> _Compiled:
        key = _template(items, refs, row, col)
        found = self.compiled.get(key) or self.compiled.get(text)
        if found is not None:
            return found
        problem = syntax_error(text)
        if problem is not None:
            raise Uncomputable(f"the formula is malformed: {problem}")
        try:
            function = self.engine.parser.ast(text)[1].compile()
        except Exception as exc:
            raise Uncomputable(f"the formula engine cannot compile it ({_reason(exc)})") from None
        where: dict[tuple, int] = {}
        shared = True
        for index, ref in enumerate(refs):
            if ref is None:
                continue
            seen = where.setdefault(ref.key, index)
            # A1 and $A$1 in one formula are one input to the engine but move apart in the next row.
            shared = shared and refs[seen].relative(row, col) == ref.relative(row, col)
        inputs: list[int | str] = [where.get(_input_key(name), name) for name in function.inputs]
        compiled = _Compiled(function, inputs)
        self.compiled[key if shared else text] = compiled
        return compiled

    def _input(self, spec: int | str, refs: list[Ref | None], sheet: str, depth: int, where: bool) -> Any:
        if isinstance(spec, int):
            ref = refs[spec]
            assert ref is not None
            return self._range(ref, sheet, depth, where)
        destination = self.names.get(spec.upper())
        if destination is not None:
            found = references(tokens("=" + destination))
            if len(found) == 1 and found[0] is not None:
                return self._range(found[0], sheet, depth, where)
        raise Uncomputable(
            f"'{spec}' is a defined name, a range intersection or a reference this server does not compute"
        )

    def _range(self, ref: Ref, sheet: str, depth: int, where: bool = True) -> Any:
        target = sheet if ref.sheet is None else self.by_upper.get(ref.sheet.upper())
        if target is None:
            raise Uncomputable(f"the formula refers to a sheet named '{ref.sheet}', which the workbook lacks")
        min_col, min_row, max_col, max_row = ref.bounds
        if None in ref.bounds:  # whole columns (A:A) or rows (1:1) stop at the sheet's used area
            last_row, last_col = self.extent(target)
            min_col, min_row = min_col or 1, min_row or 1
            max_col, max_row = max(max_col or last_col, min_col), max(max_row or last_row, min_row)
        if (max_row - min_row + 1) * (max_col - min_col + 1) > MAX_RANGE_CELLS:
            raise Uncomputable(f"the range {ref.text} has more than {MAX_RANGE_CELLS:,} cells")
        if not where and min_row == max_row and min_col == max_col:
            return self._to_engine(self.cell(target, min_row, min_col, depth))
        import numpy

        values = numpy.empty((max_row - min_row + 1, max_col - min_col + 1), dtype=object)
        for r in range(min_row, max_row + 1):
            for c in range(min_col, max_col + 1):
                values[r - min_row, c - min_col] = self._to_engine(self.cell(target, r, c, depth))
        if not where:
            return values
        area = f"{_column(min_col)}{min_row}:{_column(max_col)}{max_row}"
        return self.engine.ranges().push(area, value=values)

    def _to_engine(self, value: Any) -> Any:
        if value is None:
            return self.engine.empty
        if isinstance(value, ExcelError):
            return self.engine.errors.get(str(value), self.engine.errors["#VALUE!"])
        if isinstance(value, str) and value in self.engine.errors:
            return self.engine.errors[value]  # an error value a workbook saved
        if isinstance(value, datetime | date):
            return to_excel(value)
        if isinstance(value, time):
            return (value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6) / 86400
        if isinstance(value, timedelta):
            return value.total_seconds() / 86400
        return value

    def _plain(self, result: Any) -> Any:
        """The engine's answer as a plain Python value (the top-left one of an array)."""
        if isinstance(result, self.engine.ranges):
            result = result.value
        if hasattr(result, "ndim"):
            result = (
                result.flat[0] if result.ndim and result.size else (result[()] if not result.ndim else None)
            )
        if isinstance(result, self.engine.error_type):
            return ExcelError(str(result))
        if result is self.engine.empty:
            return 0  # =A1 with A1 empty shows 0
        if hasattr(result, "item"):  # numpy scalars
            result = result.item()
        if isinstance(result, float) and result != result:
            return ExcelError("#NUM!")
        return result


def _template(items: list[Token], refs: list[Ref | None], row: int, col: int) -> str:
    """The formula with relative references written as offsets from its cell: =B2*C2 in D2 and
    =B3*C3 in D3 give the same template, so they share one compiled function."""
    parts = []
    for item, ref in zip(items, refs_by_token(items, refs), strict=True):
        parts.append(item.value if ref is None else ref.relative(row, col))
    return "\x1f".join(parts)


def refs_by_token(items: list[Token], refs: list[Ref | None]) -> list[Ref | None]:
    """`refs` (one per reference token) spread over all tokens, None where a token is no reference."""
    spread: list[Ref | None] = []
    found = iter(refs)
    for item in items:
        is_ref = item.type == Token.OPERAND and item.subtype == Token.RANGE
        spread.append(next(found) if is_ref else None)
    return spread


def _input_key(name: str) -> tuple[str | None, tuple] | None:
    match = _INPUT.match(name)
    if match is None:
        return None
    sheet = match["sheet"]
    if sheet is not None and sheet.startswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    try:
        ref = Ref.parse(match["area"], sheet)
    except ValueError:
        return None
    return ref.key


def _column(index: int) -> str:
    from openpyxl.utils.cell import get_column_letter

    return get_column_letter(index)


def _reason(exc: BaseException) -> str:
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return text or type(exc).__name__


def syntax_error(formula: str) -> str | None:
    """What the engine finds wrong with the formula's syntax, or None."""
    try:
        _engine().parser.ast("=" + formula.strip().removeprefix("="))
    except Exception as exc:
        first = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        text = " ".join(first.replace("%s", "").split()).strip(" :!").lower()
        if not text or text == "not a valid formula":
            return "check its operators, quotes, parentheses and arguments"
        return text
    return None
