"""Formula text: its tokens, the references in it, and what must never be computed or stored.

openpyxl's tokenizer splits a formula into functions, references and operators; that is enough
to refuse what reaches outside the workbook (the network, links, other workbooks, references
built at run time) and to find the cells a formula reads. Syntax and computing belong to the
`formulas` engine (engine.py); vetting.py puts the two together before a formula is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gaia_kit import ToolFailure
from openpyxl.formula.tokenizer import Token, Tokenizer, TokenizerError
from openpyxl.utils.cell import column_index_from_string

# Functions that fetch from the network, open links, call code, or read places a formula names
# at run time (so a vetted formula could still reach any cell or file).
REFUSED = {
    "WEBSERVICE",
    "FILTERXML",
    "HYPERLINK",
    "RTD",
    "INDIRECT",
    "CALL",
    "REGISTER",
    "REGISTER.ID",
    "DDE",
    "DGET",
    "IMAGE",
    "EXEC",
}


_PART = re.compile(r"^(\$?)([A-Za-z]{0,3})(\$?)(\d*)$")


@dataclass(frozen=True)
class Ref:
    """A reference: its sheet (None: the formula's own), bounds (min_col, min_row, max_col,
    max_row; None for an open side, as in A:A) and which of those are absolute ($)."""

    sheet: str | None
    bounds: tuple[int | None, int | None, int | None, int | None]
    absolute: tuple[bool, bool, bool, bool]
    text: str

    @classmethod
    def parse(cls, area: str, sheet: str | None, text: str | None = None) -> Ref:
        """'A1', '$B$2:C9', 'A:A', '2:3' -> Ref; ValueError if it is none of those."""
        first, _, last = area.partition(":")
        a, b = _part(first), _part(last or first)
        if (a[1] is None) != (b[1] is None) or (a[3] is None) != (b[3] is None):
            raise ValueError(area)
        if a[1] is None and a[3] is None:
            raise ValueError(area)
        bounds = (_low(a[1], b[1]), _low(a[3], b[3]), _high(a[1], b[1]), _high(a[3], b[3]))
        return cls(sheet, bounds, (a[0], a[2], b[0], b[2]), text or area)

    @property
    def key(self) -> tuple[str | None, tuple]:
        return (self.sheet.upper() if self.sheet is not None else None, self.bounds)

    def relative(self, row: int, col: int) -> str:
        """This reference seen from cell (row, col): absolute parts as they are, relative ones as offsets."""
        origin = (col, row, col, row)
        parts = [
            "*" if value is None else (f"${value}" if fixed else f"~{value - base}")
            for value, fixed, base in zip(self.bounds, self.absolute, origin, strict=True)
        ]
        return f"{(self.sheet or '').upper()}!{','.join(parts)}"


def _part(text: str) -> tuple[bool, int | None, bool, int | None]:
    match = _PART.match(text)
    if match is None or not (match[2] or match[4]):
        raise ValueError(text)
    column = column_index_from_string(match[2].upper()) if match[2] else None
    return bool(match[1]), column, bool(match[3]), int(match[4]) if match[4] else None


def _low(a: int | None, b: int | None) -> int | None:
    return None if a is None else min(a, b)


def _high(a: int | None, b: int | None) -> int | None:
    return None if a is None else max(a, b)


_REF = re.compile(r"^(?:(?P<sheet>'(?:[^']|'')+'|[^'!:\[\]]+)!)?(?P<area>[^!]+)$")
# A range written as Sheet!A1:Sheet!B2 names its sheet twice; the engine reads that as two refs.
_SECOND_SHEET = re.compile(r":(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!")


def tokens(formula: str) -> list[Token]:
    """The tokens of `formula` (leading '=' optional); ToolFailure if it is malformed. Whitespace
    tokens stay (a space between ranges is Excel's intersection operator): render() rejoins them."""
    text = formula.strip()
    if not text:
        raise ToolFailure("The formula is empty; pass something like =SUM(A1:A3).")
    if not text.startswith("="):
        text = "=" + text
    try:
        items = Tokenizer(text).items
    except (TokenizerError, ValueError, IndexError) as exc:  # bare errors on e.g. an unclosed quote
        raise ToolFailure(f"The formula {text} is malformed ({exc}).") from None
    if all(item.type == Token.WSPACE for item in items):
        raise ToolFailure(f"The formula {text} has nothing after '='.")
    for item in items:
        if item.type == Token.OPERAND and item.subtype == Token.RANGE:
            item.value = _SECOND_SHEET.sub(":", item.value)
    return items


def render(items: list[Token]) -> str:
    return "=" + "".join(item.value for item in items)


def function_names(items: list[Token]) -> list[str]:
    """The functions a formula calls, upper case, without the _xlfn. prefix files store."""
    return [
        item.value[:-1].upper().removeprefix("_XLFN.").removeprefix("_XLWS.")
        for item in items
        if item.type == Token.FUNC and item.subtype == Token.OPEN
    ]


def references(items: list[Token]) -> list[Ref | None]:
    """One entry per reference token: its Ref, or None for a defined name or table."""
    found: list[Ref | None] = []
    for item in items:
        if item.type != Token.OPERAND or item.subtype != Token.RANGE:
            continue
        match = _REF.match(item.value)
        ref = None
        if match is not None and "[" not in item.value:
            sheet = match["sheet"]
            if sheet is not None and sheet.startswith("'"):
                sheet = sheet[1:-1].replace("''", "'")
            try:
                ref = Ref.parse(match["area"], sheet, item.value)
            except ValueError:
                ref = None
        found.append(ref)
    return found


def vet(items: list[Token]) -> str | None:
    """Why this formula must not be computed or stored, or None when it may."""
    for name in function_names(items):
        if name in REFUSED:
            return (
                f"{name} is not allowed: it reaches outside the workbook (network, links, code or "
                "references built at run time). Use a direct cell or range reference instead."
            )
    for item in items:
        if item.type == Token.OPERAND and item.subtype == Token.RANGE and "[" in item.value:
            return (
                f"the formula refers to another workbook or a table ({item.value}); only references "
                "inside this workbook are allowed."
            )
    return None
