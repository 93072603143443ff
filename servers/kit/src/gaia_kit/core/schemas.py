"""Tool input schemas that strict converters accept as they are.

Agent frameworks turn each tool's inputSchema into an OpenAI "strict" function schema
(openai-agents' `ensure_strict_json_schema`, pydantic-ai's OpenAI transformer, the Inspector's
`--strict`). They give up on a tool whose schema has a `$ref` they cannot follow, or an object that
does not say it admits no other keys, and then serve it non-strict or not at all. Pydantic writes
both: nested models as `$defs` + `$ref`, and a tool without parameters as a bare object.
"""

from __future__ import annotations

from typing import Any

_DEFS_PREFIX = "#/$defs/"


def strict_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema with every `$ref` inlined (no `$defs` left), and `additionalProperties: false`
    with `required: []` on a tool that takes no parameters (the call accepts no keys, so the schema
    says so; pydantic-ai sends a tool strict only when `required` is there)."""
    defs = schema.get("$defs", {})
    inlined = {key: _inline(value, defs, ()) for key, value in schema.items() if key != "$defs"}
    if inlined.get("type") == "object" and not inlined.get("properties"):
        inlined.setdefault("properties", {})
        inlined.setdefault("required", [])
        inlined["additionalProperties"] = False
    return inlined


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
        name = ref.removeprefix(_DEFS_PREFIX)
        if name in seen or name not in defs:
            # A recursive model cannot be written out in full; no tool argument here is one.
            raise ValueError(f"tool schema refers to {ref}, which cannot be inlined (recursive or missing)")
        # The referring node's own keys (a description, a default) win over the definition's.
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return _inline({**defs[name], **siblings}, defs, (*seen, name))
    return {key: _inline(value, defs, seen) for key, value in node.items()}
