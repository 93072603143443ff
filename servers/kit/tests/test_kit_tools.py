"""Tools defined in modules by area and registered from a list: order, hints, output, aliases."""

from __future__ import annotations

import pytest
from gaia_kit import KitServer
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from gaia_kit.core.tools import Tool, add_tools, tool
from mcp import Client
from mcp_types import CallToolResult
from pydantic import BaseModel


class Sum(BaseModel):
    total: int


@tool(hints("Add", read_only=True, open_world=False), output=Sum)
def add(a: int, b: int) -> CallToolResult:
    """Add two numbers."""
    return with_data(str(a + b), Sum(total=a + b))


@tool(hints("Shout", read_only=True, open_world=False))
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def test_a_defined_tool_keeps_its_function_callable() -> None:
    assert isinstance(shout, Tool)
    assert shout.fn("hi") == "HI"
    assert shout.annotations.title == "Shout"


@pytest.mark.anyio
async def test_add_tools_publishes_them_in_order_as_the_server_decorator_would() -> None:
    alias = Tool(
        shout.fn, hints("Yell", read_only=True, open_world=False), name="yell", description="Old name."
    )
    listed = KitServer("listed")
    add_tools(listed, [shout, add, alias])
    decorated = KitServer("decorated")
    decorated.tool(annotations=shout.annotations)(shout.fn)
    decorated.tool(annotations=add.annotations, output=Sum)(add.fn)

    async with Client(listed) as client:
        tools = (await client.list_tools()).tools
        called = await client.call_tool("add", {"a": 2, "b": 3})
    async with Client(decorated) as client:
        expected = (await client.list_tools()).tools

    assert [t.name for t in tools] == ["shout", "add", "yell"]
    assert tools[:2] == expected
    assert (tools[2].title, tools[2].description) == ("Yell", "Old name.")
    assert called.structured_content == {"total": 5}
