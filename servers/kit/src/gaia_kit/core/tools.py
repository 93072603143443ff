"""Tools defined apart from their server, so a server with many tools keeps them in modules by area
and its server.py reads as the table of contents:

    # reading.py
    @tool(hints("Read text file", read_only=True, open_world=False))
    def read_text_file(path: str, ctx: Context) -> str: ...

    # server.py
    add_tools(server, [reading.read_text_file, writing.write_file, ...])

The list gives tools/list its order. The function stays reachable as `.fn`, to call in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcp_types import ToolAnnotations

from gaia_kit.core.server import KitServer


@dataclass(frozen=True)
class Tool:
    """A tool function and how it is published: its hints and, for a structured result, its schema."""

    fn: Callable[..., Any]
    annotations: ToolAnnotations
    output: Any = None
    name: str | None = None
    """The published name, when it is not the function's (an alias)."""
    description: str | None = None
    """The published description, when it is not the function's docstring."""


def tool(annotations: ToolAnnotations, *, output: Any = None) -> Callable[[Callable[..., Any]], Tool]:
    """Define a tool; `output` (a pydantic model or type) publishes its structured result's schema."""

    def define(fn: Callable[..., Any]) -> Tool:
        return Tool(fn, annotations, output)

    return define


def add_tools(server: KitServer, tools: Iterable[Tool]) -> None:
    """Register each tool on `server`, in order."""
    for each in tools:
        server.add_tool(
            each.fn,
            name=each.name,
            description=each.description,
            annotations=each.annotations,
            output=each.output,
        )
