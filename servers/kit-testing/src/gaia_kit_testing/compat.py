"""The tool schemas existing GAIA agents were trained against (reference/, data from the AWorld
project under the MIT License: reference/README.md), and the check that ours accept the same calls."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

REFERENCE: dict[str, list[dict[str, Any]]] = json.loads(
    resources.files(__package__).joinpath("reference", "aworld_tool_schemas.json").read_text()
)
"""server id -> its tools, each with name, description and inputSchema."""


def json_types(prop: dict[str, Any]) -> set[str]:
    if "type" in prop:
        kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        return set(kinds) - {"null"}
    if "anyOf" in prop:
        return set().union(*(json_types(p) for p in prop["anyOf"]))
    if "const" in prop:
        return {type(prop["const"]).__name__.replace("str", "string")}
    return set()


def allowed_values(prop: dict[str, Any]) -> set[Any] | None:
    if "enum" in prop:
        return set(prop["enum"])
    if "const" in prop:
        return {prop["const"]}
    if "anyOf" in prop:
        parts = [allowed_values(p) for p in prop["anyOf"] if p.get("type") != "null"]
        return set().union(*parts) if parts and all(p is not None for p in parts) else None
    return None


def compatibility_problems(reference: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    problems = []
    ref_props, our_props = reference.get("properties", {}), ours.get("properties", {})
    if set(reference.get("required", [])) != set(ours.get("required", [])):
        problems.append(
            f"required {sorted(reference.get('required', []))} != {sorted(ours.get('required', []))}"
        )
    for name, ref in ref_props.items():
        mine = our_props.get(name)
        if mine is None:
            problems.append(f"missing parameter {name}")
            continue
        ref_types, my_types = json_types(ref), json_types(mine)
        if "number" in my_types:
            my_types = my_types | {"integer"}
        if not ref_types <= my_types:
            problems.append(f"{name}: types {sorted(ref_types)} not accepted by {sorted(my_types)}")
        if ref.get("default") != mine.get("default"):
            problems.append(f"{name}: default {ref.get('default')!r} != {mine.get('default')!r}")
        ref_values, my_values = allowed_values(ref), allowed_values(mine)
        if ref_values is not None and my_values is not None and not ref_values <= my_values:
            problems.append(f"{name}: values {sorted(ref_values)} not all accepted by {sorted(my_values)}")
    return problems
