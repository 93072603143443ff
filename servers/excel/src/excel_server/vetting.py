"""Vetting a formula before it is written: refused functions, sheets the workbook lacks, syntax.

The first two are read from its tokens (parsing.py); syntax is the formula engine's word (engine.py).
"""

from __future__ import annotations

from gaia_kit import ToolFailure
from openpyxl.formula.tokenizer import Token

from .engine import syntax_error
from .parsing import references, tokens, vet


def check(formula: str, sheet_names: list[str]) -> list[Token]:
    """Vet a formula about to be written: syntax, refused functions and unknown sheets are errors."""
    items = tokens(formula)
    refusal = vet(items)
    if refusal is not None:
        raise ToolFailure(refusal[0].upper() + refusal[1:])
    known = {name.upper() for name in sheet_names}
    for ref in references(items):
        if ref is not None and ref.sheet is not None and ref.sheet.upper() not in known:
            raise ToolFailure(
                f"The formula refers to a sheet named '{ref.sheet}', which this workbook does not have "
                f"(its sheets: {', '.join(sheet_names)})."
            )
    problem = syntax_error(formula)
    if problem is not None:
        raise ToolFailure(f"The formula {'=' + formula.strip().removeprefix('=')} is malformed: {problem}.")
    return items
