"""Structured results: the data behind a tool's text answer, for clients that read JSON.

    @server.tool(annotations=..., output=Listing)
    def list_things(...) -> CallToolResult:
        ...
        return with_data(text, Listing(entries=...))

The text stays exactly what the tool always answered (agents read it); `structuredContent` carries
the same facts as data, and the tool's `outputSchema` (from `output=`) says their shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from mcp_types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents
from pydantic import BaseModel


def with_data(text: str, data: BaseModel | Mapping[str, Any]) -> CallToolResult:
    """A result with `text` for the model and `data` as its structuredContent."""
    content = data.model_dump(mode="json", by_alias=True) if isinstance(data, BaseModel) else dict(data)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=content)


def json_result(data: Mapping[str, Any], *, indent: int = 2, ensure_ascii: bool = True) -> CallToolResult:
    """A tool whose text answer is JSON: that JSON for the model, the same object as structuredContent."""
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    return with_data(text, json.loads(text))


def rewritten(result: Any, rewrite: Callable[[str], str]) -> Any:
    """`result` (a CallToolResult; anything else passes) with `rewrite` applied to every text in it:
    text blocks, embedded text resources and the strings of structuredContent."""
    if not isinstance(result, CallToolResult):
        return result
    for block in result.content:
        if isinstance(block, TextContent):
            block.text = rewrite(block.text)
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            block.resource.text = rewrite(block.resource.text)
    if result.structured_content is not None:
        result.structured_content = _each_string(result.structured_content, rewrite)
    return result


def _each_string(value: Any, rewrite: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, dict):
        return {key: _each_string(item, rewrite) for key, item in value.items()}
    if isinstance(value, list):
        return [_each_string(item, rewrite) for item in value]
    return value
