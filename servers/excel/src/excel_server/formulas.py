"""Formulas: parsing (which is validation) and a small evaluator for the common functions.

openpyxl never calculates, and a workbook it saves has no cached values for its formulas, so a
formula this server wrote would otherwise read back as its own text. The evaluator computes
arithmetic, comparisons, `&`, cell and range references (cross-sheet too) and the functions in
FUNCTIONS; anything else is reported as "not computed", never guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal
from typing import Any

from gaia_kit import ToolFailure
from openpyxl.formula.tokenizer import Token, Tokenizer, TokenizerError
from openpyxl.utils.cell import range_boundaries

# Functions that fetch from the network, open links, or read places a formula names at run time.
REFUSED = {"WEBSERVICE", "FILTERXML", "HYPERLINK", "RTD", "INDIRECT", "DGET", "CALL", "REGISTER.ID", "DDE"}

MAX_DEPTH = 200
MAX_RANGE_CELLS = 1_000_000


class Uncomputable(Exception):
    """The evaluator cannot compute this formula; the message says why."""


class ExcelError(str):
    """An Excel error value (#DIV/0!, #VALUE!, ...): a result, not a failure."""


DIV0, VALUE, NA, NUM, REF = (ExcelError(e) for e in ("#DIV/0!", "#VALUE!", "#N/A", "#NUM!", "#REF!"))


@dataclass(frozen=True)
class Ref:
    sheet: str | None
    bounds: tuple[int | None, int | None, int | None, int | None]  # min_col, min_row, max_col, max_row
    text: str


# ----------------------------------------------------------------------------- parsing

_PRECEDENCE = {
    "=": 1,
    "<>": 1,
    "<": 1,
    ">": 1,
    "<=": 1,
    ">=": 1,
    "&": 2,
    "+": 3,
    "-": 3,
    "*": 4,
    "/": 4,
    "^": 5,
}
_PREFIX_POWER = 6  # Excel binds a leading minus tighter than ^: =-2^2 is 4


def parse(formula: str) -> Any:
    """Parse `formula` (with or without the leading '=') into a tree; raise ToolFailure if malformed."""
    text = formula.strip()
    if not text:
        raise ToolFailure("The formula is empty; pass something like =SUM(A1:A3).")
    if not text.startswith("="):
        text = "=" + text
    try:
        tokens = [t for t in Tokenizer(text).items if t.type != Token.WSPACE]
    except TokenizerError as exc:
        raise ToolFailure(f"The formula {text} is malformed ({exc}).") from None
    except Exception as exc:  # the tokenizer raises bare errors on some inputs (an unclosed quote)
        raise ToolFailure(f"The formula {text} is malformed ({exc}).") from None
    if not tokens:
        raise ToolFailure(f"The formula {text} has nothing after '='.")
    parser = _Parser(tokens, text)
    tree = parser.expression(0)
    if parser.pos != len(tokens):
        raise ToolFailure(f"The formula {text} is malformed near '{tokens[parser.pos].value}'.")
    return tree


class _Parser:
    def __init__(self, tokens: list[Token], text: str):
        self.tokens, self.text, self.pos = tokens, text, 0

    def fail(self, why: str) -> ToolFailure:
        return ToolFailure(f"The formula {self.text} is malformed: {why}.")

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise self.fail("it ends too early")
        self.pos += 1
        return token

    def expression(self, floor: int) -> Any:
        left = self.prefix()
        while (token := self.peek()) is not None:
            if token.type == Token.OP_POST:
                self.pos += 1
                left = ("pct", left)
                continue
            if token.type != Token.OP_IN:
                break
            power = _PRECEDENCE.get(token.value)
            if power is None:
                raise self.fail(f"the operator {token.value} is not supported")
            if power <= floor:  # every Excel operator is left-associative, ^ included
                break
            self.pos += 1
            left = ("op", token.value, left, self.expression(power))
        return left

    def prefix(self) -> Any:
        token = self.take()
        if token.type == Token.OP_PRE:
            operand = self.expression(_PREFIX_POWER)
            return ("neg", operand) if token.value == "-" else operand
        if token.type == Token.PAREN and token.subtype == Token.OPEN:
            inner = self.expression(0)
            closing = self.peek()
            if closing is None or closing.type != Token.PAREN or closing.subtype != Token.CLOSE:
                raise self.fail("a parenthesis is not closed")
            self.pos += 1
            return inner
        if token.type == Token.FUNC and token.subtype == Token.OPEN:
            return self.function(token.value[:-1].upper())
        if token.type == Token.OPERAND:
            return _operand(token, self)
        if token.type == Token.ARRAY:
            raise self.fail("array constants ({...}) are not supported")
        raise self.fail(f"unexpected '{token.value}'")

    def function(self, name: str) -> Any:
        name = name.removeprefix("_XLFN.").removeprefix("_XLWS.")
        args: list[Any] = []
        if (token := self.peek()) is not None and token.type == Token.FUNC and token.subtype == Token.CLOSE:
            self.pos += 1
            return ("call", name, args)
        while True:
            token = self.peek()
            if (
                token is not None
                and token.type == Token.SEP
                or (token is not None and token.type == Token.FUNC and token.subtype == Token.CLOSE)
            ):
                args.append(("empty",))
            else:
                args.append(self.expression(0))
            token = self.take()
            if token.type == Token.FUNC and token.subtype == Token.CLOSE:
                return ("call", name, args)
            if token.type != Token.SEP or token.subtype != Token.ARG:
                raise self.fail(f"expected ',' or ')' in {name}(...), found '{token.value}'")


_CELL = r"\$?[A-Za-z]{1,3}\$?\d+|\$?[A-Za-z]{1,3}|\$?\d+"
_REF = re.compile(rf"^(?:(?P<sheet>'(?:[^']|'')+'|[^'!:\[\]]+)!)?(?P<a>{_CELL})(?::(?P<b>{_CELL}))?$")


def _operand(token: Token, parser: _Parser) -> Any:
    value = token.value
    if token.subtype == Token.NUMBER:
        number = float(value)
        return (
            "value",
            int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number,
        )
    if token.subtype == Token.TEXT:
        return ("value", value[1:-1].replace('""', '"'))
    if token.subtype == Token.LOGICAL:
        return ("value", value.upper() == "TRUE")
    if token.subtype == Token.ERROR:
        return ("value", ExcelError(value.upper()))
    if "[" in value:
        raise ToolFailure(
            f"The formula {parser.text} refers to another workbook or a table ({value}); "
            "only references inside this workbook are allowed."
        )
    # A range written as Sheet!A1:Sheet!B2 names the sheet twice; keep the first.
    value = re.sub(r":(?:'(?:[^']|'')+'|[^'!:]+)!", ":", value)
    match = _REF.match(value)
    if match is None:
        return ("name", value)
    sheet = match["sheet"]
    if sheet is not None and sheet.startswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    area = match["a"] + (f":{match['b']}" if match["b"] else "")
    try:
        bounds = range_boundaries(area.replace("$", "").upper())
    except ValueError:
        return ("name", value)
    return ("ref", Ref(sheet, bounds, value))


def walk(tree: Any) -> Iterator[Any]:
    yield tree
    if tree[0] == "call":
        for arg in tree[2]:
            yield from walk(arg)
    elif tree[0] in ("neg", "pct"):
        yield from walk(tree[1])
    elif tree[0] == "op":
        yield from walk(tree[2])
        yield from walk(tree[3])


def check(formula: str, sheet_names: list[str]) -> Any:
    """Parse and vet a formula: refused functions and unknown sheets are errors. Returns the tree."""
    tree = parse(formula)
    for node in walk(tree):
        if node[0] == "call" and node[1] in REFUSED:
            raise ToolFailure(
                f"{node[1]} is not allowed: it reaches outside the workbook (network, links or "
                "references built at run time). Use a direct cell or range reference instead."
            )
        if node[0] == "ref" and node[1].sheet is not None and node[1].sheet not in sheet_names:
            raise ToolFailure(
                f"The formula refers to a sheet named '{node[1].sheet}', which this workbook does not have "
                f"(its sheets: {', '.join(sheet_names)})."
            )
    return tree


# ----------------------------------------------------------------------------- evaluation

CellSource = Callable[[str, int, int], tuple[Any, bool]]
"""(sheet, row, col) -> (content, is_formula). For a formula, content is its text."""


class Evaluator:
    """Computes formulas of one workbook; values are memoised for the evaluator's lifetime."""

    def __init__(self, source: CellSource, sheet_names: list[str], extent: Callable[[str], tuple[int, int]]):
        self.source, self.sheet_names, self.extent = source, sheet_names, extent
        self.memo: dict[tuple[str, int, int], Any] = {}
        self.active: set[tuple[str, int, int]] = set()

    def formula_value(self, sheet: str, formula: str) -> Any:
        """The value of `formula` placed on `sheet`; raises Uncomputable with the reason."""
        try:
            tree = parse(formula)
        except ToolFailure as exc:
            raise Uncomputable(str(exc)) from None
        return _scalar(self.eval(tree, sheet, 0))

    def cell(self, sheet: str, row: int, col: int, depth: int) -> Any:
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
            tree = parse(content)
            value = _scalar(self.eval(tree, sheet, depth + 1))
        except ToolFailure as exc:
            raise Uncomputable(str(exc)) from None
        finally:
            self.active.discard(key)
        self.memo[key] = value
        return value

    def eval(self, tree: Any, sheet: str, depth: int) -> Any:
        kind = tree[0]
        if kind == "value":
            return tree[1]
        if kind == "empty":
            return None
        if kind == "ref":
            return self.reference(tree[1], sheet, depth)
        if kind == "name":
            raise Uncomputable(f"'{tree[1]}' is a defined name or unsupported reference")
        if kind == "neg":
            value = _number(_scalar(self.eval(tree[1], sheet, depth)))
            return value if isinstance(value, ExcelError) else -value
        if kind == "pct":
            value = _number(_scalar(self.eval(tree[1], sheet, depth)))
            return value if isinstance(value, ExcelError) else value / 100
        if kind == "op":
            left = _scalar(self.eval(tree[2], sheet, depth))
            right = _scalar(self.eval(tree[3], sheet, depth))
            return _binary(tree[1], left, right)
        name, args = tree[1], tree[2]
        if name in REFUSED:
            raise Uncomputable(f"{name} is not allowed")
        if name == "IF":
            return self._if(args, sheet, depth)
        if name == "IFERROR":
            if len(args) != 2:
                return VALUE
            first = _scalar(self.eval(args[0], sheet, depth))
            return _scalar(self.eval(args[1], sheet, depth)) if isinstance(first, ExcelError) else first
        function = FUNCTIONS.get(name)
        if function is None:
            raise Uncomputable(f"the function {name} is not supported by the built-in evaluator")
        values = [self.eval(arg, sheet, depth) for arg in args]
        try:
            return function(*values)
        except TypeError:
            raise Uncomputable(f"{name} was given the wrong number of arguments ({len(args)})") from None

    def _if(self, args: list[Any], sheet: str, depth: int) -> Any:
        if not 1 <= len(args) <= 3:
            return VALUE
        condition = _truth(_scalar(self.eval(args[0], sheet, depth)))
        if isinstance(condition, ExcelError):
            return condition
        if condition:
            return _scalar(self.eval(args[1], sheet, depth)) if len(args) > 1 else True
        return _scalar(self.eval(args[2], sheet, depth)) if len(args) > 2 else False

    def reference(self, ref: Ref, sheet: str, depth: int) -> Any:
        target = ref.sheet or sheet
        if target not in self.sheet_names:
            return REF
        min_col, min_row, max_col, max_row = ref.bounds
        if None in ref.bounds:  # whole columns (A:A) or rows (1:1) stop at the sheet's used area
            last_row, last_col = self.extent(target)
            min_col, min_row = min_col or 1, min_row or 1
            max_col, max_row = max_col or last_col, max_row or last_row
        if (max_row - min_row + 1) * (max_col - min_col + 1) > MAX_RANGE_CELLS:
            raise Uncomputable(f"the range {ref.text} has more than {MAX_RANGE_CELLS:,} cells")
        if min_row == max_row and min_col == max_col and None not in ref.bounds:
            return self.cell(target, min_row, min_col, depth)
        return Area(
            [
                [self.cell(target, r, c, depth) for c in range(min_col, max_col + 1)]
                for r in range(min_row, max_row + 1)
            ]
        )


class Area(list):
    """The values of a range, row by row."""

    def flat(self) -> Iterator[Any]:
        for row in self:
            yield from row


def _scalar(value: Any) -> Any:
    if isinstance(value, Area):
        # A range where one value is expected: Excel's implicit intersection, simplified to 1x1 ranges.
        if len(value) == 1 and len(value[0]) == 1:
            return value[0][0]
        return VALUE
    return value


def _number(value: Any) -> Any:
    if isinstance(value, ExcelError):
        return value
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip()) if value.strip() else VALUE
        except ValueError:
            return VALUE
    # Dates are serial numbers to Excel; guessing the conversion here could give a wrong value.
    raise Uncomputable(
        f"the formula uses a {type(value).__name__} value in arithmetic, which is not computed here"
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _truth(value: Any) -> Any:
    if isinstance(value, ExcelError):
        return value
    if isinstance(value, str):
        if value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        return VALUE
    number = _number(value)
    return number if isinstance(number, ExcelError) else number != 0


def _binary(op: str, left: Any, right: Any) -> Any:
    for side in (left, right):
        if isinstance(side, ExcelError):
            return side
    if op == "&":
        return _text(left) + _text(right)
    if op in ("=", "<>", "<", ">", "<=", ">="):
        return _compare(op, left, right)
    a, b = _number(left), _number(right)
    if isinstance(a, ExcelError):
        return a
    if isinstance(b, ExcelError):
        return b
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return DIV0 if b == 0 else _tidy(a / b)
    try:
        return _tidy(a**b)
    except (OverflowError, ZeroDivisionError):
        return NUM


def _tidy(value: float) -> Any:
    if isinstance(value, complex) or (isinstance(value, float) and not math.isfinite(value)):
        return NUM
    return value


def _rank(value: Any) -> tuple[int, Any]:
    # Excel orders numbers < text < logicals; text compares case-insensitively.
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, str):
        return (1, value.lower())
    return (0, value)


