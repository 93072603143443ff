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
from collections.abc import Mapping
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel


def with_data(text: str, data: BaseModel | Mapping[str, Any]) -> CallToolResult:
    """A result with `text` for the model and `data` as its structuredContent."""
    content = data.model_dump(mode="json", by_alias=True) if isinstance(data, BaseModel) else dict(data)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=content)


def json_result(data: Mapping[str, Any], *, indent: int = 2, ensure_ascii: bool = True) -> CallToolResult:
    """A tool whose text answer is JSON: that JSON for the model, the same object as structuredContent."""
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    return with_data(text, json.loads(text))
