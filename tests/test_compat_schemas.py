"""Every reference tool of every server we ship keeps its name, parameters, types and defaults."""

from __future__ import annotations

import pytest
from gaia_env.registry import load_registry
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from gaia_kit_testing.gateway import RunningGateway

SHIPPED = [sid for sid, spec in load_registry().items() if spec.enabled and sid in REFERENCE]


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
