"""Tool input schemas as KitServer publishes them: what strict converters need, same meaning."""

from __future__ import annotations

import json

import pytest
from gaia_kit import KitServer
from gaia_kit.core.schemas import strict_input_schema
from mcp import Client
from pydantic import BaseModel, Field


class Edit(BaseModel):
    old: str
    new: str = Field(description="replacement")


def make_server() -> KitServer:
    server = KitServer("schemas-test")

    @server.tool()
    def capabilities() -> str:
        return "none"

    @server.tool()
    def edit(path: str, edits: list[Edit], first: Edit | None = None) -> str:
        return f"{path}: {len(edits)} edits, first {first}"

    return server


@pytest.mark.anyio
async def test_published_schemas_have_no_refs_and_close_parameterless_tools() -> None:
    async with Client(make_server()) as client:
        tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        # Arguments still validate against the nested model after inlining.
        done = await client.call_tool("edit", {"path": "a", "edits": [{"old": "x", "new": "y"}]})
    assert tools["capabilities"] == {
        "type": "object",
        "properties": {},
        "title": "capabilitiesArguments",
        "required": [],
        "additionalProperties": False,
    }
    assert "$ref" not in json.dumps(tools["edit"]) and "$defs" not in tools["edit"]
    assert tools["edit"]["properties"]["edits"]["items"]["properties"]["new"]["description"] == "replacement"
    assert done.content[0].text == "a: 1 edits, first None"


def test_a_reference_keeps_its_own_description_over_the_definition() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/X", "description": "the x"}},
        "$defs": {"X": {"type": "object", "description": "an X", "properties": {"a": {"type": "string"}}}},
    }
    assert strict_input_schema(schema) == {
        "type": "object",
        "properties": {
            "x": {"type": "object", "description": "the x", "properties": {"a": {"type": "string"}}}
        },
    }


def test_a_recursive_model_is_refused_with_a_sentence() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"$ref": "#/$defs/N"}},
    }
    with pytest.raises(ValueError, match="cannot be inlined"):
        strict_input_schema(schema)
