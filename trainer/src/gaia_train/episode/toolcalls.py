"""Tool calls as Qwen3 / Hermes models write them, and as OpenAI-compatible servers return them.

`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, any number per turn. Every block
the model opened becomes a `ToolCall`; one that cannot be read carries an `error` that is sent
back to the model as that call's result, so a malformed call is never silently dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_BLOCK_RE = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
_SHOW_CHARS = 200


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = "{}"
    error: str | None = None
    """Why the call cannot run; None for a well-formed call."""

    def to_message(self) -> dict[str, Any]:
        """The OpenAI `tool_calls` entry for the assistant message that made this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.raw_arguments},
        }


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SHOW_CHARS else text[:_SHOW_CHARS] + "..."


def _from_object(call_id: str, payload: Any, raw: str) -> ToolCall:
    if not isinstance(payload, dict):
        return ToolCall(
            call_id,
            "invalid_tool_call",
            raw_arguments=raw,
            error=f'A tool call must be a JSON object like {{"name": ..., "arguments": {{...}}}}; got {_shorten(raw)}',
        )
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        return ToolCall(
            call_id,
            "invalid_tool_call",
            raw_arguments=raw,
            error=f'The tool call has no "name" string: {_shorten(raw)}',
        )
    return parse_arguments(call_id, name, payload.get("arguments", {}))


def parse_arguments(call_id: str, name: str, arguments: Any) -> ToolCall:
    """Arguments may arrive as an object or as a JSON string holding one (OpenAI's wire form)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    if isinstance(arguments, str):
        if not arguments.strip():
            arguments = {}
        else:
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                return ToolCall(
                    call_id,
                    name,
                    raw_arguments=raw,
                    error=f"The arguments of {name} are not valid JSON ({exc.msg} at position {exc.pos}): {_shorten(raw)}",
                )
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ToolCall(
            call_id,
            name,
            raw_arguments=raw,
            error=f"The arguments of {name} must be a JSON object of parameter names and values, got {_shorten(raw)}",
        )
    return ToolCall(call_id, name, arguments, raw)


def parse_tool_calls(text: str, id_prefix: str) -> list[ToolCall]:
    """Every `<tool_call>` block in `text`, in order, each parsed or carrying its error."""
    calls = []
    for index, match in enumerate(_BLOCK_RE.finditer(text)):
        call_id = f"{id_prefix}{index}"
        body, closing = match.group(1), match.group(2)
        if not closing:
            calls.append(
                ToolCall(
                    call_id,
                    "invalid_tool_call",
                    raw_arguments=body,
                    error="The tool call was not closed with </tool_call>; write the whole call, then stop.",
                )
            )
            continue
        try:
            payload = json.loads(body)
        except json.JSONDecodeError as exc:
            calls.append(
                ToolCall(
                    call_id,
                    "invalid_tool_call",
                    raw_arguments=body,
                    error=f"The tool call is not valid JSON ({exc.msg} at position {exc.pos}): {_shorten(body)}",
                )
            )
            continue
        calls.append(_from_object(call_id, payload, body))
    return calls


def strip_tool_calls(text: str) -> str:
    """The text without its `<tool_call>` blocks (they travel as structured `tool_calls`)."""
    return _BLOCK_RE.sub("", text).strip()
