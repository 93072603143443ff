"""The tools listing: built once per selection and catalog version, in the forms both fronts send."""

from __future__ import annotations

import json
from pathlib import Path

from gaia_env.gateway import Gateway, GatewayConfig
from gaia_env.registry import ServerSpec


def gateway(tmp_path: Path) -> Gateway:
    specs = {sid: ServerSpec(id=sid, command=("true",), replicas=1) for sid in ("a", "b")}
    built = Gateway(specs, GatewayConfig(workspace_root=tmp_path / "ws", dataset_dir=tmp_path))
    for sid, names in {"a": ["read", "only_a"], "b": ["read"]}.items():
        pool = built.pools[sid]
        pool.tools = [{"name": n, "inputSchema": {"type": "object"}} for n in names]
        pool.tools_version += 1
    return built


def test_one_listing_per_selection_and_version_with_its_json_bytes(tmp_path: Path) -> None:
    gw = gateway(tmp_path)
    both = gw.listing(("a", "b"))
    assert gw.listing(("a", "b")) is both
    assert json.loads(both.json) == {"tools": both.tools}
    assert [t.name for t in both.result.tools] == ["a__read", "only_a", "b__read"]
    assert both.result is both.result  # the SDK's model, built once on first use
    assert gw.listing(("b",)).tools == [{"name": "read", "inputSchema": {"type": "object"}}]
    gw.pools["b"].tools_version += 1  # a replica came back with new tools
    assert gw.listing(("a", "b")) is not both
