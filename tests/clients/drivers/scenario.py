"""What every client does against the gateway, and the record it prints (tests/test_clients.py reads it).

Each client writes a file and reads it back through the tool objects its framework gives a user,
then makes a call with an argument of the wrong type, and lists the whole catalog.
"""

from __future__ import annotations

from typing import Any

FILE = "notes.txt"
CONTENT = "written by an MCP client through the session URL"
WRITE, READ = "write_file", "read_text_file"
# `head` is a number: a string is a validation error the model can fix.
WRONG_TYPE = {"path": FILE, "head": "ten"}


def write_args() -> dict[str, Any]:
    return {"path": FILE, "content": CONTENT}


def read_args() -> dict[str, Any]:
    return {"path": FILE}


def tool_named(names: list[str], short: str) -> str:
    """The served name of a tool: plain, or prefixed with its server where names collide."""
    for name in names:
        if name == short or name.endswith("__" + short):
            return name
    raise LookupError(f"no tool {short!r} among {len(names)} tools")


def record(*, tools: int, read_back: str, error: str, error_as: str) -> dict[str, Any]:
    """read_back and error: the text the model is shown; error_as: how it arrives (a result, a
    retry prompt, an exception the framework raises)."""
    return {"tools": tools, "read_back": read_back, "error": error, "error_as": error_as}
