"""What every client does against the gateway, and the record it prints (tests/test_clients.py reads it).

Each client writes a file and reads it back through the tool objects its framework gives a user,
then makes a call with an argument of the wrong type, and lists the whole catalog.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

SCENARIO = tomllib.loads(Path(__file__).with_name("scenario.toml").read_text())
FILE, CONTENT = SCENARIO["file"], SCENARIO["content"]
WRITE, READ = SCENARIO["write"], SCENARIO["read"]
WRONG_TYPE: dict[str, Any] = SCENARIO["wrong_type"]


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
