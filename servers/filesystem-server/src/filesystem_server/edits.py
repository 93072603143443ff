"""Exact-text edits with a whitespace-tolerant fallback, and the unified diff they produce."""

from __future__ import annotations

import difflib
import re

from gaia_kit import ToolFailure
from pydantic import BaseModel, ConfigDict, Field

_INDENT = re.compile(r"^[ \t]*")


class EditOperation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    oldText: str = Field(description="Text to search for - must match exactly")
    newText: str = Field(description="Text to replace with")


def apply_edits(content: str, edits: list[EditOperation]) -> tuple[str, list[str]]:
    """Apply the edits in order to `content` (LF line endings); return the result and any notes."""
    text = content
    notes: list[str] = []
    for number, edit in enumerate(edits, 1):
        old = edit.oldText.replace("\r\n", "\n")
        new = edit.newText.replace("\r\n", "\n")
        if not old:
            raise ToolFailure(f"Edit {number} has an empty oldText; give the exact text to replace.")
        occurrences = text.count(old)
        if occurrences:
            text = text.replace(old, new, 1)
            if occurrences > 1:
                notes.append(
                    f"Edit {number}: oldText occurs {occurrences} times; only the first occurrence was "
                    "replaced. Include more surrounding lines to target another one."
                )
            continue
        replaced = _replace_ignoring_indentation(text, old, new)
        if replaced is None:
            shown = edit.oldText if len(edit.oldText) <= 500 else edit.oldText[:500] + "..."
            raise ToolFailure(
                f"Could not find exact match for edit {number}; no file was changed. Read the file and "
                f"copy the exact lines to replace. oldText was:\n{shown}"
            )
        text = replaced
    return text, notes


def _replace_ignoring_indentation(text: str, old: str, new: str) -> str | None:
    """Match `old` line by line ignoring leading/trailing whitespace, re-indenting `new` to fit."""
    if old.endswith("\n") and new.endswith("\n"):
        old, new = old[:-1], new[:-1]
    lines = text.split("\n")
    wanted = [line.strip() for line in old.split("\n")]
    span = len(wanted)
    for i in range(len(lines) - span + 1):
        if all(lines[i + j].strip() == wanted[j] for j in range(span)):
            # Agents often get the indentation of a whole block wrong by a constant amount: shift the
            # new text by the difference between the file's indentation and the one they wrote.
            old_base = _INDENT.match(old.split("\n")[0]).group()
            file_base = _INDENT.match(lines[i]).group()
            replacement = []
            for line in new.split("\n"):
                if not line.strip():
                    replacement.append(line)
                elif line.startswith(old_base):
                    replacement.append(file_base + line[len(old_base) :])
                else:
                    replacement.append(file_base + line.lstrip())
            lines[i : i + span] = replacement
            return "\n".join(lines)
    return None


def unified_diff(original: str, modified: str, name: str) -> str:
    """A git-style diff, fenced with enough backticks that the diff itself cannot close the fence."""
    diff_lines = difflib.unified_diff(
        original.splitlines(keepends=True),
        modified.splitlines(keepends=True),
        fromfile=name,
        tofile=name,
        fromfiledate="original",
        tofiledate="modified",
    )
    parts = []
    for line in diff_lines:
        parts.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    diff = "".join(parts) or "(no changes)\n"
    fence = "```"
    while fence in diff:
        fence += "`"
    return f"{fence}diff\n{diff}{fence}\n"
