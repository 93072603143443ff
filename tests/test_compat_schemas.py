"""Every reference tool of every server we ship keeps its name, parameters, types and defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gaia_env.registry import load_registry
from gateway_harness import RunningGateway

REFERENCE = json.loads((Path(__file__).parent / "reference" / "aworld_tool_schemas.json").read_text())
SHIPPED = [sid for sid, spec in load_registry().items() if spec.enabled and sid in REFERENCE]


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


@pytest.mark.parametrize("server_id", SHIPPED)
def test_reference_tools_are_served_compatibly(real_gateway: RunningGateway, server_id: str) -> None:
    reply = real_gateway.rpc("tools/list", headers={"MCP_SERVERS": server_id}).json()
    ours = {tool["name"]: tool for tool in reply["result"]["tools"]}
    missing = [t["name"] for t in REFERENCE[server_id] if t["name"] not in ours]
    assert not missing, f"{server_id} lacks {missing}"
    problems = {
        tool["name"]: issues
        for tool in REFERENCE[server_id]
        if (issues := compatibility_problems(tool["inputSchema"], ours[tool["name"]]["inputSchema"]))
    }
    assert not problems, problems


def test_the_checker_catches_incompatibilities() -> None:
    reference = {
        "properties": {
            "path": {"type": "string"},
            "n": {"type": "number", "default": 3},
            "mode": {"enum": ["a", "b"], "default": "a"},
        },
        "required": ["path"],
    }
    assert compatibility_problems(reference, reference) == []
    renamed = {"properties": {"file": {"type": "string"}}, "required": ["file"]}
    assert any("missing parameter path" in p for p in compatibility_problems(reference, renamed))
    retyped = {**reference, "properties": {**reference["properties"], "path": {"type": "integer"}}}
    assert any("path: types" in p for p in compatibility_problems(reference, retyped))
    redefaulted = {
        **reference,
        "properties": {**reference["properties"], "n": {"type": "number", "default": 4}},
    }
    assert any("n: default" in p for p in compatibility_problems(reference, redefaulted))
    narrowed = {
        **reference,
        "properties": {**reference["properties"], "mode": {"enum": ["a"], "default": "a"}},
    }
    assert any("mode: values" in p for p in compatibility_problems(reference, narrowed))
    widened = {
        **reference,
        "properties": {
            **reference["properties"],
            "extra": {"type": "string", "default": ""},
            "mode": {"enum": ["a", "b", "c"], "default": "a"},
        },
    }
    assert compatibility_problems(reference, widened) == []