def _compare(op: str, left: Any, right: Any) -> Any:
    if left is None:
        left = "" if isinstance(right, str) else (False if isinstance(right, bool) else 0)
    if right is None:
        right = "" if isinstance(left, str) else (False if isinstance(left, bool) else 0)
    a, b = _rank(left), _rank(right)
    try:
        return {"=": a == b, "<>": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    except TypeError:
        return VALUE


# ----------------------------------------------------------------------------- functions


def _numbers(args: tuple[Any, ...]) -> Iterator[Any]:
    """Excel's rule for SUM and friends: numbers in ranges count, text and logicals there do not;
    typed arguments (=SUM(1,"2",TRUE)) are converted."""
    for arg in args:
        if isinstance(arg, Area):
            for value in arg.flat():
                if isinstance(value, ExcelError):
                    yield value
                elif isinstance(value, int | float) and not isinstance(value, bool):
                    yield value
        elif arg is not None:
            yield _number(arg)


def _collect(args: tuple[Any, ...]) -> list[Any] | ExcelError:
    values = list(_numbers(args))
    for value in values:
        if isinstance(value, ExcelError):
            return value
    return values


def _sum(*args: Any) -> Any:
    values = _collect(args)
    return values if isinstance(values, ExcelError) else sum(values)


def _average(*args: Any) -> Any:
    values = _collect(args)
    if isinstance(values, ExcelError):
        return values
    return sum(values) / len(values) if values else DIV0


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def function(*args: Any) -> Any:
        values = _collect(args)
        if isinstance(values, ExcelError):
            return values
        return pick(values) if values else 0

    return function


def _product(*args: Any) -> Any:
    values = _collect(args)
    return values if isinstance(values, ExcelError) else math.prod(values)


def _median(*args: Any) -> Any:
    values = _collect(args)
    if isinstance(values, ExcelError):
        return values
    if not values:
        return NUM
    values.sort()
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def _count(*args: Any) -> int:
    total = 0
    for arg in args:
        items = arg.flat() if isinstance(arg, Area) else [arg]
        total += sum(1 for v in items if isinstance(v, int | float) and not isinstance(v, bool))
    return total


def _counta(*args: Any) -> int:
    total = 0
    for arg in args:
        items = arg.flat() if isinstance(arg, Area) else [arg]
        total += sum(1 for v in items if v is not None and v != "")
    return total


def _countblank(*args: Any) -> int:
    return sum(1 for arg in args for v in (arg.flat() if isinstance(arg, Area) else [arg]) if v in (None, ""))


def _round_with(mode: str) -> Callable[..., Any]:
    def function(value: Any, digits: Any = 0) -> Any:
        number, places = _number(_scalar(value)), _number(_scalar(digits))
        if isinstance(number, ExcelError) or isinstance(places, ExcelError):
            return number if isinstance(number, ExcelError) else places
        exponent = Decimal(1).scaleb(-int(places))
        rounded = Decimal(repr(number)).quantize(exponent, rounding=mode)
        result = float(rounded)
        return int(result) if int(places) <= 0 and result.is_integer() else result

    return function


def _unary(fn: Callable[[float], Any]) -> Callable[..., Any]:
    def function(value: Any) -> Any:
        number = _number(_scalar(value))
        if isinstance(number, ExcelError):
            return number
        try:
            return _tidy(fn(number))
        except (ValueError, OverflowError):
            return NUM

    return function


def _mod(a: Any, b: Any) -> Any:
    x, y = _number(_scalar(a)), _number(_scalar(b))
    if isinstance(x, ExcelError) or isinstance(y, ExcelError):
        return x if isinstance(x, ExcelError) else y
    return DIV0 if y == 0 else x - y * math.floor(x / y)


def _logical(combine: Callable[..., bool]) -> Callable[..., Any]:
    def function(*args: Any) -> Any:
        values = []
        for arg in args:
            for value in arg.flat() if isinstance(arg, Area) else [arg]:
                if value is None or (isinstance(value, str) and isinstance(arg, Area)):
                    continue
                truth = _truth(value)
                if isinstance(truth, ExcelError):
                    return truth
                values.append(truth)
        return combine(values) if values else VALUE

    return function


def _not(value: Any) -> Any:
    truth = _truth(_scalar(value))
    return truth if isinstance(truth, ExcelError) else not truth


def _text_fn(fn: Callable[..., Any]) -> Callable[..., Any]:
    def function(*args: Any) -> Any:
        values = [_scalar(a) for a in args]
        for value in values:
            if isinstance(value, ExcelError):
                return value
        return fn(*values)

    return function


def _concat(*args: Any) -> Any:
    parts = []
    for arg in args:
        for value in arg.flat() if isinstance(arg, Area) else [arg]:
            if isinstance(value, ExcelError):
                return value
            parts.append(_text(value))
    return "".join(parts)


def _criterion(criterion: Any) -> Callable[[Any], bool]:
    """The matcher for a COUNTIF/SUMIF criterion: 5, ">3", "<>x", "apple" (case-insensitive)."""
    criterion = _scalar(criterion)
    if not isinstance(criterion, str):
        return lambda v: _compare("=", v, criterion) is True
    match = re.match(r"^(<=|>=|<>|<|>|=)?(.*)$", criterion, re.S)
    op, operand = match[1] or "=", match[2]
    try:
        target: Any = float(operand)
    except ValueError:
        target = operand
    if isinstance(target, str) and op in ("=", "<>") and any(ch in target for ch in "*?"):
        pattern = re.compile(
            "^" + re.escape(target).replace(r"\*", ".*").replace(r"\?", ".") + "$", re.I | re.S
        )
        return lambda v: (pattern.match(_text(v)) is not None) == (op == "=")
    if isinstance(target, float):
        return lambda v: (
            isinstance(v, int | float) and not isinstance(v, bool) and _compare(op, v, target) is True
        )
    return lambda v: isinstance(v, str) and _compare(op, v, target) is True


def _if_family(kind: str) -> Callable[..., Any]:
    def function(area: Any, criterion: Any, values: Any = None) -> Any:
        if not isinstance(area, Area):
            area = Area([[area]])
        matcher = _criterion(criterion)
        source = values if isinstance(values, Area) else area
        picked = [
            v
            for cell, v in zip(area.flat(), source.flat(), strict=False)
            if matcher(cell) and isinstance(v, int | float) and not isinstance(v, bool)
        ]
        if kind == "count":
            return sum(1 for cell in area.flat() if matcher(cell))
        if kind == "sum":
            return sum(picked)
        return sum(picked) / len(picked) if picked else DIV0

    return function


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "SUM": _sum,
    "AVERAGE": _average,
    "MIN": _extreme(min),
    "MAX": _extreme(max),
    "COUNT": _count,
    "COUNTA": _counta,
    "COUNTBLANK": _countblank,
    "PRODUCT": _product,
    "MEDIAN": _median,
    "ROUND": _round_with(ROUND_HALF_UP),
    "ROUNDUP": _round_with(ROUND_UP),
    "ROUNDDOWN": _round_with(ROUND_DOWN),
    "INT": _unary(math.floor),
    "ABS": _unary(abs),
    "SQRT": _unary(math.sqrt),
    "EXP": _unary(math.exp),
    "LN": _unary(math.log),
    "POWER": lambda a, b: _binary("^", _scalar(a), _scalar(b)),
    "MOD": _mod,
    "AND": _logical(all),
    "OR": _logical(any),
    "NOT": _not,
    "TRUE": lambda: True,
    "FALSE": lambda: False,
    "PI": lambda: math.pi,
    "LEN": _text_fn(lambda s: len(_text(s))),
    "UPPER": _text_fn(lambda s: _text(s).upper()),
    "LOWER": _text_fn(lambda s: _text(s).lower()),
    "TRIM": _text_fn(lambda s: " ".join(_text(s).split())),
    "LEFT": _text_fn(lambda s, n=1: _text(s)[: int(_number(n))]),
    "RIGHT": _text_fn(lambda s, n=1: _text(s)[-int(_number(n)) :] if int(_number(n)) else ""),
    "MID": _text_fn(
        lambda s, start, n: _text(s)[int(_number(start)) - 1 : int(_number(start)) - 1 + int(_number(n))]
    ),
    "CONCATENATE": _concat,
    "CONCAT": _concat,
    "COUNTIF": _if_family("count"),
    "SUMIF": _if_family("sum"),
    "AVERAGEIF": _if_family("average"),
}
